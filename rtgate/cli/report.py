"""``rtgate report`` (the results site) and ``rtgate compare`` (the PR comment table)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rtgate import paths
from rtgate.cli.args import add_thresholds_option, percent, rate, runs_at_least_one
from rtgate.errors import InputError
from rtgate.report import site
from rtgate.report.history import CLOCK_SKEW
from rtgate.report.make import CompareSettings, SiteSettings, make_comparison, make_site
from rtgate.report.provenance import OPTIONS

REPORT_EPILOG = f"""\
RESULT_OR_DIR: result files, or directories searched for result.json and NAME.result.json.
Published with each: the raw tool outputs named in its sources, as text (NAME.txt), of these
types only: {", ".join(sorted(site.RAW_TYPES))}.
A JUnit report is never republished, and no symbolic link next to a result is followed (noted
on stderr; a result.json that is one is an input error).

With --history DIR the runs are first merged into that history store (idempotent by run id,
never dropping older runs; corrupt index lines are set aside in index.corrupt.jsonl) and the
site shows every run in it, in the order they were published: each run added gets the next
number of the history's publication sequence, the provenance stated above, and its digest (the
budget and verdict of that day, kernel, each thread's numbers, log-binned histogram). The store
keeps every index line for ever, the raw outputs of the newest 100 runs of a board × flavor ×
scenario and their results of the newest 400. The site shows the newest --full-runs of each in
full; every run is in the long-term views and the CSV/JSON downloads.
A result whose start is more than {CLOCK_SKEW.total_seconds() / 60:g} minutes in the future \
(allowed clock skew) is refused:
nothing is merged or written, exit 2.

Runs that measured nothing (the pipeline's infra.json records below a directory given) are
listed on the index page, those whose kernel under test crashed (the record's line found in its
evidence file beside it) apart from the lab's failures; they never enter the history.

A bisect (`rtgate bisect`'s bisect.json, given or below a directory given) gets a page linked
from the index: its outcome and culprit as the bisect recorded them, the evidence of each step,
and the steps' ab.json and ab.md (as text) found below its directory. Bisects are published
from the inputs given, never stored in the history.

exit codes: 0 the site was written (whatever the verdicts: `rtgate check` is the gate),
  1 the site was written and shows runs whose kernel under test crashed (and none the lab
  failed), 2 usage or input error (unreadable result or thresholds file, a start in the
  future, bad provenance), 3 the site was written but shows runs that failed in the lab
  (infrastructure), or gnuplot failed.
"""

COMPARE_EPILOG = """\
BASELINE and CANDIDATE are result.json files or directories of them, each result one ROUND (one
boot and run). The table pairs runs by board, flavor and scenario (the newest run of each); its
verdict is the candidate's budget verdict. The A/B column and section decide, per board × flavor
× scenario, from every complete round of each side, by the gate's rule (docs/statistics.md) as
ONE fixed-size look, not the gate's sequential looks: the primary metric (the board kind's
calibration record's, else block-max p90, p99.9, p99) tested by Student's t on the per-round
logs (its standard error floored as the rule floors it) and, beside it, the stall test (blocks
over the record's stall threshold, else A's first rounds' q99, per round; exact permutation
test). same: the primary metric's ratio B/A lies within ×(1 + margin) either way (a 10 % margin
is [0.909, 1.1]) and no more stalls; worse: its interval lies wholly above 1, or the candidate
has more stall blocks; better: wholly below 1; unknown: measure more. The effect reported is the
primary metric's ratio B/A (geometric means over rounds) with its interval. Alpha: the rate over
keys (Bonferroni), each key's split 3/4 tail test, 1/4 stall test.

The minimum effect and the rate come from the matching budget's `ab: {min_effect_pct, alpha}` in
thresholds.yml (the smallest alpha of the budgets involved), or from the options; a key with
neither is not compared. A budget's min_samples applies to each side's rounds together.

exit codes: 0 every key is same or better, 1 some key is worse (a regression),
  2 usage or input error, 4 undecided: no key worse but some unknown or not compared (measure
  more rounds; never an infrastructure failure). The outputs are written in every case but 2.
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "report", help="render results (and their history) as a static site with plots",
        description="Render a static HTML site with gnuplot plots from results.",
        epilog=REPORT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*", type=Path, metavar="RESULT_OR_DIR")
    p.add_argument("--history", type=Path, metavar="DIR",
                   help="history store to merge the runs into and to publish")
    add_thresholds_option(p, optional=True)
    p.add_argument("--out", type=Path, required=True, metavar="SITE_DIR",
                   help="where the site is written (re-used: unchanged plots are not redrawn)")
    p.add_argument("--full-runs", type=runs_at_least_one, default=site.FULL_RUNS, metavar="N",
                   help="the newest N runs of each board × flavor × scenario get their own "
                        "page, histogram and raw files; older ones live on in the long-term "
                        f"views and downloads (default {site.FULL_RUNS})")
    p.add_argument("--calibration", type=Path, default=paths.CALIBRATION, metavar="DIR",
                   help="the boards' calibration records, DIR/<kind>.json "
                        "(default: bench/calibration)")
    prov = p.add_argument_group(
        "provenance (with --history)",
        "Recorded with each run added to the history and shown on its pages: from these "
        "options, else from GITHUB_RUN_ID, GITHUB_SERVER_URL/GITHUB_REPOSITORY and GITHUB_SHA "
        "when set; never from the results. A job triggered by workflow_run passes the "
        "triggering run's id and head SHA.")
    for field, option in OPTIONS.items():
        prov.add_argument(option.flag, dest=field, metavar=field.split("_")[-1].upper(),
                          help=option.help)
    p.set_defaults(func=report_handler)

    c = subparsers.add_parser(
        "compare", help="A/B test two sets of rounds; before/after Markdown table (PR comment)",
        description="Before/after table of avg, max and p99.99 per board × flavor × scenario, "
                    "and the A/B decision: same, worse, better or unknown.",
        epilog=COMPARE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("baseline", type=Path, metavar="BASELINE")
    c.add_argument("candidate", type=Path, metavar="CANDIDATE")
    c.add_argument("--markdown", type=Path, metavar="OUT.md", help="the table and decisions")
    c.add_argument("--json", type=Path, metavar="OUT.json",
                   help="the decisions, effects and tests as JSON (schema rtgate/compare/v2)")
    c.add_argument("--min-effect-pct", type=percent, metavar="PCT",
                   help="minimum effect worth reporting, every key (overrides ab.min_effect_pct)")
    c.add_argument("--alpha", type=rate, metavar="RATE",
                   help="false-alarm rate of the whole comparison (overrides ab.alpha)")
    add_thresholds_option(c, optional=True)
    c.set_defaults(func=compare_handler)


def report_handler(args: argparse.Namespace) -> int:
    if not args.inputs and not args.history:
        raise InputError("rtgate report: give results or --history DIR (or both)")
    provenance = {field: getattr(args, field) for field in OPTIONS}
    if not args.history and any(v is not None for v in provenance.values()):
        raise InputError("rtgate report: provenance is recorded in a history: give --history")
    return int(make_site(SiteSettings(inputs=tuple(args.inputs), out=args.out,
                                      history=args.history, thresholds=args.thresholds,
                                      provenance=provenance, full_runs=args.full_runs,
                                      calibration=args.calibration)))


def compare_handler(args: argparse.Namespace) -> int:
    if args.markdown is None and args.json is None:
        raise InputError("rtgate compare: give --markdown OUT.md, --json OUT.json or both")
    return int(make_comparison(CompareSettings(
        baseline=args.baseline, candidate=args.candidate, markdown=args.markdown, json=args.json,
        min_effect_pct=args.min_effect_pct, alpha=args.alpha, thresholds=args.thresholds)))
