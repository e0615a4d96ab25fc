"""The run environment is typed (rtgate.harness.environment.Environment) and written as the
JSON object result.json always held: every result file in tests/data reads into it and writes
back key for key, in the same order, so no result's bytes move."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtgate.board.rpi5.claims import CLAIMS, described
from rtgate.errors import InfraError
from rtgate.harness.environment import Environment, IrqAffinity, Throttled
from rtgate.result import load_result

DATA = Path(__file__).resolve().parents[1] / "data"
# Result files as earlier rtgate versions wrote them: local and guest runs, v1 to v3, the
# report's, the A/B rounds', the sweep's (the hostile corpus is refused before this).
OLD = sorted(p for p in DATA.rglob("*.json")
             if '"rtgate/result/v' in p.read_text(errors="replace")
             and "hostile" not in p.parts)


def test_there_are_old_files_of_every_producer() -> None:
    orders = {tuple(load_result(p).environment) for p in OLD}
    # a local run (IRQ table), a guest's (none), an emulator's of an early version, a bare one
    assert any("irq_affinity" in o for o in orders)
    assert any("tools" in o and "irq_affinity" not in o for o in orders)
    assert any("emulator" in o for o in orders)
    assert len(OLD) >= 30


@pytest.mark.parametrize("path", OLD, ids=lambda p: str(p.relative_to(DATA)))
def test_an_old_results_environment_reads_typed_and_writes_back_byte_for_byte(
        path: Path) -> None:
    result = load_result(path)
    env = Environment.of(result)
    assert list(env.written().items()) == list(result.environment.items())
    again = result.model_copy(update={"environment": env.written()})
    assert again.to_json() == result.to_json()


def test_the_fields_are_typed_the_keys_kept_in_their_order_and_new_ones_last() -> None:
    env = Environment.model_validate({"emulator": "qemu", "uname": "Linux",
                                      "irq_affinity": {"default": "f", "irqs": 3,
                                                       "by_affinity": {"0-3": 3}}})
    assert env.irq_affinity == IrqAffinity(default="f", irqs=3, by_affinity={"0-3": 3})
    assert list(env.written()) == ["emulator", "uname", "irq_affinity"]
    later = env.updated(throttled=Throttled(before="0x0", after=None), uname="Linux pi")
    assert list(later.written()) == ["emulator", "uname", "irq_affinity", "throttled"]
    assert later.written()["throttled"] == {"before": "0x0", "after": None}
    assert later.uname == "Linux pi" and env.uname == "Linux"
    # Through a raw run's JSON and back: the same keys, in the same order.
    again = Environment.model_validate_json(later.model_dump_json())
    assert again == later and list(again.written()) == list(later.written())
    with pytest.raises(ValueError, match="cpus_online"):
        Environment.model_validate({"cpus_online": "many"})


def test_a_boards_own_environment_of_the_wrong_type_is_an_infrastructure_failure(
        tmp_path: Path) -> None:
    claimed = load_result(DATA / "report" / "local" / "stock-cpu" / "result.json")
    env = described("pi", tmp_path, claimed)
    assert env.kernel_release == claimed.environment["kernel_release"]
    forged = claimed.model_copy(update={"environment": {
        **claimed.environment, "loadavg_before": "low"}})
    with pytest.raises(InfraError, match=r"environment\.loadavg_before") as caught:
        described("pi", tmp_path, forged)
    assert caught.value.path == str(tmp_path / CLAIMS)
