"""The lab file, each board's own state (directories, owners, sealing), registration names and
the backoff (rtgate.lab). The supervisor's processes are tests/integration/test_lab_runner.py."""

from __future__ import annotations

import os
import pwd
import re
import stat
import textwrap
from pathlib import Path

import pytest
import yaml
from clirun import RunCli

from rtgate.errors import InputError
from rtgate.lab import config as labconfig
from rtgate.lab import envfile, state
from rtgate.lab.cgroup import own_unit_cgroup
from rtgate.lab.runner import backoff_s, owned_by, registration_name

LAB = """\
github:
  app_id: 123456
  installation_id: 7654321
  private_key: /etc/rtgate/app.pem
  owner: lab
  repo: rtgate
runner:
  user: nobody
  state_dir: {state}
  env_dir: {env}
boards:
  rpi5: {{kind: rpi5}}
  rpi5-b: {{kind: rpi5}}
"""


def lab(tmp_path: Path, text: str = LAB) -> Path:
    path = tmp_path / "lab.yml"
    path.write_text(text.format(state=tmp_path / "srv", env=tmp_path / "etc"))
    return path


def test_the_lab_file_names_boards_labels_and_the_repository(tmp_path: Path) -> None:
    config = labconfig.load(lab(tmp_path))
    assert config.github.app_id == "123456" and config.github.group_id == 1
    assert config.labels_of("rpi5-b") == ["self-hosted", "linux", "rtgate-lab", "rpi5",
                                          "board-rpi5-b"]
    assert config.user_of("rpi5") == "nobody"
    with pytest.raises(InputError, match="no board 'rpi6' here"):
        config.board("rpi6", tmp_path / "lab.yml")


@pytest.mark.parametrize(("change", "problem"), [
    (("  repo: rtgate\n", ""), "organisation runners need the lab's runner group id"),
    (("  owner: lab\n", "  owner: lab\n  api: http://example.com\n"), "must be https://"),
    (("rpi5-b:", "-rpi5:"), "board '-rpi5'"),
    (("  installation_id: 7654321\n", ""), "github.installation_id: Field required"),
    (("runner:\n", "runner:\n  labells: [x]\n"), "runner.labells: unknown key"),
])
def test_a_bad_lab_file_is_one_line_naming_it(tmp_path: Path, change: tuple[str, str],
                                              problem: str) -> None:
    path = lab(tmp_path, LAB.replace(*change))
    with pytest.raises(InputError, match=problem) as exc:
        labconfig.load(path)
    assert str(path) in exc.value.oneline()


def test_an_organisation_with_its_group_and_a_loopback_fake_are_fine(tmp_path: Path) -> None:
    text = LAB.replace("  repo: rtgate\n", "  runner_group_id: 3\n  api: http://127.0.0.1:8080/\n")
    config = labconfig.load(lab(tmp_path, text))
    assert (config.github.repo, config.github.group_id) == (None, 3)
    assert config.github.api == "http://127.0.0.1:8080"


def test_registration_names_are_unique_and_owned_by_their_board_only() -> None:
    names = {registration_name("rpi5") for _ in range(200)}
    assert len(names) == 200
    assert all(owned_by("rpi5").fullmatch(n) for n in names)
    # Another board's, the old fixed name, a hand-registered runner: not rpi5's to remove.
    for other in ["rpi5-b-0badf00d", "rpi5", "rpi5-0badf00", "rpi5-0BADF00D", "rpi5.x-0badf00d",
                  registration_name("rpi5-b")]:
        assert not owned_by("rpi5").fullmatch(other), other
    assert owned_by("rpi5.x").fullmatch("rpi5.x-0badf00d")
    assert not owned_by("rpi5.x").fullmatch("rpi5yx-0badf00d")  # '.' is not a wildcard


def test_the_backoff_doubles_up_to_its_cap_and_jitter_only_shortens() -> None:
    assert [backoff_s(n, 5, 600, 0) for n in range(1, 10)] == [5, 10, 20, 40, 80, 160, 320,
                                                              600, 600]
    assert backoff_s(10_000, 5, 600, 0) == 600
    assert 480 <= backoff_s(9, 5, 600, 0.999) < 600


def _mode(path: Path) -> tuple[int, int, int]:
    st = os.lstat(path)
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


def test_setup_makes_each_boards_own_directories_and_env_file(tmp_path: Path) -> None:
    config = labconfig.load(lab(tmp_path))
    nobody = pwd.getpwnam("nobody")
    user = (nobody.pw_uid, nobody.pw_gid)
    for board in config.boards:
        state.prepare(config, board)
    root = tmp_path / "srv" / "rpi5"
    assert _mode(root / "jobs") == (0, 0, 0o711)
    assert _mode(root / "results") == (0, 0, 0o1733)
    assert _mode(root / "cache-main") == (*user, 0o700)
    assert _mode(root / "cache-pr") == (*user, 0o700)
    env = tmp_path / "etc" / "rpi5-b.env"
    assert _mode(env) == (0, 0, 0o644)
    assert envfile.check(env.read_text(), path=str(env)) == {
        "RTGATE_BOARD": "rpi5-b", "RTGATE_PYTHON": "/opt/rtgate/venv/bin/python",
        "RTGATE_RESULTS_DIR": str(tmp_path / "srv/rpi5-b/results"),
        "RTGATE_CACHE_MAIN": str(tmp_path / "srv/rpi5-b/cache-main"),
        "RTGATE_CACHE_PR": str(tmp_path / "srv/rpi5-b/cache-pr"),
        "RTGATE_BUILDER": "sudo -n /usr/local/sbin/rtgate-builder"}
    # Run again (an upgrade): modes repaired, contents untouched, nothing recursive.
    (root / "cache-main" / "kept").write_text("x")
    os.chown(root / "cache-main" / "kept", 0, 0)
    (root / "results").chmod(0o777)
    state.prepare(config, "rpi5")
    assert _mode(root / "results") == (0, 0, 0o1733)
    assert _mode(root / "cache-main" / "kept")[0] == 0


def test_the_playbooks_untrusted_cache_is_mounted_where_setup_makes_cache_pr() -> None:
    """The runner role (lab/roles/runner) mounts each board's untrusted cache on the directory
    `rtgate lab setup` makes and names in the runner's environment (RTGATE_CACHE_PR), under the
    lab file's state_dir (its default unless the inventory's runner_settings sets one), and
    mounts it nodev,nosuid."""
    role = Path(__file__).resolve().parents[2] / "lab" / "roles" / "runner"
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    default = str(labconfig.RunnerSetup().state_dir)
    assert defaults["runner_state_dir"] == \
        f"{{{{ runner_settings.state_dir | default('{default}') }}}}"
    unit = dict(line.split("=", 1) for line in (role / "templates" / "cache-pr.mount.j2")
                .read_text().splitlines() if "=" in line and not line.startswith("#"))
    where = unit["Where"].replace("{{ runner_state_dir }}", default).replace("{{ board }}",
                                                                            "rpi5-b")
    assert Path(where) == state.BoardState(Path(default) / "rpi5-b").cache_pr
    assert unit["Type"] == "ext4" and unit["Options"].split(",") == ["loop", "nodev", "nosuid"]


def test_setup_refuses_a_symlink_where_a_directory_belongs(tmp_path: Path) -> None:
    config = labconfig.load(lab(tmp_path))
    (tmp_path / "srv" / "rpi5").mkdir(parents=True)
    (tmp_path / "srv" / "rpi5" / "results").symlink_to("/etc")
    with pytest.raises(InputError, match="not a directory"):
        state.prepare(config, "rpi5")
    assert _mode(Path("/etc"))[2] == 0o755


def test_sealing_touches_only_this_boards_finished_runs_and_follows_no_link(
        tmp_path: Path) -> None:
    config = labconfig.load(lab(tmp_path))
    nobody = pwd.getpwnam("nobody")
    mine, other = (state.prepare(config, b).results for b in ("rpi5", "rpi5-b"))
    outside = tmp_path / "outside"
    outside.write_text("root's")
    outside.chmod(0o666)
    os.chown(outside, nobody.pw_uid, nobody.pw_gid)
    for results in (mine, other):
        run = results / "41-1" / "gate-x"
        run.mkdir(parents=True)
        (run / "result.json").write_text("{}")
        (run / "link").symlink_to(outside)
        (run / "dirlink").symlink_to(tmp_path)
        for path in [run.parent, run, run / "result.json"]:
            os.chown(path, nobody.pw_uid, nobody.pw_gid)
            path.chmod(0o777 if path.is_dir() else 0o666)
        os.chown(run / "link", nobody.pw_uid, nobody.pw_gid, follow_symlinks=False)
    done = mine / "40-1"
    done.mkdir()
    assert state.seal_results(mine) == ["41-1"]
    assert _mode(mine / "41-1") == (0, 0, 0o755)
    assert _mode(mine / "41-1" / "gate-x" / "result.json") == (0, 0, 0o644)
    assert os.lstat(mine / "41-1" / "gate-x" / "link").st_uid == 0
    # The link's target, the other board's run in progress: untouched.
    assert _mode(outside) == (nobody.pw_uid, nobody.pw_gid, 0o666)
    assert _mode(other / "41-1" / "gate-x") == (nobody.pw_uid, nobody.pw_gid, 0o777)
    assert _mode(tmp_path)[0] == 0 and state.seal_results(mine) == []


def test_the_runners_cgroups_are_under_the_units_own_only() -> None:
    """/proc/self/mounts and /proc/self/cgroup as a Debian 12 controller has them under
    systemd, and as a shell or a test has them: no cgroup of the supervisor's own."""
    mounts = ("sysfs /sys sysfs rw 0 0\n"
              "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n")
    unit = "0::/system.slice/system-rtgate\\x2drunner.slice/rtgate-runner@rpi5-b.service\n"
    assert own_unit_cgroup("rtgate-runner@rpi5-b.service", mounts, unit) == Path(
        "/sys/fs/cgroup/system.slice/system-rtgate\\x2drunner.slice/"
        "rtgate-runner@rpi5-b.service")
    assert own_unit_cgroup("rtgate-runner@rpi5.service", mounts, unit) is None
    assert own_unit_cgroup("rtgate-runner@rpi5.service", mounts,
                           "0::/user.slice/user-0.slice/session-3.scope\n") is None
    assert own_unit_cgroup("rtgate-runner@rpi5.service", "sysfs /sys sysfs rw 0 0\n",
                           unit.replace("rpi5-b", "rpi5")) is None  # cgroup v1 only


def test_the_guides_list_of_keys_is_the_lab_files_defaults() -> None:
    """docs/lab.md's YAML of the lab file's other keys is what rtgate assumes without them."""
    guide = (Path(__file__).resolve().parents[2] / "docs" / "lab.md").read_text()
    block = next(m.group(1) for m in re.finditer(r"```yaml\n(.*?)```", guide, re.S)
                 if "backoff_cap_s" in m.group(1))
    listed = yaml.safe_load(textwrap.dedent(block))
    defaults = labconfig.RunnerSetup()
    for key, value in listed["runner"].items():
        have = getattr(defaults, key)
        assert (list(have) if isinstance(have, tuple) else str(have) if isinstance(have, Path)
                else have) == value, key
    assert set(listed["runner"]) == set(labconfig.RunnerSetup.model_fields)
    app = labconfig.GitHubApp.model_fields
    assert listed["github"] == {"api": app["api"].default, "runner_group_id": 1,
                                "timeout_s": app["timeout_s"].default}


def test_the_commands_refuse_what_they_cannot_do_with_one_line(
        tmp_path: Path, rtgate_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    path = lab(tmp_path)
    proc = rtgate_cli("lab", "setup", "--config", path, "--unit-dir", tmp_path / "units", "rpi5")
    assert proc.returncode == 0, proc.stderr
    unit = (tmp_path / "units" / "rtgate-runner@.service").read_text()
    assert "ExecStart=/opt/rtgate/venv/bin/rtgate lab runner %i --config /etc/rtgate/lab.yml" \
        in unit and "Delegate=yes" in unit
    assert (tmp_path / "etc" / "rpi5.env").is_file()
    assert not (tmp_path / "etc" / "rpi5-b.env").exists()  # only the board named
    proc = rtgate_cli("lab", "runner", "rpi6", "--config", path)
    assert proc.returncode == 2 and proc.stderr.startswith(f"rtgate: {path}: no board 'rpi6'")
    proc = rtgate_cli("lab", "setup", "--config", tmp_path / "missing.yml")
    assert proc.returncode == 2 and "missing.yml" in proc.stderr
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    proc = rtgate_cli("lab", "runner", "rpi5", "--config", path)
    assert proc.returncode == 2 and "run as root" in proc.stderr
