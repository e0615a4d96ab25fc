"""``rtgate kcidb``: a gate run as one KCIDB report, judged again as the publisher judges it.

The verdicts are ``rtgate publish``'s: each board's results re-judged with the default branch's
budgets (``publish.judge_artifacts``), a pull request's A/B rounds re-decided with the plan of
its run context. The builds come from the records kept with the results (``builds/FLAVOR/``);
the run's names (pull request, commit) from the run context the gate's trusted plan job wrote,
never from a result.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from rtgate import __version__, inputfile, paths
from rtgate.board.spec import kind_of, load_board
from rtgate.errors import Exit, InputError
from rtgate.gate.thresholds import flavor_of, load_thresholds, thresholds_file
from rtgate.gate.verdict import Infra
from rtgate.jsonfile import write_output
from rtgate.kcidb import document
from rtgate.kcidb.document import ABSummary, BoardRun, Build, Submitter
from rtgate.kcidb.send import Endpoint, SendOutcome, send
from rtgate.kernel import record
from rtgate.layout import RUNNING
from rtgate.outcome import worst_outcome
from rtgate.publish.context import load_context
from rtgate.publish.judge import ARTIFACT_PREFIX, judge_artifacts, judge_run
from rtgate.publish.judgement import BoardJudgement
from rtgate.publish.judgement import kind_of as outcome_of

# Published build files: the .config and the log's tail, as text (the site serves .txt as
# text/plain, never as a page).
PUBLISHED = {record.CONFIG: "config.txt", record.LOG: "build.log.txt"}


@dataclass(frozen=True)
class KcidbSettings:
    runs: tuple[Path, ...]
    """gate-BOARD artifact directories, or one run directory with ``board``."""
    out: Path
    origin: str
    board: str | None = None
    """The board of a plain run directory (``rtgate pipeline --out``)."""
    flavors: tuple[str, ...] = ()
    """The flavors that run measured (default: the board's)."""
    run_id: str | None = None
    context: Path | None = None
    thresholds: Path | None = None
    boards: Path | None = None
    scenarios: tuple[str, ...] = ()
    run_url: str | None = None
    site_url: str | None = None
    files: Path | None = None
    """Where to publish the builds' .config and log for the report to link (under
    ``files_url``)."""
    files_url: str | None = None
    repository_url: str | None = None
    commit: str | None = None
    send: Endpoint | None = None
    """Send the report there once written (the publisher on the default branch only)."""


def _https(url: str | None, option: str) -> str | None:
    if url is not None and not (url.startswith("https://") or url.startswith("http://")):
        raise InputError(f"{option} {url!r}: expected an http(s) URL")
    return url


def kcidb(s: KcidbSettings) -> Exit:
    """Write the report (and send it); exit 0 once it is written and valid (and accepted or
    queued), whatever the verdicts say (the verdict is `rtgate publish`'s exit); 1 the endpoint
    rejected it; 2 bad input; 3 not delivered (token refused, endpoint unreachable)."""
    if not document.ORIGIN.fullmatch(s.origin):
        raise InputError(f"--origin {s.origin!r}: a KCIDB origin is [a-z0-9_]+ (the name "
                         "KernelCI gave the lab)")
    if s.files is not None and s.files_url is None:
        raise InputError("--files needs --files-url (where they are served)")
    for url, option in ((s.run_url, "--run-url"), (s.site_url, "--site-url"),
                        (s.files_url, "--files-url"), (s.repository_url, "--repository-url")):
        _https(url, option)
    if s.board is not None and len(s.runs) != 1:
        raise InputError("--board names the board of ONE run directory")
    if s.board is None and s.flavors:
        raise InputError("--flavors goes with --board (a gate's artifacts: the board's flavors)")
    thresholds = load_thresholds(thresholds_file(s.thresholds))
    boards_root = s.boards or paths.require(paths.BOARDS, "--boards DIR")
    context = load_context(s.context)[0] if s.context else None
    scenarios = list(s.scenarios) or (context.scenarios if context else None) or None
    if s.board is not None:
        judged = [(judge_run(s.runs[0], s.board, thresholds, boards_root, scenarios,
                             list(s.flavors) or None), s.runs[0])]
    else:
        if context is not None and not context.kernel_inputs_changed:
            raise InputError("the run context says nothing was measured (no kernel input "
                             "changed): there is no report to make", path=s.context)
        expected = context.boards if context else None
        judgement = judge_artifacts(list(s.runs), thresholds, boards_root, expected, scenarios,
                                    context.ab if context else None,
                                    by_kind=context is not None
                                    and context.event == "workflow_run")
        by_name = {d.name.removeprefix(ARTIFACT_PREFIX): d for d in s.runs}
        judged = [(b, by_name.get(b.name, Path(f"{ARTIFACT_PREFIX}{b.name}")))
                  for b in judgement.boards]
    commit = s.commit or (context.head_sha if context else None)
    run_id = s.run_id or os.environ.get("GITHUB_RUN_ID") or _run_id_of(judged)
    sub = Submitter(origin=s.origin, run_id=run_id, tool_version=__version__, commit=commit,
                    pull_request=context.pull_request if context else None,
                    run_url=s.run_url, site_url=s.site_url, files_url=s.files_url,
                    repository_url=s.repository_url)
    boards = [_board(b, root, boards_root) for b, root in judged]
    doc = document.render(boards, sub)
    try:
        document.validate(doc)
    except RuntimeError as exc:
        raise InputError(str(exc)) from exc
    except ValueError as exc:
        # A document we made that KCIDB would refuse is our bug: never written as if valid.
        raise InputError(f"{exc}", path=s.out) from exc
    if s.files is not None:
        _publish_files(boards, s.files)
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    write_output(s.out, text)
    kind = worst_outcome({outcome_of(b.outcomes) if b.ab is None else b.kind
                          for b, _ in judged})
    said: dict[str, object] = {"kcidb": str(s.out), "checkouts": len(doc["checkouts"]),
                               "builds": len(doc["builds"]), "tests": len(doc["tests"]),
                               "issues": len(doc.get("issues", [])), "outcome": kind.value}
    code = Exit.OK
    if s.send is not None:
        # Polling takes up to --status-wait: say so while it runs (stderr; stdout is the JSON).
        with Console(stderr=True).status("sending the report, then polling its status"):
            sent = send(text.encode(), s.send)
        said |= {"sent": sent.delivery.value, "submission": sent.submission,
                 "message": sent.message}
        code = SENT_EXIT[sent.delivery]
    print(json.dumps(said))
    return code


SENT_EXIT = {SendOutcome.ACCEPTED: Exit.OK, SendOutcome.QUEUED: Exit.OK,
             SendOutcome.REJECTED: Exit.BUDGET, SendOutcome.UNDELIVERED: Exit.INCOMPLETE}


def _run_id_of(judged: list[tuple[BoardJudgement, Path]]) -> str:
    """A run id when none is given (a local run): the digest of its results' run ids, so that
    the same run makes the same ids."""
    ids = sorted(o.result.run_id for b, _ in judged for o in b.outcomes if o.result)
    return "local-" + document.digest(*ids)[:16] if ids else "local"


def _board(b: BoardJudgement, root: Path, boards_root: Path) -> BoardRun:
    spec = load_board(b.instance or b.name, boards_root)
    # The default branch's board file says; "auto" (the local board) is what its runs detected.
    # A result claiming virtual only ever adds the label, never removes it.
    virtual = spec.virtual is True or any(o.result.board.virtual for o in b.outcomes
                                          if o.result)
    ab = (ABSummary(b.ab.outcome, b.ab.why, b.ab.pairs, b.ab.infra) if b.ab is not None
          else None)
    # A/B: the candidate's builds (B/builds/); a pipeline: builds/.
    home = root / ("B" if b.ab is not None else "") / record.BUILDS
    flavors = {flavor_of(o.result) if o.result else o.flavor if isinstance(o, Infra) else RUNNING
               for o in b.outcomes}
    return BoardRun(name=b.name, instance=b.instance or b.name, kind=kind_of(spec),
                    virtual=virtual, root=root, rulings=b.outcomes,
                    # A board that measures its running kernel built none: nothing to look for.
                    builds={f: _build(home, f) if spec.kernel_target else Build(f, None)
                            for f in flavors}, ab=ab)


def _build(home: Path, flavor: str) -> Build:
    directory = home / flavor
    if not os.path.lexists(directory / record.METADATA):
        return Build(flavor, None, "no build record in the run's directory "
                                   f"({record.BUILDS}/{flavor}/{record.METADATA})")
    try:
        rec = record.load(directory)
    except InputError as exc:
        return Build(flavor, None, exc.oneline())
    files = tuple(PUBLISHED[n] for n in (record.CONFIG, record.LOG)
                  if (directory / n).is_file() and not (directory / n).is_symlink())
    return Build(flavor, rec, files=files)


def _publish_files(boards: list[BoardRun], out: Path) -> None:
    """Each build's .config and log tail under OUT/builds/<build>/, as the report links them."""
    for board in boards:
        home = board.root / ("B" if board.ab is not None else "") / record.BUILDS
        for flavor, build in board.builds.items():
            if build.record is None:
                continue
            dest = out / "builds" / document.files_dir(build.record)
            dest.mkdir(parents=True, exist_ok=True)
            for name, published in PUBLISHED.items():
                src = home / flavor / name
                if src.is_file() and not src.is_symlink():
                    (dest / published).write_bytes(_tail(src))


def _tail(path: Path) -> bytes:
    """A kept file, its last LOG_TAIL bytes at most (a log's error is at its end)."""
    size = inputfile.check_regular(path)
    with inputfile.open_regular(path, inputfile.RAW) as f:
        if size > record.LOG_TAIL:
            f.seek(size - record.LOG_TAIL)
        return f.read(record.LOG_TAIL)
