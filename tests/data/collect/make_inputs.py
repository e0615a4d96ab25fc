"""Writes the collect step's input run directories (tests/data/collect/*/in/): what a qemu guest,
a LAVA job and a Pi's `rtgate bench` leave on the controller, from captured cyclictest output
(tests/data/bench/cpu-blocks.*, a real 2-thread run) and the notes their scripts write.

    python tests/data/collect/make_inputs.py
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent
HELP = (DATA / "help" / "cyclictest-2.40.txt").read_text()
JSON = DATA / "bench" / "cpu-blocks.cyclictest.json"
BLOCKS = DATA / "bench" / "cpu-blocks.blocks.txt"

READBACK_RUN = "\n".join([
    "root\t4242",
    "task\t4242 4242 1 0-3 sh",
    "task\t4300 4300 4242 2-3 cyclictest",
    "task\t4300 4301 4300 3 cyclictest",
    "task\t4300 4302 4300 2 cyclictest",
    "task\t4310 4310 4242 0-1 iperf3",
    "task\t4311 4311 4242 0-2 iperf3",
]) + "\n"
READBACK_END = "\n".join([
    "cmdline\tconsole=ttyAMA0 isolcpus=3 nohz_full=3 rcu_nocbs=3 irqaffinity=0-2",
    "isolated\t3", "nohz_full\t3", "default_smp_affinity\t7",
    "rt-throttling\t-1", "timer-migration\t1",
]) + "\n"


def _files(root: Path, files: dict[str, str | Path]) -> None:
    for name, what in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(what, Path):
            shutil.copyfile(what, path)
        else:
            path.write_text(what, encoding="utf-8")


def guest(root: Path, *, early: bool) -> None:
    """raw/, meta/ and state/ as the guest's run script sends them back (guestscript)."""
    _files(root, {
        "raw/cyclictest.json": JSON, "raw/blocks.txt": BLOCKS,
        "raw/cyclictest.stderr": "", "raw/iperf3-server.stderr": "",
        "meta/uname-a": "Linux rtgate 6.12.117-rt #1 SMP PREEMPT_RT aarch64 GNU/Linux\n",
        "meta/uname-r": "6.12.117-rt\n", "meta/uname-v": "#1 SMP PREEMPT_RT\n",
        "meta/uname-m": "aarch64\n", "meta/cmdline": "console=ttyAMA0 rdinit=/init\n",
        "meta/realtime": "", "meta/nproc": "4\n", "meta/isolated": "3\n",
        "meta/cyclictest-help": HELP, "meta/stress-ng-version": "stress-ng, version 0.18.06\n",
        "meta/iperf3-version": "iperf 3.16 (cJSON 1.7.15)\n",
        "state/cyclictest-rc": "0\n", "state/reducer-rc": "0\n", "state/measured-s": "3\n",
        "state/loadavg-before": "0.10 0.20 0.30 1/80 99\n",
        "state/loadavg-after": "1.50 0.60 0.40 2/81 140\n",
        "state/iperf3-server.start": "101.25 40.00\n",
        "state/tuning-run": READBACK_RUN,
    })
    if early:
        _files(root, {"state/iperf3-server.early": "1 103.75\n"})
    (root / "console.log").write_text("RTGATE-READY\n", encoding="utf-8")


def pi(root: Path) -> None:
    """raw/ the controller pulled, and the board's own result kept as its claims."""
    _files(root, {"raw/cyclictest.json": JSON, "raw/blocks.txt": BLOCKS,
                  "raw/cyclictest.stderr": "", "tuning-run.txt": READBACK_RUN})
    claimed = json.loads((DATA / "report" / "local" / "stock-cpu" / "result.json").read_text())
    claimed["status"] = "degraded"
    claimed["reasons"] = ["load 'iperf3-server' exited early with status 1 after 2.0 s "
                          "(see raw/iperf3-server.stderr)"]
    claimed["loads"] = [{"name": "iperf3-server", "command": ["iperf3", "-s"],
                         "exit_status": 1, "early_exit": True}]
    claimed["environment"]["max_temp_c"] = 58.4
    claimed["environment"]["max_temp_zone"] = "thermal_zone0 cpu-thermal"
    (root / "bench-claims.json").write_text(json.dumps(claimed, indent=2) + "\n")


def main() -> None:
    for case in ("qemu-net-tuned", "lava-cpu", "rpi5-net"):
        shutil.rmtree(HERE / case / "in", ignore_errors=True)
    guest(HERE / "qemu-net-tuned" / "in", early=True)
    guest(HERE / "lava-cpu" / "in", early=False)
    pi(HERE / "rpi5-net" / "in")
    (HERE / "READBACK_END").write_text(READBACK_END, encoding="utf-8")


if __name__ == "__main__":
    main()
