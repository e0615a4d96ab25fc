"""A run's digest (summary.RunDigest): made once, when the run enters the history, so that the
long-term views of years of runs never open a result file again."""

from __future__ import annotations

from rtgate.report import bins
from rtgate.report.judge import Judge, Judged
from rtgate.report.runs import RunFiles
from rtgate.report.summary import RunDigest, RunSummary, ThreadNumbers


def digest(run: RunFiles, judged: Judged) -> RunDigest:
    result = run.result
    threads = [t.histogram for t in result.threads if t.histogram is not None]
    # rtla's bins may be wider than 1 µs: each is counted at its lower edge, as bins.rebin
    # does with cyclictest's.
    hist = bins.merge(bins.rebin(h.buckets) for h in threads)
    overflows = sum(h.overflows for h in threads)
    limit = max((h.limit_us for h in threads), default=None)
    if overflows and limit is not None:
        edge = bins.lower_edge(limit)
        hist[edge] = hist.get(edge, 0) + overflows
        hist = dict(sorted(hist.items()))
    return RunDigest(
        kernel_version=result.kernel.version, verdict=judged.verdict,
        budget=dict(judged.lines()), budget_label=judged.budget.label if judged.budget else None,
        hist=list(hist.items()), overflows=overflows, limit_us=limit,
        threads=[ThreadNumbers(thread=t.thread, cpu=t.cpu, samples=t.samples, min_us=t.min_us,
                               avg_us=t.avg_us, max_us=t.max_us,
                               overflows=t.histogram.overflows if t.histogram else 0)
                 for t in result.threads])


def summarize(run: RunFiles, judge: Judge) -> RunSummary:
    """The run's index line, its digest judged by ``judge`` now."""
    return RunSummary.of(run.result, run.publication, digest(run, judge(run)))
