"""The runner supervisor as systemd runs it (`rtgate lab runner BOARD`, as root), against the
loopback fake of GitHub's REST endpoints (tests/fakegithub.py) and a runner stand-in
(tests/fakerunner/: the real runner cannot be downloaded here) that consumes the JIT config and
exits as `run.sh --jitconfig` does. The runner user is `nobody`.

Scenarios: the normal loop; kill -9 while idle, then a restart; tokens expiring mid-loop;
GitHub's error answers and a slow one, with the backoff; two boards on one controller.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fakegithub import SLOW, FakeGitHub, app_key

from rtgate.lab.github import GitHub, Scope, app_jwt
from rtgate.lab.runner import owned_by

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
STAND_IN = ROOT / "tests" / "fakerunner"
APP_ID = "123456"
INSTALLATION = 7654321
KEYS = app_key()
NOBODY = pwd.getpwnam("nobody")


def wait_for(what: str, check: Callable[[], object], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@dataclass
class Controller:
    top: Path
    fake: FakeGitHub
    config: Path

    def setup(self) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rtgate", "lab", "setup", "--config",
                               str(self.config), "--unit-dir", str(self.top / "systemd")],
                              capture_output=True, text=True, timeout=60)

    def start(self, board: str) -> Supervisor:
        log = self.top / f"{board}.{time.monotonic_ns()}.log"
        with log.open("w") as sink:
            proc = subprocess.Popen([sys.executable, "-m", "rtgate", "lab", "runner", board,
                                     "--config", str(self.config)], stdout=sink, stderr=sink,
                                    start_new_session=True)
        return Supervisor(proc, log, self.top / "srv" / board)

    def online(self, board: str) -> list[str]:
        with self.fake.lock:
            return [r.name for r in self.fake.runners.values()
                    if owned_by(board).fullmatch(r.name) and r.status == "online"]


@dataclass
class Supervisor:
    proc: subprocess.Popen[bytes]
    log: Path
    state: Path

    def lines(self) -> list[str]:
        return self.log.read_text().splitlines()

    def registered(self) -> list[str]:
        return [m.group(1) for line in self.lines()
                if (m := re.search(r": registered (\S+) ", line))]

    def stop(self, timeout: float = 30) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill_9(self) -> None:
        """What systemd does to a unit's processes: the supervisor and its runner, SIGKILL."""
        groups = [int(p.read_text()) for p in self.state.glob("jobs/*/runner/listener.pgid")]
        self.proc.kill()
        self.proc.wait(10)
        for group in groups:
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass


LAB = """\
github:
  api: {api}
  app_id: {app_id}
  installation_id: {installation}
  private_key: {top}/app.pem
  owner: lab
  repo: rtgate
  timeout_s: 1
runner:
  install_dir: {top}/actions-runner
  user: nobody
  state_dir: {top}/srv
  env_dir: {top}/etc
  backoff_s: 0.1
  backoff_cap_s: 0.8
  min_uptime_s: 0
  stop_grace_s: 5
boards:
  rpi5: {{kind: rpi5}}
  rpi5-b: {{kind: rpi5}}
"""


@pytest.fixture
def controller() -> Iterator[Controller]:
    # Outside pytest's root-only tmp: the runner user must reach its job directory.
    with tempfile.TemporaryDirectory(prefix="rtgate-lab-") as name:
        top = Path(name)
        top.chmod(0o755)
        key = top / "app.pem"
        key.write_bytes(KEYS[0])
        key.chmod(0o600)
        shutil.copytree(STAND_IN, top / "actions-runner")
        fake = FakeGitHub(app_id=APP_ID, public_key=KEYS[1], installation_id=INSTALLATION,
                          scopes=("/repos/lab/rtgate", "/orgs/lab"), groups=(1, 3), slow_s=2.0)
        with fake.running():
            config = top / "lab.yml"
            config.write_text(LAB.format(api=fake.url, app_id=APP_ID, top=top,
                                         installation=INSTALLATION))
            lab = Controller(top, fake, config)
            proc = lab.setup()
            assert proc.returncode == 0, proc.stderr
            yield lab


def _owner_mode(path: Path) -> tuple[int, int]:
    st = os.lstat(path)
    return st.st_uid, stat.S_IMODE(st.st_mode)


def test_the_normal_loop_one_fresh_runner_per_job_then_a_clean_stop(
        controller: Controller) -> None:
    fake = controller.fake
    first, second = fake.queue_job("board-rpi5", 0.3), fake.queue_job("rpi5", 0.3)
    sup = controller.start("rpi5")
    try:
        wait_for("two jobs", lambda: first.done and second.done)
        wait_for("the third runner", lambda: controller.online("rpi5"))
    finally:
        code = sup.stop()
    assert code == 0, sup.lines()
    names = sup.registered()
    assert len(names) == 3 and len(set(names)) == 3, sup.lines()
    assert all(owned_by("rpi5").fullmatch(n) for n in names)
    assert [r.labels for r in fake.registered] == [
        ["self-hosted", "linux", "rtgate-lab", "rpi5", "board-rpi5"]] * 3
    # A fresh installation token for every registration.
    assert fake.count("POST", "/access_tokens", 201) >= 3
    # What a job saw: the .env as written, the runner user, no JIT config.
    for job in (first, second):
        env = job.env
        assert env["RTGATE_BOARD"] == "rpi5" and env["UID"] == str(NOBODY.pw_uid)
        assert env["RTGATE_BUILDER"] == "sudo -n /usr/local/sbin/rtgate-builder"
        assert env["RTGATE_PYTHON"] == "/opt/rtgate/venv/bin/python"
        assert env["RTGATE_RESULTS_DIR"] == str(sup.state / "results")
        assert "ACTIONS_RUNNER_INPUT_JITCONFIG" not in env
        assert env["HOME"].startswith(str(sup.state / "jobs" / "job."))
        run = sup.state / "results" / f"{job.id}-1"
        assert _owner_mode(run) == (0, 0o755)  # sealed for every later job
        assert _owner_mode(run / "gate-rpi5" / "result.json") == (0, 0o644)
    # SIGTERM: the idle runner stopped and deregistered, its job directory gone.
    assert fake.names() == [], fake.names()
    assert list((sup.state / "jobs").iterdir()) == []
    assert sup.lines()[-1].endswith("rpi5: stopped")
    assert any(f"{names[-1]}: the runner ended" in line and "deregistered" in line
               for line in sup.lines()), sup.lines()


def test_kill_9_while_idle_then_a_restart_removes_the_stale_runner(
        controller: Controller) -> None:
    fake = controller.fake
    # A runner registered by hand under the board's plain name is not the supervisor's.
    api = GitHub(fake.url, 5)
    token = api.installation_token(app_jwt(APP_ID, KEYS[0]), INSTALLATION).token
    api.generate_jitconfig(token, Scope("lab", "rtgate"), "rpi5", ["rpi5"], 1)
    sup = controller.start("rpi5")
    wait_for("an idle runner", lambda: controller.online("rpi5"))
    stale = controller.online("rpi5")[0]
    sup.kill_9()
    with fake.lock:
        assert fake.runners_named(stale).status == "online"
        fake.runners_named(stale).status = "offline"  # GitHub notices the lost session
    assert len(list((sup.state / "jobs").iterdir())) == 1  # what the killed one left
    again = controller.start("rpi5")
    try:
        wait_for("a new idle runner",
                 lambda: [n for n in controller.online("rpi5") if n != stale])
        job = fake.queue_job("board-rpi5", 0.2)
        wait_for("the job", lambda: job.done)
    finally:
        assert again.stop() == 0, again.lines()
    text = "\n".join(again.lines())
    assert "removed left-over jobs job." in text
    assert f"removed stale {stale}" in text
    assert fake.count("POST", "generate-jitconfig", 409) == 0
    assert fake.names() == ["rpi5"]


def test_tokens_expiring_mid_loop_are_minted_afresh(controller: Controller) -> None:
    """Tokens that stop working after 2 s (a revoked one, a skewed clock): each registration
    and the deregistration at the stop mint their own, and a 401 in between backs off and
    mints again."""
    fake = controller.fake
    fake.token_ttl_s = 2.0
    job = fake.queue_job("board-rpi5", 2.5)  # outlives the token of its registration
    sup = controller.start("rpi5")
    try:
        wait_for("the job", lambda: job.done)
        wait_for("the next runner", lambda: len(sup.registered()) == 2)
        # The next registration's token stops working before its first call.
        fake.answer_next("list", 401)
        fake.queue_job("board-rpi5", 0.1)
        wait_for("a registration after the 401", lambda: len(sup.registered()) == 3)
        time.sleep(2.2)  # every token minted so far has expired
    finally:
        assert sup.stop() == 0, sup.lines()
    assert sum("registration failed: list runners: 401: Bad credentials" in line
               for line in sup.lines()) == 1, sup.lines()
    # Only the scripted 401: no request went out with a token that had expired.
    assert [s for _, p, s in fake.log if "/actions/runners" in p and s == 401] == [401]
    assert fake.names() == [], sup.lines()


def test_errors_back_off_with_a_cap_and_a_slow_answer_is_retried(
        controller: Controller) -> None:
    fake = controller.fake
    fake.answer_next("token", 401, 403)
    fake.answer_next("jitconfig", 409, 422, 500, 503, SLOW, 429)
    sup = controller.start("rpi5")
    try:
        wait_for("a runner after the errors", lambda: controller.online("rpi5"), timeout=60)
    finally:
        assert sup.stop() == 0, sup.lines()
    failures = [line for line in sup.lines() if "registration failed" in line]
    assert [re.search(r"failed: .*?: (\d+|no answer)", line).group(1)  # type: ignore[union-attr]
            for line in failures] == ["401", "403", "409", "422", "500", "503", "no answer",
                                      "429"]
    waits = [float(m.group(1)) for line in sup.lines()
             if (m := re.search(r"next try in ([\d.]+) s", line))]
    # Doubling to the cap, a fifth off at most for jitter (0.64 s is logged as 0.6 s).
    assert len(waits) == 8 and max(waits[:7]) <= 0.8 and waits[3] >= 0.6, waits
    assert waits[7] == 1.0  # the rate limit's retry-after, over the cap
    # One token per attempt and one for the deregistration at the stop: the loop does not spin.
    assert fake.count("POST", "/access_tokens") == 9 + 1


def test_two_boards_on_one_controller_keep_to_their_own(controller: Controller) -> None:
    fake = controller.fake
    # Long enough to still run while rpi5 finishes a job, is killed and restarted, under load.
    long = fake.queue_job("board-rpi5-b", 12.0)
    a, b = controller.start("rpi5"), controller.start("rpi5-b")
    try:
        wait_for("rpi5-b's job to start", lambda: long.runner)
        short = fake.queue_job("board-rpi5", 0.2)
        wait_for("rpi5's job", lambda: short.done)
        wait_for("rpi5's next runner", lambda: len(a.registered()) == 2)
        # rpi5 sealed its finished run; rpi5-b's run, still being written, is untouched.
        assert _owner_mode(a.state / "results" / f"{short.id}-1")[0] == 0
        in_progress = b.state / "results" / f"{long.id}-1"
        assert os.lstat(in_progress).st_uid == NOBODY.pw_uid
        # rpi5 killed and restarted: it removes its own stale runner, never rpi5-b's.
        a.kill_9()
        a = controller.start("rpi5")
        wait_for("rpi5's runner after the restart", lambda: len(a.registered()) == 1
                 and a.registered()[0] in controller.online("rpi5"))
        wait_for("rpi5-b's job", lambda: long.done)
        assert long.env["RTGATE_BOARD"] == "rpi5-b" and short.env["RTGATE_BOARD"] == "rpi5"
        assert long.env["RTGATE_CACHE_MAIN"] == str(b.state / "cache-main")
    finally:
        assert a.stop() == 0, a.lines()
        assert b.stop() == 0, b.lines()
    assert fake.names() == []
    assert not any("rpi5-b-" in line for line in a.lines() if "removed stale" in line)


def test_organisation_runners_register_in_the_labs_runner_group(controller: Controller) -> None:
    controller.config.write_text(controller.config.read_text().replace(
        "  repo: rtgate\n", "  runner_group_id: 3\n"))
    fake = controller.fake
    sup = controller.start("rpi5-b")
    try:
        wait_for("an idle runner", lambda: controller.online("rpi5-b"))
    finally:
        assert sup.stop() == 0, sup.lines()
    assert [(r.scope, r.group_id) for r in fake.registered] == [("/orgs/lab", 3)]
    assert fake.count("GET", "^/orgs/lab/actions/runners$") == 1
    assert fake.count("DELETE", "^/orgs/lab/actions/runners/") == 1
    assert fake.names() == []


def test_a_runner_that_ends_at_once_backs_off_and_leaves_nothing_registered(
        controller: Controller) -> None:
    """A runner turned away as it starts (here: the fake's broker refuses every session) ends
    within seconds: that is a failure for the backoff, not a reason to register again at once,
    and each registration it left is removed by the next."""
    controller.config.write_text(controller.config.read_text().replace(
        "min_uptime_s: 0", "min_uptime_s: 2"))
    fake = controller.fake
    fake.refuse_sessions = True
    sup = controller.start("rpi5")
    try:
        wait_for("four failures", lambda: sum("failure(s) in a row" in line
                                              for line in sup.lines()) >= 4)
        fake.refuse_sessions = False
        wait_for("a runner once the broker is back", lambda: controller.online("rpi5"))
    finally:
        assert sup.stop() == 0, sup.lines()
    waits = [float(m.group(1)) for line in sup.lines()
             if (m := re.search(r"next try in ([\d.]+) s", line))]
    assert waits[:4] == sorted(waits[:4]) and waits[3] > waits[0], waits
    removed = [line for line in sup.lines() if "removed stale" in line]
    assert len(removed) >= 4, sup.lines()  # every turned-away registration, by the next one
    assert fake.names() == []


def _cgroup2() -> Path | None:
    mounts = Path("/proc/self/mounts").read_text().splitlines()
    found = [Path(f[1]) for line in mounts if len(f := line.split()) > 2 and f[2] == "cgroup2"]
    return found[0] if found and os.access(found[0], os.W_OK) else None


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(_cgroup2() is None, reason="no writable cgroup v2 hierarchy")
def test_what_a_job_leaves_running_dies_with_its_cgroup(controller: Controller) -> None:
    """A job's daemon in a session of its own survives the runner's process group: the
    runner's cgroup (here one the test delegates, as Delegate=yes does for the unit) ends it
    before the next job of the board starts."""
    base = (_cgroup2() or Path()) / f"rtgate-test-{uuid.uuid4().hex[:8]}"
    base.mkdir()
    controller.config.write_text(controller.config.read_text().replace(
        "  stop_grace_s: 5\n", f"  stop_grace_s: 5\n  cgroup: {base}\n"))
    fake = controller.fake
    job = fake.queue_job("board-rpi5", 0.2, escape=True)
    escapee = 0
    sup = controller.start("rpi5")
    try:
        wait_for("the job", lambda: job.done)
        escapee = int(job.env["ESCAPEE"])
        wait_for("the next runner", lambda: len(sup.registered()) == 2)
        assert any("killed 1 process(es) the job left running" in line
                   for line in sup.lines()), sup.lines()
        wait_for("the job's daemon to end", lambda: not _alive(escapee), timeout=10)
        # The finished job's cgroup is gone; the next runner's comes as it starts.
        wait_for("only the next runner's cgroup",
                 lambda: len([p for p in base.glob("job.*") if p.is_dir()]) == 1)
    finally:
        assert sup.stop() == 0, sup.lines()
        if escapee and _alive(escapee):
            os.kill(escapee, signal.SIGKILL)
        for group in [*base.glob("job.*"), base / "supervisor", base]:
            deadline = time.monotonic() + 10
            while group.is_dir():
                try:
                    group.rmdir()
                except OSError:  # busy until the last exit is accounted
                    assert time.monotonic() < deadline, f"cannot remove {group}"
                    time.sleep(0.05)
    assert f"a cgroup per runner under {base}" in sup.lines()[0]


def test_a_stop_in_the_middle_of_a_job_cancels_it_and_seals_what_it_wrote(
        controller: Controller) -> None:
    fake = controller.fake
    job = fake.queue_job("board-rpi5", 60)
    sup = controller.start("rpi5")
    wait_for("the job to start", lambda: job.runner)
    run = sup.state / "results" / f"{job.id}-1"
    wait_for("its results directory", run.exists)
    started = time.monotonic()
    assert sup.stop() == 0, sup.lines()
    assert time.monotonic() - started < 5  # stop_grace_s
    assert job.cancelled and fake.names() == []
    assert any(f"{job.runner}: the runner ended" in line and "already gone" in line
               for line in sup.lines()), sup.lines()
    assert _owner_mode(run)[0] == 0 and _owner_mode(run / "gate-rpi5")[0] == 0
    assert list((sup.state / "jobs").iterdir()) == []


def test_a_jobs_run_step_runs_as_the_runner_runs_bash(controller: Controller) -> None:
    """A job with a `run:` step (the lab e2e's gate job): bash -eo pipefail in the runner's
    workspace as the runner user, with the board's .env and the runner's step variables; the
    first failing command ends it with its status."""
    fake = controller.fake
    job = fake.queue_job("board-rpi5", 0, script=(
        'echo "run $GITHUB_RUN_ID-$GITHUB_RUN_ATTEMPT on $RTGATE_BOARD as $(id -un) in '
        '$(basename "$PWD") ($RUNNER_NAME)"\ntest -d "$RUNNER_TEMP"\nfalse\necho unreachable\n'))
    sup = controller.start("rpi5")
    try:
        wait_for("the job", lambda: job.done)
    finally:
        assert sup.stop() == 0, sup.lines()
    assert job.returncode == 1, job.log
    assert f"run {job.id}-1 on rpi5 as nobody in rtgate ({job.runner})" in job.log, job.log
    assert "unreachable" not in job.log
