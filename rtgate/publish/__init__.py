"""``rtgate publish``: what the publisher posts, judged again from the raw results.

A gate artifact comes from a job that built and booted a pull request's kernel: its exit-code
file, JUnit, Markdown and even its name are the untrusted side's words. The publisher keeps only
the ``result.json`` files at the places the gate writes them (``gate-BOARD/FLAVOR/SCENARIO/``),
for boards the default branch's ``bench/boards`` knows, judges each one with the default
branch's budgets and renders its own JUnit and Markdown. A run whose result is missing is an
infrastructure failure, never a pass; whatever came from an artifact reaches Markdown as a code
span (``markdown.code``).

Three outcomes are kept apart in every word it writes: a latency verdict (pass or regression),
"not decided from the data" (an incomplete measurement: measure more) and an infrastructure
failure (no measurement: re-run once the board is healthy).

A pull request's gate measures main's kernel against the PR's on each board in A/B rounds
(``rtgate ab``). For a board the run context's ``ab`` plan names, the publisher decides again
from the rounds' result files (``gate-BOARD/A|B/round-N/FLAVOR/SCENARIO/result.json``), replaying
the gate's looks with the plan the trusted plan job recorded (``rtgate.ab.loop.ABRun.replay``),
never from ab.json or ab.md. A fourth outcome belongs to it: *undecided at the time cap* (measure
longer), exit 4 — a statement about the data, not a failure of the lab.

A pull request's gate asks for board kinds (``kind:``), each job running on whichever board of the
kind is free: its context, artifacts and plans name kinds, and an artifact's results name the
board that measured (shown in the comment); a kind needs no board file of its own name.

The rooms: ``settings`` (what `rtgate publish` is asked), ``context`` (the run context the
trusted plan job recorded: a model), ``judgement`` (a board's and the run's outcome),
``judge`` (the artifacts' results read back where the gate writes them, judged), ``replay``
(a board's A/B rounds re-decided), ``render`` (the comment, its banner, the outcome JSON) and
``engine`` (``publish``, the command's one call).
"""
