"""``rtgate parse RAW... -o result.json``: normalize cyclictest (or rtla timerlat/osnoise) output
into a result."""

from __future__ import annotations

import argparse
from pathlib import Path

from rtgate.cli.args import cycles, whole_ns, whole_us
from rtgate.errors import Exit
from rtgate.parsefiles import ParseSettings, parse_files

HELP = """Read the output files of ONE cyclictest run and write the normalized result.

Formats are detected per file: rt-tests 2.x --json, -h/-H histogram (stdout or --histfile,
rt-tests 1.x too, or only its '#' footer lines), verbose -v logs, and T: summary lines (-q, or
the live screen). Several files of the same run are merged; files that contradict each other
are refused. cyclictest's WARN: lines (stderr captured with 2>&1), lines before its output (a
file name, the shell prompt with the command: read as the command line) and a shell prompt
after it are kept as notes in the result, when the output itself is complete; so are an
author's notes in any script after the output or between its parts ('^^^ hmm' under the T:
lines, a line before '# Histogram', '-- text' after a row's counts), never among its rows or
samples. Rows the author cut ('...') fall back to the footer's totals.

A verbose log's samples are also reduced to per-thread block maxima, as `rtgate bench` records
them (blocks of one second's cycles, checked against the run's histogram: a -v log given with
the same run's --json or -h output is checked against that). The block is worked out from the
log's 'Thread N Interval' lines; with one thread they do not tell it: give --block-cycles.

rtla output is read too (one file; a prompt, indentation and rtla's trailing lines around it
are notes): `rtla timerlat hist` (any version, with or without ALL:) and the last screen of
`rtla timerlat top`, one series per CPU and context (IRQ, thread, user), the totals being the
thread context's; `rtla osnoise hist`/`top` as the tool osnoise (noise, never judged as
latency). A histogram's limit and bin width are not in its output: they come from
--timerlat-limit and --timerlat-bucket, else the rtla command in the file's prompt, else the
limit is unknown and the overflowed tail only a lower bound. Output of rtla -n/--nano keeps its
nanoseconds (its -b counts ns: --timerlat-bucket-ns). A top screen has no histogram
(no percentile) and integer averages: the result says which numbers are bounds.

exit codes: 0 written; 2 malformed or contradictory input (one line on stderr naming the file
and line; the output is not written)."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("parse", help="normalize cyclictest output into result.json",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("raw", nargs="+", type=Path, metavar="RAW", help="cyclictest output files")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="RESULT",
                   help="where to write result.json")
    p.add_argument("--board", default="unknown", help="board name (default: unknown)")
    p.add_argument("--virtual", action="store_true",
                   help="the board is a VM or emulator: its numbers are no real-time claim")
    p.add_argument("--scenario", default="unknown", help="load scenario (default: unknown)")
    p.add_argument("--flavor", default=None,
                   help="kernel flavor (default: rt or stock, from the kernel version string)")
    p.add_argument("--run-id", default=None,
                   help="run id (default: derived from board, scenario, start and the files)")
    p.add_argument("--timerlat-limit", type=whole_us, default=None, metavar="US",
                   help="rtla hist: the histogram limit, -E × -b (default: from the "
                        "prompt's rtla command, else unknown)")
    bucket = p.add_mutually_exclusive_group()
    bucket.add_argument("--timerlat-bucket", type=whole_us, default=None, metavar="US",
                        help="rtla hist: the bin width, -b (default: from the prompt, else 1 µs "
                             "when the rows prove it)")
    bucket.add_argument("--timerlat-bucket-ns", type=whole_ns, default=None, metavar="NS",
                        help="rtla hist -n (nanoseconds): the bin width -b in ns, e.g. 1 "
                             "(default: from the prompt, else 1 ns when the rows prove it)")
    p.add_argument("--block-cycles", type=cycles, default=None, metavar="N",
                   help="a -v log: cycles per block of the block maxima (default: one second "
                        "at each thread's interval, from the log's header)")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    parse_files(ParseSettings(
        raw=tuple(args.raw), output=args.output, board=args.board, virtual=args.virtual,
        scenario=args.scenario, flavor=args.flavor, run_id=args.run_id,
        timerlat_limit_us=args.timerlat_limit, timerlat_bucket_us=args.timerlat_bucket,
        timerlat_bucket_ns=args.timerlat_bucket_ns,
        block_cycles=args.block_cycles))
    return int(Exit.OK)
