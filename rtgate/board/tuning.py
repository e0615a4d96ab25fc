"""Tuning profiles (``bench/tuning/*.yml``): applied on a board, then verified, never assumed.

A profile is boot-time settings (kernel command-line words; firmware lines on a Pi), run-time
writes (sysfs/procfs files, or a device held open such as /dev/cpu_dma_latency) and where
cyclictest and the loads run. Every board runs the same POSIX shell snippets — busybox in the
QEMU guest, the Pi's and this host's sh — so applying, undoing and reading back are one piece of
code: the apply script saves each old value in a state directory before writing, the undo script
puts them back (also after a crash, from the state left behind), and the read-back script prints
``key<TAB>value`` lines that :meth:`Applied.verify` compares with what the profile asked for.

A setting counts when its effect is visible, not when its word is on the command line: a
misspelt ``isolcpus`` or one the kernel was built without (CONFIG_CPU_ISOLATION) leaves
/sys/devices/system/cpu/isolated empty, and the run is incomplete naming it, unless the profile
marks that setting optional for the board.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rtgate import paths, tools
from rtgate.errors import InputError
from rtgate.harness.scenario import Scenario
from rtgate.result import Result, Tuning, TuningCheck
from rtgate.yamlsource import load_named

TUNING = paths.ROOT / "bench" / "tuning"
_CPUS = re.compile(r"\{(isolated|housekeeping)\}")


class _TuningModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _templated(text: str) -> str:
    for inner in re.findall(r"\{([^{}]*)\}", text):
        if inner not in ("isolated", "housekeeping"):
            raise ValueError(f"unknown placeholder {{{inner}}} (known: {{isolated}}, "
                             "{housekeeping})")
    return text


class _Setting(_TuningModel):
    optional: list[str] = Field(
        default_factory=list, description="Boards where the setting may not take effect "
                                          "without making the run incomplete.")
    boards: list[str] | None = Field(
        None, description="Only these boards apply the setting (default: every board).")

    def applies(self, board: str) -> bool:
        return self.boards is None or board in self.boards


class BootParam(_Setting):
    param: str = Field(pattern=r"^[a-z0-9_.-]+$", description="Kernel command-line parameter.")
    value: str | None = Field(None, description="Its value; {isolated}/{housekeeping} allowed.")

    @model_validator(mode="after")
    def _check(self) -> BootParam:
        if self.value is not None:
            _templated(self.value)
        return self


class RuntimeSetting(_Setting):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    path: str | None = Field(None, description="File(s) to write (shell glob), e.g. a governor.")
    hold: str | None = Field(None, description="A device written once and held open for the run.")
    value: str

    @model_validator(mode="after")
    def _check(self) -> RuntimeSetting:
        if (self.path is None) == (self.hold is None):
            raise ValueError("give exactly one of path and hold")
        target = self.path or self.hold or ""
        if not target.startswith(("/proc/", "/sys/", "/dev/")) or ".." in target:
            raise ValueError(f"{target!r}: only files under /proc, /sys or /dev are tuned")
        if re.search(r"[^A-Za-z0-9_./*-]", target):
            raise ValueError(f"{target!r}: letters, digits, _ . / * - only")
        _templated(self.value)
        return self


class FirmwareLine(_Setting):
    line: str = Field(pattern=r"^[A-Za-z0-9_]+=[A-Za-z0-9_,.=-]+$",
                      description="A config.txt line (Raspberry Pi firmware), e.g. an overlay.")
    absent: str = Field(pattern=r"^/(sys|proc|dev)/[A-Za-z0-9_./-]+$",
                        description="What the line removes, read back like every setting: a "
                                    "path that exists only when it did not take (the device an "
                                    "overlay disables).")


class Pin(_TuningModel):
    cyclictest: Literal["isolated"] | None = Field(
        None, description="cyclictest -a on the isolated CPUs.")
    loads: Literal["housekeeping"] | None = Field(
        None, description="The board's loads under taskset on the housekeeping CPUs.")


class Profile(_TuningModel):
    name: str
    description: str
    isolate: int = Field(0, ge=0, description="How many CPUs, counted from the last, are "
                                              "isolated (measured); the rest keep house.")
    boot: list[BootParam] = Field(default_factory=list)
    runtime: list[RuntimeSetting] = Field(default_factory=list)
    firmware: list[FirmwareLine] = Field(default_factory=list)
    pin: Pin = Field(default_factory=Pin)

    @model_validator(mode="after")
    def _cpus_named(self) -> Profile:
        texts = [b.value or "" for b in self.boot] + [r.value for r in self.runtime]
        if (any(_CPUS.search(t) for t in texts) or self.pin.cyclictest or self.pin.loads) \
                and not self.isolate:
            raise ValueError("isolate: the profile names isolated/housekeeping CPUs but "
                             "isolates none")
        names = [r.name for r in self.runtime]
        if dupes := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"duplicate runtime setting name(s): {', '.join(dupes)}")
        return self


TASKS = ("cat /proc/[0-9]*/task/[0-9]*/status 2>/dev/null | awk -F'\\t' "
         "'$1==\"Name:\"{n=$2} $1==\"Tgid:\"{t=$2} $1==\"Pid:\"{p=$2} "
         "$1==\"PPid:\"{pp=$2} $1==\"Cpus_allowed_list:\"{printf "
         "\"task\\t%s %s %s %s %s\\n\", t, p, pp, $2, n}'")
"""Every task's ``task<TAB>tgid pid ppid cpus name`` line (the read-back's ``tasks``)."""


def load_profile(name: str, root: Path | None = None) -> Profile:
    """``name`` from bench/tuning/, or a path to a profile .yml."""
    path = Path(name) if name.endswith((".yml", ".yaml")) else (root or TUNING) / f"{name}.yml"
    return load_named(path, Profile, "tuning profile")


def cpu_list(cpus: list[int]) -> str:
    """The kernel's list syntax: 0-2,5."""
    runs: list[list[int]] = []
    for c in sorted(cpus):
        if runs and c == runs[-1][-1] + 1:
            runs[-1].append(c)
        else:
            runs.append([c])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def parse_cpus(text: str | None) -> set[int] | None:
    """A CPU list as the kernel prints it ("0-1,3"); None when it is not one."""
    text = (text or "").strip()
    if not text or text == "(null)":
        return set()
    cpus: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return None
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def parse_mask(text: str | None) -> set[int] | None:
    """A hex CPU mask as /proc/irq/default_smp_affinity prints it ("ff,fffffffe")."""
    try:
        value = int((text or "").strip().replace(",", ""), 16)
    except ValueError:
        return None
    return {i for i in range(value.bit_length()) if value >> i & 1}


def parse_readback(text: str) -> dict[str, list[str]]:
    """``key<TAB>value`` lines → key → values (in order; most keys have one)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        key, tab, value = line.partition("\t")
        if tab:
            out.setdefault(key, []).append(value.strip())
    return out


def _one(rb: dict[str, list[str]], key: str) -> str | None:
    values = rb.get(key)
    return values[-1] if values else None


def _cpu_set_text(cpus: set[int] | None) -> str:
    return "unreadable" if cpus is None else (cpu_list(list(cpus)) or "none")


@dataclass(frozen=True)
class Applied:
    """A profile for one board with a known CPU count: the concrete words, writes and checks."""

    profile: Profile
    board: str
    cpus: int

    def __post_init__(self) -> None:
        if self.profile.isolate and self.profile.isolate >= self.cpus:
            raise InputError(f"tuning profile {self.profile.name!r} isolates "
                             f"{self.profile.isolate} CPU(s) but board {self.board!r} has "
                             f"{self.cpus}: at least one must keep house", path=TUNING)

    @property
    def isolated(self) -> list[int]:
        return list(range(self.cpus - self.profile.isolate, self.cpus)) \
            if self.profile.isolate else []

    @property
    def housekeeping(self) -> list[int]:
        return [c for c in range(self.cpus) if c not in self.isolated]

    def fill(self, text: str) -> str:
        return text.replace("{isolated}", cpu_list(self.isolated)) \
                   .replace("{housekeeping}", cpu_list(self.housekeeping))

    @property
    def boot(self) -> list[BootParam]:
        return [b for b in self.profile.boot if b.applies(self.board)]

    @property
    def runtime(self) -> list[RuntimeSetting]:
        return [r for r in self.profile.runtime if r.applies(self.board)]

    def boot_args(self) -> list[str]:
        return [b.param if b.value is None else f"{b.param}={self.fill(b.value)}"
                for b in self.boot]

    @property
    def firmware(self) -> list[FirmwareLine]:
        return [f for f in self.profile.firmware if f.applies(self.board)]

    def firmware_lines(self) -> list[str]:
        return [f.line for f in self.firmware]

    # -- shell ----------------------------------------------------------------------------

    def apply_script(self, state: str) -> str:
        """Save every old value into ``state``/undo, then write; a refused write is noted in
        ``state``/refused (per-CPU IRQs refuse to move), a held device's holder pid in
        ``state``/holders."""
        st = shlex.quote(state)
        lines = [f"mkdir -p {st}", f": >>{st}/undo", f": >>{st}/refused", f": >>{st}/holders"]
        for r in self.runtime:
            value = shlex.quote(self.fill(r.value))
            if r.path:
                lines += [f"for p in {r.path}; do [ -w \"$p\" ] || continue",
                          f"  printf '%s\\t%s\\n' \"$p\" \"$(cat \"$p\" 2>/dev/null)\" >>{st}/undo",
                          f"  echo {value} >\"$p\" 2>/dev/null || echo \"$p\" >>{st}/refused",
                          "done"]
            else:
                # A 32-bit binary value, as PM QoS devices take it; the holder sleeps with the
                # file open until the undo script kills it.
                n = int(self.fill(r.value))
                octal = "".join(f"\\{b:03o}" for b in n.to_bytes(4, "little", signed=True))
                lines += [f"if [ -w {r.hold} ]; then",
                          f"  ( exec 3>{r.hold} && printf '{octal}' >&3 && exec sleep 2147483647"
                          " ) </dev/null >/dev/null 2>&1 &",
                          f"  echo $! >>{st}/holders; fi"]
        return "\n".join(lines) + "\n"

    @staticmethod
    def undo_script(state: str) -> str:
        """Put the saved values back (last write first), stop the holders, drop the state."""
        st = shlex.quote(state)
        return "\n".join([
            f"if [ -d {st} ]; then",
            f"  [ -f {st}/holders ] && for p in $(cat {st}/holders); do kill \"$p\" 2>/dev/null; "
            "done",
            f"  [ -f {st}/undo ] && awk '{{l[NR]=$0}} END {{for (i=NR; i>0; i--) print l[i]}}' "
            f"{st}/undo | while IFS=\"$(printf '\\t')\" read -r p v; do",
            "    [ -n \"$v\" ] && echo \"$v\" >\"$p\" 2>/dev/null",
            "  done",
            f"  rm -rf {st}",
            "fi"]) + "\n"

    def readback_script(self, state: str | None = None, tasks: bool = False) -> str:
        """Lines printing what is in effect as ``key<TAB>value`` on stdout; with ``tasks``,
        every task's affinity first: a sampler's read must land while a short run measures,
        the settings after it hold until rtgate puts them back."""
        lines = [TASKS] if tasks else []
        lines += ["rb() { [ -r \"$2\" ] && printf '%s\\t%s\\n' \"$1\" "
                  "\"$(tr '\\n' ' ' <\"$2\" 2>/dev/null)\"; }",
                  "rb cmdline /proc/cmdline",
                  "rb isolated /sys/devices/system/cpu/isolated",
                  "rb nohz_full /sys/devices/system/cpu/nohz_full",
                  "rb default_smp_affinity /proc/irq/default_smp_affinity",
                  "for f in /proc/irq/[0-9]*; do rb \"irq.${f##*/}\" "
                  "\"$f/effective_affinity_list\"; done",
                  # One cat for every task's name: a fork per task took seconds on a loaded
                  # host.
                  "cat /proc/[0-9]*/comm 2>/dev/null | awk '/^rcuo/ { printf \"rcuo\\t%s\\n\", "
                  "$0 }'"]
        if any(b.param == "preempt" for b in self.boot):
            lines += ["[ -d /sys/kernel/debug/sched ] || "
                      "mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null",
                      "rb preempt /sys/kernel/debug/sched/preempt",
                      "printf 'preempt_log\\t%s\\n' \"$(dmesg 2>/dev/null | "
                      "grep -o 'Dynamic Preempt: [a-z]*' | tail -n 1)\""]
        for f in self.firmware:
            lines.append(f"[ -e {f.absent} ] && e=present || e=absent; "
                         f"printf 'exists.{f.absent}\\t%s\\n' \"$e\"")
        for r in self.runtime:
            if r.path:
                lines.append(f"for p in {r.path}; do rb \"write.{r.name}.$p\" \"$p\"; done")
            else:
                lines.append(f"[ -r {r.hold} ] && printf 'hold.{r.name}\\t%s\\n' "
                             f"\"$(od -An -td4 {r.hold} | tr -d ' ')\"")
        if state:
            lines.append(f"[ -f {shlex.quote(state)}/refused ] && while read -r p; do "
                         "printf 'refused\\t%s\\n' \"$p\"; done <" f"{shlex.quote(state)}/refused")
        return "\n".join(lines) + "\n"

    def sampler_script(self, pidfile: str, budget_s: float) -> str:
        """A board-side script: wait until a cyclictest started by the process in ``pidfile``
        measures (the bench's start-up time is the board's), then print that process's pid and
        the read-back with every task's affinity."""
        q = shlex.quote(pidfile)
        return "\n".join([
            f"i=0; while [ ! -s {q} ] && [ $i -lt 100 ]; do sleep 0.2; i=$((i+1)); done",
            f"root=$(cat {q} 2>/dev/null)",
            "ours() { p=$1; while [ -n \"$p\" ] && [ \"$p\" -gt 1 ]; do",
            "  [ \"$p\" = \"$root\" ] && return 0",
            "  p=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/$p/status 2>/dev/null); done; "
            "return 1; }",
            # The bench's start-up (sudo, Python's imports) counts too: on a loaded board it took
            # longer than a short run's budget. The loop ends with the bench, so the bound only
            # matters for a bench that never measures.
            f"i=0; while [ $i -lt {int(budget_s * 5) + 600} ]; do",
            "  [ -d \"/proc/$root\" ] || break",
            # Measuring: a thread besides the main one (a 2 s run has no second to spare).
            "  for c in $(pgrep -x cyclictest); do ours \"$c\" && "
            "[ \"$(ls /proc/$c/task 2>/dev/null | wc -l)\" -gt 1 ] && break 2; done",
            "  sleep 0.2; i=$((i+1)); done",
            "sleep 0.5",
            "printf 'root\\t%s\\n' \"$root\"",
            self.readback_script(tasks=True)])

    # -- verification -----------------------------------------------------------------------

    def _check(self, setting: str, phase: str, expected: str, actual: str | None, ok: bool,
               optional: list[str]) -> TuningCheck:
        status = "ok" if ok else ("optional" if self.board in optional else "failed")
        return TuningCheck(setting=setting, phase=phase, expected=expected,
                           actual=actual if actual is not None else "not present", status=status)

    def verify(self, rb: dict[str, list[str]], phase: str) -> list[TuningCheck]:
        """One check per setting of the profile against a read-back."""
        checks = [self._boot(b, rb, phase) for b in self.boot]
        for f in self.firmware:
            seen = _one(rb, f"exists.{f.absent}")
            checks.append(self._check(f.line, phase, f"{f.absent} absent", seen,
                                      seen == "absent", f.optional))
        checks += [self._runtime(r, rb, phase) for r in self.runtime]
        return checks

    def _boot(self, b: BootParam, rb: dict[str, list[str]], phase: str) -> TuningCheck:
        word = b.param if b.value is None else f"{b.param}={self.fill(b.value)}"
        words = (_one(rb, "cmdline") or "").split()
        if word not in words:
            got = " ".join(w for w in words if w.split("=")[0] == b.param) or "absent"
            return self._check(b.param, phase, f"{word} on /proc/cmdline", f"{got}", False,
                               b.optional)
        # The word is there; its effect is what counts.
        if b.param in ("isolcpus", "nohz_full"):
            key = "isolated" if b.param == "isolcpus" else "nohz_full"
            want = parse_cpus(",".join(p for p in self.fill(b.value or "").split(",")
                                       if p[:1].isdigit()))
            got = parse_cpus(_one(rb, key))
            return self._check(b.param, phase, f"/sys/devices/system/cpu/{key} = "
                               f"{_cpu_set_text(want)}", _cpu_set_text(got)
                               if key in rb else None, got == want, b.optional)
        if b.param == "irqaffinity":
            want = parse_cpus(self.fill(b.value or ""))
            got = parse_mask(_one(rb, "default_smp_affinity"))
            return self._check(b.param, phase, f"/proc/irq/default_smp_affinity = "
                               f"{_cpu_set_text(want)}", _cpu_set_text(got)
                               if "default_smp_affinity" in rb else None,
                               got == want, b.optional)
        if b.param == "rcu_nocbs":
            want = parse_cpus(self.fill(b.value or "")) or set()
            have = {int(m.group(1)) for c in rb.get("rcuo", [])
                    if (m := re.match(r"rcuo[ps]/(\d+)$", c))}
            return self._check(b.param, phase, f"rcuop/N kthreads for CPUs "
                               f"{_cpu_set_text(want)}", _cpu_set_text(have & want),
                               want <= have, b.optional)
        if b.param == "preempt":
            # debugfs marks the active model "(full)"; without debugfs the boot log says it.
            text = _one(rb, "preempt")
            m = re.search(r"\((\w+)\)", text or "") if text else \
                re.search(r"Dynamic Preempt: (\w+)", _one(rb, "preempt_log") or "")
            where = "/sys/kernel/debug/sched/preempt" if text else "the boot log"
            return self._check(b.param, phase, f"active model {b.value} ({where})",
                               text or _one(rb, "preempt_log") or None,
                               bool(m) and m.group(1) == b.value, b.optional)
        return self._check(b.param, phase, f"{word} on /proc/cmdline", word, True, b.optional)

    def _runtime(self, r: RuntimeSetting, rb: dict[str, list[str]], phase: str) -> TuningCheck:
        value = self.fill(r.value)
        if r.hold:
            got = _one(rb, f"hold.{r.name}")
            return self._check(r.name, phase, f"{r.hold} held at {value}", got,
                               got == value, r.optional)
        refused = set(rb.get("refused", []))
        prefix = f"write.{r.name}."
        found = {k[len(prefix):]: v[-1] for k, v in rb.items() if k.startswith(prefix)}
        taken = {p: v for p, v in found.items() if p not in refused}
        cpus = r.path is not None and r.path.endswith("affinity_list")
        same = (lambda v: parse_cpus(v) == parse_cpus(value)) if cpus else (lambda v: v == value)
        wrong = sorted(p for p, v in taken.items() if not same(v))
        actual = None if not found else ("all" if not wrong else
                                         f"{len(wrong)} of {len(taken)} differ: "
                                         f"{wrong[0]} = {taken[wrong[0]]!r}")
        ok = bool(taken) and not wrong
        if ok and cpus and r.path and r.path.startswith("/proc/irq/"):
            # An IRQ that took the affinity must also be served there (effective affinity).
            irqs = {p.split("/")[3] for p in taken}
            want = parse_cpus(value) or set()
            off = sorted(i for i in irqs if not (parse_cpus(_one(rb, f"irq.{i}")) or set())
                         <= want and f"irq.{i}" in rb)
            if off:
                ok, actual = False, f"effective affinity of IRQ {', '.join(off)} outside {value}"
        if ok and refused & set(found):
            actual = f"all movable; refused (per-CPU): {len(refused & set(found))}"
        return self._check(r.name, phase, f"{r.path} = {value}", actual, ok, r.optional)

    def verify_tasks(self, rb: dict[str, list[str]], loads: list[str],
                     root: int | None = None) -> list[TuningCheck]:
        """The measuring threads (any tool's: cyclictest's, rtla timerlat's kernel threads
        ``timerlat/N``) on the isolated CPUs, the loads on the housekeeping; with ``root``, only
        that process's descendants count (a shared host runs others')."""
        rows = [p for line in rb.get("task", []) if len(p := line.split(" ", 4)) == 5]
        parent = {r[0]: r[2] for r in rows if r[0] == r[1]}

        def ours(tgid: str) -> bool:
            seen = set()
            while root is not None and tgid not in seen:
                if tgid == str(root):
                    return True
                seen.add(tgid)
                tgid = parent.get(tgid, "0")
            return root is None

        tasks = [(r[0], r[1], parse_cpus(r[3]), r[4]) for r in rows if ours(r[0])]
        checks = []
        pin = self.profile.pin
        if pin.cyclictest:
            threads = [t for t in tasks if any(tool.measuring_thread(t[3], main=t[0] == t[1])
                                               for tool in tools.every())]
            want = set(self.isolated)
            wrong = [t for t in threads if t[2] is None or not t[2] <= want]
            checks.append(self._check(
                "cyclictest-affinity", "run",
                f"measuring threads on CPUs {cpu_list(self.isolated)}",
                (f"{len(threads)} threads, " + (f"thread {wrong[0][1]} on "
                 f"{_cpu_set_text(wrong[0][2])}" if wrong else "all there")) if threads else None,
                bool(threads) and not wrong, []))
        if pin.loads and loads:
            names = {n[:15] for n in loads}
            # stress-ng's workers rename themselves (stress-ng-cpu): a prefix is the program.
            mine = [t for t in tasks if t[3].startswith(tuple(names))]
            want = set(self.housekeeping)
            wrong = [t for t in mine if t[2] is None or not t[2] <= want]
            checks.append(self._check(
                "load-affinity", "run", f"{', '.join(sorted(names))} on CPUs "
                f"{cpu_list(self.housekeeping)}",
                (f"{len(mine)} tasks, " + (f"{wrong[0][3]} {wrong[0][1]} on "
                 f"{_cpu_set_text(wrong[0][2])}" if wrong else "all there")) if mine else None,
                bool(mine) and not wrong, []))
        return checks

    # -- the run ----------------------------------------------------------------------------

    def pin(self, scenario: Scenario) -> Scenario:
        """The scenario with cyclictest on the isolated CPUs and the loads on the others."""
        update: dict[str, object] = {}
        if self.profile.pin.cyclictest:
            cpus = cpu_list(self.isolated)
            update["cyclictest"] = tools.get("cyclictest").pinned(scenario.cyclictest, cpus)
            # The same CPUs when another tool measures.
            update["tool_options"] = {name: tools.get(name).pinned(options, cpus)
                                      for name, options in scenario.tool_options.items()}
        if self.profile.pin.loads:
            update["loads"] = [ld.model_copy(update={
                "argv": ["taskset", "-c", cpu_list(self.housekeeping), *ld.argv]})
                for ld in scenario.loads]
        return scenario.model_copy(update=update)

    def record(self, checks: list[TuningCheck]) -> Tuning:
        return Tuning(profile=self.profile.name, isolated_cpus=cpu_list(self.isolated) or None,
                      housekeeping_cpus=cpu_list(self.housekeeping) or None,
                      boot_args=self.boot_args(), firmware=self.firmware_lines(),
                      runtime=[f"{r.path or r.hold} = {self.fill(r.value)}"
                               for r in self.runtime],
                      checks=checks)


class _Command(Protocol):
    argv: list[str]


def programs(loads: Sequence[_Command]) -> list[str]:
    """What each load runs (its task name), past the taskset that pins it."""
    names = []
    for load in loads:
        argv = load.argv[3:] if load.argv[:2] == ["taskset", "-c"] else load.argv
        names.append(argv[0].rsplit("/", 1)[-1])
    return names


def failures(checks: list[TuningCheck]) -> list[str]:
    """The reasons a result is incomplete: every failed check, named."""
    return [f"tuning: {c.setting} not in effect ({c.phase}): expected {c.expected}, "
            f"found {c.actual}" for c in checks if c.status == "failed"]


def recorded(result: Result, tuning: Tuning) -> Result:
    """``result`` with its tuning section; a failed check makes it incomplete (degraded)."""
    reasons = failures(tuning.checks)
    status = "degraded" if reasons and result.status == "complete" else result.status
    return Result.model_validate({**result.model_dump(by_alias=True), "tuning":
                                  tuning.model_dump(), "status": status,
                                  "reasons": list(dict.fromkeys([*result.reasons, *reasons]))})
