"""Scenario files: validation with file and line, placeholders, and the argv a plan renders."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtgate.cyclictest.version import parse_help
from rtgate.errors import InputError
from rtgate.harness.environment import preempt_rt
from rtgate.harness.loads import free_port, listening
from rtgate.harness.plan import Params, make_plan, render, timeout_for
from rtgate.harness.scenario import list_scenarios, load_scenario

HELP = Path(__file__).parents[1] / "data" / "help" / "cyclictest-2.40.txt"
PARAMS = Params(cpus=4, port=5201, tmpdir="/tmp/scratch", scale=0.1, timeout_s=99)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.yml"
    path.write_text(text)
    return path


def test_shipped_scenarios_all_load() -> None:
    names = {s.name for s in list_scenarios()}
    assert {"idle", "cpu", "vm", "io", "net", "all-in"} <= names


def test_all_in_is_the_paper_at_scale_one() -> None:
    scenario, source = load_scenario("all-in")
    params = Params(cpus=4, port=5201, tmpdir="/t", scale=scenario.scale, timeout_s=3900)
    plan = make_plan(scenario, source, parse_help(HELP.read_text()), duration_s=3600,
                     params=params, outdir="/o")
    stress, server, client = plan.loads
    assert stress.argv[:3] == ["stress-ng", "--all", "1"]
    assert server.listens_on == 5201
    assert client.argv[client.argv.index("--parallel") + 1] == "100"
    assert client.argv[client.argv.index("--window") + 1] == "64K"


def test_placeholders_render_with_scale() -> None:
    assert render("{scaled:100}", PARAMS) == "10"
    assert render("{scaled:1}", PARAMS) == "1"  # never below one instance
    assert render("--temp-path={tmpdir} -p {port} x{cpus} {timeout} s{scale}", PARAMS) == \
        "--temp-path=/tmp/scratch -p 5201 x4 99 s0.1"


def test_loads_outlive_the_measurement() -> None:
    scenario, _ = load_scenario("cpu")
    assert timeout_for(scenario, 10) > scenario.warmup_s + 10


def test_net_plan_with_real_help() -> None:
    scenario, source = load_scenario("net")
    plan = make_plan(scenario, source, parse_help(HELP.read_text()), duration_s=5,
                     params=PARAMS, outdir="/o/raw")
    assert [ld.name for ld in plan.loads] == ["iperf3-server", "iperf3-client"]
    assert plan.loads[1].argv[plan.loads[1].argv.index("--parallel") + 1] == "1"
    assert plan.cyclictest.argv[-1] == "--duration=5"
    assert plan.cyclictest.json_path == "/o/raw/cyclictest.json"


@pytest.mark.parametrize("body, needle, line", [
    ("name: bad\ndescription: d\nlaods: []\n", "laods: unknown key (typo?)", 3),
    ("name: bad\ndescription: d\nloads:\n  - name: a\n    argv: [x]\n    agrv: [y]\n",
     "loads.0.agrv: unknown key", 6),
    ("name: bad\ndescription: d\ncyclictest:\n  histogram: 400\n",
     "cyclictest.histogram: unknown key", 4),
    ("name: bad\ndescription: d\nloads:\n  - name: a\n    argv: [stress-ng, '{cpu}']\n",
     "unknown placeholder {cpu}", 5),
    ("name: bad\ndescription: d\nloads:\n  - {name: a, argv: [x]}\n  - {name: a, argv: [y]}\n",
     "duplicate load name(s): a", 3),
    ("name: bad\ndescription: d\nscale: 0\n", "scale: Input should be greater than 0", 3),
    ("name: bad\ndescription: d\nwarmup_s: soon\n", "warmup_s: Input should be a valid", 3),
    ("name: bad\ndescription: d\nloads:\n  - name: Big Name\n    argv: [x]\n",
     "loads.0.name: String should match pattern", 4),
    ("name: bad\ndescription: d\nloads:\n  - {name: a, argv: [x], listens_on: '{tmpdir}'}\n",
     "loads.0.listens_on", 4),
    ("name: other\ndescription: d\n", "name 'other' does not match the file name", 1),
    ("name: bad\ndescription: [unclosed\n", "not valid YAML", None),
    ("name: bad\nname: bad\ndescription: d\n", "duplicate key 'name'", 2),
])
def test_bad_scenario_names_file_and_line(tmp_path: Path, body: str, needle: str,
                                          line: int | None) -> None:
    path = _write(tmp_path, "bad", body)
    with pytest.raises(InputError) as err:
        load_scenario(str(path))
    text = err.value.oneline()
    assert text.startswith(f"{path}:")
    assert needle in text
    if line is not None:
        assert text.startswith(f"{path}:{line}: ")


def test_unknown_scenario_lists_the_known_ones() -> None:
    with pytest.raises(InputError, match=r"no such scenario 'cpuu' \(known: .*cpu.*\)"):
        load_scenario("cpuu")


def test_preempt_rt_from_uname_v_when_sys_kernel_realtime_is_absent() -> None:
    assert preempt_rt("#1 SMP PREEMPT_RT Thu Jan  2 10:00:00 UTC 2025", None)
    assert not preempt_rt("#1 SMP PREEMPT_DYNAMIC @0", None)
    assert preempt_rt("#1 SMP PREEMPT", "1")


def test_listening_reads_proc_net_tcp() -> None:
    import socket

    port = free_port()
    assert not listening(port)
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        assert listening(port)
