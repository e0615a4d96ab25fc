"""JUnit XML for CI dashboards: one testsuite per result file, one testcase per budgeted metric.

Failures are exceeded budgets; errors are checks that could not be judged (incomplete result,
unreadable file, no budget); skipped marks a result allowed to have no budget.
"""

from __future__ import annotations

import re
from typing import Any

from junit_xml import TestCase, TestSuite, to_xml_report_string

from rtgate.gate.thresholds import flavor_of
from rtgate.gate.verdict import Crash, Evaluation, Infra, Ruling, Unjudged, Verdict
from rtgate.result import Result
from rtgate.trace import explain as explain_trace

# What XML 1.0 cannot hold at all, not even as &#N;: most C0 controls, lone surrogates, U+FFFE/F.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def render(outcomes: list[Ruling]) -> str:
    suites = [_evaluation(o) if isinstance(o, Evaluation) else _crash(o) if isinstance(o, Crash)
              else _infra(o) if isinstance(o, Infra) else _unjudged(o) for o in outcomes]
    return to_xml_report_string([_xml_safe(s) for s in suites], prettyprint=True)


def _xml_safe(value: Any) -> Any:
    """``value`` with every string in it XML can hold, the rest as U+FFFD.

    Result strings (kernel release, scenario, reasons) come from files a board or a PR wrote;
    junit_xml escapes such characters as character references its own parser then rejects, and
    a regression would be reported as a crash. Walks junit_xml's suites and cases whole, so no
    field is missed.
    """
    if isinstance(value, str):
        return _NOT_XML.sub("\ufffd", value)
    if isinstance(value, list):
        return [_xml_safe(v) for v in value]
    if isinstance(value, dict):
        return {k: _xml_safe(v) for k, v in value.items()}
    if isinstance(value, TestSuite | TestCase):
        vars(value).update({k: _xml_safe(v) for k, v in vars(value).items()})
    return value


def _properties(result: Result) -> dict[str, str]:
    k = result.kernel
    return {
        "run_id": result.run_id,
        "board": result.board.name,
        "board.virtual": str(result.board.virtual).lower(),
        "flavor": flavor_of(result),
        "kernel.release": k.release or "",
        "kernel.version": k.version or "",
        "kernel.preempt_rt": "" if k.preempt_rt is None else str(k.preempt_rt).lower(),
        "scenario": result.scenario,
        "status": result.status,
        "status.reasons": "; ".join(result.reasons),
        "samples": str(result.totals.samples),
        "tool.version": result.tool.version or "",
        "tool.cmdline": result.tool.cmdline or "",
    }


def _evaluation(ev: Evaluation) -> TestSuite:
    props = _properties(ev.result) | {
        "result.file": str(ev.source), "budget": ev.budget.label,
        "budget.source": ev.budget.source, "budget.reason": ev.budget.reason}
    cases = []
    for check in ev.checks:
        case = TestCase(f"{ev.label}: {check.name}", classname=ev.label, stdout=check.detail)
        explain = (f"{check.detail}\n"
                   f"budget {ev.budget.label} ({ev.budget.source}): {ev.budget.reason}")
        if ev.result.trace is not None:
            explain += f"\n{explain_trace.paragraph(ev.result.trace)}"
        if check.verdict is Verdict.FAIL:
            case.add_failure_info(message=check.detail, output=explain)
        elif check.verdict is Verdict.INCOMPLETE:
            case.add_error_info(message=check.detail, output=explain)
        cases.append(case)
    return TestSuite(f"{ev.label} [{ev.result.run_id}]", cases, properties=props)


def _unjudged(un: Unjudged) -> TestSuite:
    if un.result is None:
        case = TestCase(f"{un.source}: load", classname=str(un.source))
        case.add_error_info(message=un.message)
        return TestSuite(str(un.source), [case], properties={"result.file": str(un.source)})
    case = TestCase(f"{un.label}: no budget", classname=un.label)
    if un.allowed:
        case.add_skipped_info(message=f"{un.message} (allowed by --allow-unbudgeted)")
    else:
        case.add_error_info(message=un.message)
    props = _properties(un.result) | {"result.file": str(un.source)}
    return TestSuite(f"{un.label} [{un.result.run_id}]", [case], properties=props)


def _crash(crash: Crash) -> TestSuite:
    """A failure, not an error: the kernel under test failed, and the evidence says how."""
    case = TestCase(f"{crash.label}: kernel", classname=crash.label)
    case.add_failure_info(message=f"the kernel under test crashed: {crash.said}",
                          output=crash.message, failure_type="crash")
    return TestSuite(f"{crash.label} [crash]", [case],
                     properties={"log": str(crash.source), "crash": crash.said,
                                 "evidence": str(crash.evidence or crash.source)})


def _infra(inf: Infra) -> TestSuite:
    case = TestCase(f"{inf.label}: infrastructure", classname=inf.label)
    case.add_error_info(message=f"infrastructure failure, no latency verdict: {inf.message}",
                        error_type="infrastructure")
    return TestSuite(f"{inf.label} [infrastructure]", [case],
                     properties={"log": str(inf.source), "infrastructure": "true"})
