"""``publish``: judge a gate's artifacts, write the comment, JUnit and outcome JSON, and say
the outcome (its exit code)."""

from __future__ import annotations

from pathlib import Path

from rtgate import paths
from rtgate.errors import Exit, InputError
from rtgate.gate import junit, markdown
from rtgate.gate.thresholds import Thresholds, load_thresholds, thresholds_file
from rtgate.jsonfile import write_output
from rtgate.outcome import GATE_EXIT
from rtgate.publish.context import load_context
from rtgate.publish.judge import judge_artifacts
from rtgate.publish.judgement import Judgement, nothing_to_judge
from rtgate.publish.render import banner, outcome_json, render
from rtgate.publish.settings import PublishSettings
from rtgate.report import compare
from rtgate.report.history import runs_of
from rtgate.report.judge import Judge
from rtgate.report.runs import load_run


def exit_of(judgement: Judgement) -> Exit:
    return GATE_EXIT[judgement.kind]


def publish(settings: PublishSettings) -> Exit:
    """Judge the artifacts, write the comment (and JUnit, outcome JSON), print the outcome."""
    thresholds = load_thresholds(thresholds_file(settings.thresholds))
    boards = settings.boards or paths.require(paths.BOARDS, "--boards DIR")
    context, theirs = load_context(settings.context) if settings.context else (None, None)
    expected = list(settings.expect) or (context.boards if context else None)
    scenarios = list(settings.scenarios) or (context.scenarios if context else None) or None
    if context is not None and not context.kernel_inputs_changed:
        judged = nothing_to_judge(list(settings.artifacts))
    else:
        # A pull request's gate asks for kinds (latency-gate.yml's plan job); others for boards.
        judged = judge_artifacts(list(settings.artifacts), thresholds, boards, expected,
                                 scenarios, context.ab if context else None,
                                 by_kind=context is not None and context.event == "workflow_run")
    banner_lines = banner(context, thresholds, theirs) if context else []
    text = render(judged, banner_lines=banner_lines,
                  comparison=_comparison(settings.baseline, judged.accepted, thresholds, boards),
                  run_url=settings.run_url)
    write_output(settings.markdown, text)
    if settings.junit:
        write_output(settings.junit, junit.render(judged.outcomes))
    if settings.outcome:
        write_output(settings.outcome, outcome_json(judged) + "\n")
    print(outcome_json(judged))
    return exit_of(judged)


def _comparison(baseline: Path | None, accepted: list[Path], thresholds: Thresholds,
                boards: Path) -> str | None:
    if baseline is None:
        return None
    try:
        before = runs_of([baseline])
    except InputError as exc:
        return f"No main baseline to compare with: {markdown.code(exc.oneline())}"
    return compare.markdown(before, [load_run(p) for p in accepted], Judge(thresholds, boards))
