"""docs/lab.md's setup guide is marked for the lab e2e (tests/labguide.py): every shell block of
"Setting up the lab" says where it runs, the e2e runs those it can in the order written
(tests/e2e/test_lab_ansible.py checks its steps against these before it boots anything), and
those it cannot are checked here or by the test the guide names."""

from __future__ import annotations

import re
import shlex

import yaml
from labguide import GUIDE, NEVER_HERE, ROOT, RUN_HERE, Step, steps, unmarked


def by_name() -> dict[str, Step]:
    return {s.name: s for s in steps()}


def test_every_shell_block_of_the_setup_is_marked_with_a_known_place() -> None:
    found = steps()
    assert unmarked() == []
    assert len(found) >= 10
    assert {s.where for s in found} <= set(RUN_HERE) | set(NEVER_HERE), found
    names = [s.name for s in found]
    assert len(names) == len(set(names)), names


def test_a_mark_without_its_block_or_a_block_without_a_mark_is_found() -> None:
    page = ("# t\n\n## Setting up the lab\n\n<!-- lab: runner a -->\n```sh\necho a\n```\n\n"
            "```sh\necho b\n```\n\n   <!-- lab: github c -->\n   ```sh\n   echo c \\\n     d\n"
            "   ```\n\n## Next\n\n```sh\necho outside\n```\n")
    got = steps(page)
    assert [(s.where, s.name, s.text) for s in got] == [("runner", "a", "echo a\n"),
                                                       ("github", "c", "echo c \\\n  d\n")]
    assert got[0].line == 5 and got[1].line == 14
    assert unmarked(page) == ["echo b\n"]
    assert got[1].with_changes({"c d": "c e"}) == "echo c e\n"
    try:
        got[0].with_changes({"echo z": "x"})
    except AssertionError as exc:
        assert "docs/lab.md:5 (a)" in str(exc)
    else:
        raise AssertionError("a change the block does not hold was applied")


def test_the_order_is_the_order_an_admin_can_follow() -> None:
    """Inventory before the playbook, the board files' merge before the checks that read them,
    kernels before the runs, the runner stopped around the calibration."""
    names = [s.name for s in steps()]
    order = ["inventory", "playbook", "boards", "merged", "doctor", "kernels", "first-run",
             "calibration-stop", "calibrate", "calibration-start", "calibration-pr"]
    assert [n for n in names if n in order] == order


def test_the_board_names_are_the_example_inventorys() -> None:
    inventory = yaml.safe_load((ROOT / "lab" / "inventory.example.yml").read_text())
    pis = set(inventory["all"]["children"]["pis"]["hosts"])
    text = " ".join(s.text for s in steps())
    named = set(re.findall(r"\brpi5-[a-z]\b", text))
    assert named and named <= pis, (named, pis)
    controller = next(iter(inventory["all"]["children"]["controllers"]["hosts"]))
    assert f"admin@{controller}" in by_name()["calibration-pr"].text


def test_the_kernel_builds_write_where_the_runs_read() -> None:
    """The `build` step never runs here: its --out directories are what the runs' --kernels
    names (DIR/FLAVOR), for every flavor they run."""
    outs = {w[i + 1] for line in by_name()["kernels"].with_changes({}).splitlines()
            for w in [shlex.split(line)] for i, x in enumerate(w) if x == "--out"}
    for run in ("first-run", "calibrate"):
        for line in by_name()[run].with_changes({}).splitlines():
            words = shlex.split(line)
            kernels = words[words.index("--kernels") + 1]
            flavors = words[words.index("--flavors") + 1].split(",")
            assert {f"{kernels}/{f}" for f in flavors} <= outs, (run, outs)


def test_what_never_ran_on_github_or_a_pi_is_said_plainly() -> None:
    text = " ".join(GUIDE.read_text().split())
    assert "Never run on real hardware or on GitHub." in text
    assert "Nothing under \"On GitHub\" has run against GitHub" in text
    assert "Two blocks never run in the suite" in text
    assert len([s for s in steps() if s.where in NEVER_HERE]) == 2
