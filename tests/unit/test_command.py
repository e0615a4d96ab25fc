"""cyclictest capabilities from real --help texts, and the command lines built from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtgate.cyclictest.command import PAPER_ARGS, CyclictestSpec, build, split_args
from rtgate.cyclictest.version import Capabilities, parse_help
from rtgate.errors import Exit, InfraError, InputError

HELP = Path(__file__).parents[1] / "data" / "help"
SOURCE = Path("bench/scenarios/x.yml")


@pytest.fixture(scope="module")
def v2() -> Capabilities:
    return parse_help((HELP / "cyclictest-2.40.txt").read_text())


@pytest.fixture(scope="module")
def v1() -> Capabilities:
    return parse_help((HELP / "cyclictest-1.00.txt").read_text())


def _build(caps: Capabilities, args: list[str] | None = None, **kw: object) -> list[str]:
    spec = CyclictestSpec() if args is None else CyclictestSpec(args=args, **kw)
    return build(spec, caps, duration_s=7, outdir="/o/raw", source=SOURCE).argv


def test_version_and_options_of_2_40(v2: Capabilities) -> None:
    assert (v2.version, v2.major, v2.minor) == ("2.40", 2, 40)
    assert v2.supports("--json") and v2.supports("--histfile") and v2.supports("-x")
    assert not v2.supports("-n") and not v2.supports("--nanosleep")
    assert v2.option("-h") is v2.option("--histogram")
    assert v2.option("-h").arg == "required"
    assert v2.option("-t").arg == "optional"  # listed twice, once with [NUM]
    assert v2.option("-m").arg == "none"
    # Words in descriptions ("options -a -t and same priority") are not options.
    assert not v2.supports("--smp=") and not v2.supports("-X")


def test_version_and_options_of_1_00(v1: Capabilities) -> None:
    assert (v1.version, v1.major) == ("1.00", 1)
    assert v1.supports("-n") and v1.supports("--nanosleep")
    assert not v1.supports("--json")


def test_help_without_version_is_an_infrastructure_error() -> None:
    with pytest.raises(InfraError) as err:
        parse_help("Usage: something else\n-a  --all  everything\n")
    assert err.value.code == Exit.INCOMPLETE


def test_paper_defaults_on_2_40(v2: Capabilities) -> None:
    """In ns (-N, issue 40): cyclictest's -h then counts 1 ns rows, a million for 1 ms, which
    only the JSON keeps (non-empty bins); the reducer bins the -v stream log-linearly."""
    cmd = build(CyclictestSpec(), v2, duration_s=7, outdir="/o/raw", source=SOURCE)
    assert cmd.argv == ["cyclictest", *PAPER_ARGS, "-v", "-q", "-N", "-h1000000",
                        "--histfile=/dev/null", "--json=/o/raw/cyclictest.json", "--duration=7"]
    assert cmd.nsecs and cmd.histfile is None and ["-v", "ns=1"] == cmd.reducer()[5:7]


def test_paper_defaults_in_microseconds_on_2_40(v2: Capabilities) -> None:
    assert _build(v2, list(PAPER_ARGS), nsecs=False) == [
        "cyclictest", *PAPER_ARGS, "-v", "-q", "-h20000", "--histfile=/o/raw/cyclictest.hist",
        "--json=/o/raw/cyclictest.json", "--duration=7"]


def test_ns_histograms_keep_under_1_ms(v2: Capabilities) -> None:
    assert "-h500000" in _build(v2, list(PAPER_ARGS), histogram_us=500)


def test_n_is_rtgates_to_set(v2: Capabilities) -> None:
    for flag in ("-N", "--nsecs"):
        with pytest.raises(InputError, match="set cyclictest.nsecs instead"):
            _build(v2, [*PAPER_ARGS, flag])


def test_paper_vmn_drops_n_with_a_note_and_keeps_one_v_on_2_40(v2: Capabilities) -> None:
    cmd = build(CyclictestSpec(args=["-vmn", "-i100", "-p99", "-t"]), v2, duration_s=3600,
                outdir="r", source=SOURCE)
    assert cmd.argv[:6] == ["cyclictest", "-m", "-i100", "-p99", "-t", "-v"]
    assert "-n" not in cmd.argv and cmd.argv.count("-v") == 1
    assert any(n.startswith("-n dropped: clock_nanosleep") for n in cmd.notes)
    # -i100: one second is 10^4 cycles; the reducer writes next to the other raw files.
    assert (cmd.blocks, cmd.block_cycles) == ("r/blocks.txt", 10_000)
    assert cmd.reducer("/g/blockmaxima.awk", awk="busybox awk") == [
        "busybox awk", "-v", "block=10000", "-v", "out=r/blocks.txt", "-v", "ns=1", "-f",
        "/g/blockmaxima.awk"]


@pytest.mark.parametrize("args, block_cycles, expected", [
    ([], None, 1000),                        # cyclictest's default interval, 1000 us
    (["--interval=250"], None, 4000),
    (["-i", "3000000"], None, 1),            # intervals beyond a second: one cycle per block
    (["-i100"], 500, 500),                   # configured
])
def test_block_cycles(v2: Capabilities, args: list[str], block_cycles: int | None,
                      expected: int) -> None:
    spec = CyclictestSpec(args=args, block_cycles=block_cycles)
    assert build(spec, v2, duration_s=1, outdir="r", source=SOURCE).block_cycles == expected


def test_n_is_kept_where_it_exists_and_json_is_noted_missing(v1: Capabilities) -> None:
    cmd = build(CyclictestSpec(args=["-mn", "-p", "80"]), v1, duration_s=5, outdir="r",
                source=SOURCE)
    assert cmd.argv[:4] == ["cyclictest", "-m", "-n", "-p80"]
    assert cmd.json_path is None and cmd.histfile == "r/cyclictest.hist"
    assert not any(a.startswith("--json") for a in cmd.argv)
    assert any("no --json" in n for n in cmd.notes)
    assert "-N" not in cmd.argv and not cmd.nsecs  # 1.00 has no -N
    assert any("measured in whole µs" in n for n in cmd.notes)


def test_long_options_and_separate_values(v2: Capabilities) -> None:
    argv = _build(v2, ["--mlockall", "--priority", "90", "--interval=200", "-a", "-t2",
                       "--policy=fifo", "-q"], histogram_us=500)
    assert argv[1:9] == ["--mlockall", "--priority=90", "--interval=200", "-a", "-t2",
                         "--policy=fifo", "-v", "-q"]
    assert "-h500000" in argv and argv.count("-q") == 1


def test_bundle_value_stops_the_bundle(v2: Capabilities) -> None:
    flags = split_args(["-mp95"], v2, SOURCE)
    assert [(f.spelling, f.value) for f in flags] == [("-m", None), ("-p", "95")]


@pytest.mark.parametrize("args, needle", [
    (["-x", "-K"], "has no option -K"),
    (["--nosuch"], "has no option --nosuch"),
    (["-mZ"], "has no option -Z"),
    (["-D", "10"], "-D is set by rtgate"),
    (["--duration=1h"], "--duration is set by rtgate"),
    (["-h400"], "set cyclictest.histogram_us"),
    (["--json=x.json"], "rtgate chooses the output files"),
    (["-o10"], "rtgate reduces the -v output to block maxima itself"),
    (["-i0"], "-i needs a whole number of microseconds >= 1, got '0'"),
    (["-p"], "-p needs a value"),
    (["--mlockall=yes"], "--mlockall takes no value"),
    (["-m", "99"], "unexpected argument '99'"),
])
def test_bad_flags_name_the_scenario_and_flag(v2: Capabilities, args: list[str],
                                              needle: str) -> None:
    with pytest.raises(InputError) as err:
        _build(v2, args)
    assert needle in str(err.value)
    assert err.value.code == Exit.INPUT
    assert err.value.oneline().startswith(f"{SOURCE}: cyclictest.args")


def test_a_2x_only_flag_on_1x_is_refused(v1: Capabilities) -> None:
    with pytest.raises(InputError, match="cyclictest 1.00 installed here has no option -x"):
        _build(v1, ["-m", "-x"])
