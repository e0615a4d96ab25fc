"""The runner's `.env` as actions/runner reads it, and as `rtgate lab setup` writes it.

The reader's rule, from actions/runner at 258d6c857db3519913f7deb6004b60172f8043ae,
src/Runner.Listener/Program.cs:172-199 (`LoadAndSetEnv`, called first thing in `Main`, line 19):

    var envContents = File.ReadAllLines(envFile);
    foreach (var env in envContents)
        if (!string.IsNullOrEmpty(env))
            var separatorIndex = env.IndexOf('=');
            if (separatorIndex > 0)
                string envKey = env.Substring(0, separatorIndex);
                string envValue = null;
                if (env.Length > separatorIndex + 1)
                    envValue = env.Substring(separatorIndex + 1);
                Environment.SetEnvironmentVariable(envKey, envValue);

No trimming, no comments, no quotes: the value is everything after the first '='.
"""

from __future__ import annotations

import re
import shlex

import pytest

from rtgate.errors import InputError
from rtgate.kernel import runtime
from rtgate.lab import envfile

# The `.env` the guide had admins paste (docs/lab.md before rtgate lab setup), verbatim.
PASTED = """\
RTGATE_PYTHON=/opt/rtgate/venv/bin/python  # root-owned; rtgate runs with -I
RTGATE_RESULTS_DIR=/srv/rtgate/results     # every gate's raw output stays here too
RTGATE_BUILDER="sudo -n /usr/local/sbin/rtgate-builder"  # the builder, not the docker group
"""

GENERATED = {
    "RTGATE_BOARD": "rpi5",
    "RTGATE_PYTHON": "/opt/rtgate/venv/bin/python",
    "RTGATE_RESULTS_DIR": "/srv/rtgate/rpi5/results",
    "RTGATE_CACHE_MAIN": "/srv/rtgate/rpi5/cache-main",
    "RTGATE_CACHE_PR": "/srv/rtgate/rpi5/cache-pr",
    "RTGATE_BUILDER": "sudo -n /usr/local/sbin/rtgate-builder",
}


@pytest.mark.parametrize(("text", "expected"), [
    ("A=1\n", {"A": "1"}),
    ("A=1=2\n", {"A": "1=2"}),  # IndexOf: the first '='
    ("A= spaced \n", {"A": " spaced "}),  # no trimming
    (" A=1\n", {" A": "1"}),  # nor of the key
    ('A="x y"\n', {"A": '"x y"'}),  # quotes kept
    ("A=x # note\n", {"A": "x # note"}),  # a comment is part of the value
    ("# A=1\n", {"# A": "1"}),  # even a whole commented-out line sets "# A"
    ("# a note\n", {}),  # no '=': skipped
    ("=x\n", {}),  # separatorIndex 0: skipped
    ("A=\n", {"A": None}),  # no value: SetEnvironmentVariable(A, null) removes A
    ("A=1\r\nB=2\rC=3\n", {"A": "1", "B": "2", "C": "3"}),  # ReadAllLines: CRLF, CR, LF
    ("\ufeffA=1", {"A": "1"}),  # the byte order mark is not part of the first key
    ("A=1\nA=2\n", {"A": "2"}),  # the later line wins
    ("\n\nA=1\n\n", {"A": "1"}),
])
def test_the_runner_reads_each_line_verbatim_after_the_first_equals_sign(
        text: str, expected: dict[str, str | None]) -> None:
    assert envfile.read_as_runner(text) == expected


def test_the_pasted_env_of_the_old_guide_is_what_broke_every_job() -> None:
    """What the issue found: the comment is in RTGATE_PYTHON (Preflight fails), the quoted
    builder is one word to shlex.split (no PR kernel builds)."""
    env = envfile.read_as_runner(PASTED)
    assert env["RTGATE_PYTHON"] == ("/opt/rtgate/venv/bin/python  # root-owned; rtgate runs "
                                    "with -I")
    argv = shlex.split(env["RTGATE_BUILDER"] or "")
    assert argv[:2] == ["sudo -n /usr/local/sbin/rtgate-builder", "#"]  # a program named so
    with pytest.raises(InputError, match=r"line 1: .*the value holds ' #'"):
        envfile.check(PASTED, path="rpi5.env")


def test_the_generated_env_reads_back_exactly_as_written() -> None:
    text = envfile.render(GENERATED)
    assert text.splitlines() == [f"{k}={v}" for k, v in GENERATED.items()]
    assert envfile.read_as_runner(text) == GENERATED
    assert envfile.check(text, path="rpi5.env") == GENERATED


def test_rtgate_builder_from_the_generated_env_is_the_wrappers_three_words(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """rtgate/kernel/runtime.py builder_command(): shlex.split($RTGATE_BUILDER) is the argv."""
    value = envfile.read_as_runner(envfile.render(GENERATED))["RTGATE_BUILDER"]
    assert value is not None
    monkeypatch.setenv(runtime.BUILDER_ENV, value)
    assert runtime.builder_command() == ["sudo", "-n", "/usr/local/sbin/rtgate-builder"]


@pytest.mark.parametrize(("value", "why"), [
    ('"sudo -n /usr/local/sbin/rtgate-builder"', "holds '\"'"),
    ("'quoted'", "holds \"'\""),
    ("/opt/x # note", "holds ' #'"),
    ("/opt/x ", "ends with a blank"),
    ("a\nb", "holds '\\n'"),
    ("a\\ b", "holds '\\\\'"),
    ("", "is empty"),
])
def test_a_value_the_runner_would_keep_differently_is_refused(value: str, why: str) -> None:
    with pytest.raises(InputError, match=re.escape(why)):
        envfile.render({"RTGATE_X": value})


def test_a_bad_key_is_refused() -> None:
    with pytest.raises(InputError, match="not an environment variable name"):
        envfile.render({"RTGATE X": "1"})


def test_a_hand_edited_file_is_refused_with_its_line() -> None:
    text = envfile.render(GENERATED) + "# added by hand\n"
    with pytest.raises(InputError) as refused:
        envfile.check(text, path="rpi5.env")
    assert refused.value.oneline().startswith(
        "rpi5.env: line 7: '# added by hand': the line is not KEY=value; regenerate")
