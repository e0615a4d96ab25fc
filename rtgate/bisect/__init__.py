"""Bisect: which patch of a series made the latency worse, and the proof that it did.

A *variant* is a set of the series' patches (numbers from 1, applied in series order): the prefix
``1..k``, or the whole series without the culprit (the revert). Every step compares a variant, the
candidate, against a base variant with a ``Measure`` function — on a board that is a kernel build
and an ``rtgate ab`` run (interleaved rounds until same, worse, better or unknown at the step's time
cap, and the budgets); in the unit tests a deterministic function. The search itself is pure.

The search (like ``git bisect``, over prefixes):

1. the ends: the bad end against the good end. Same or better with the default ends: the whole
   series is good, "nothing to bisect". Not worse with an explicit ``--bad``, or the good end's
   own rounds over their budget: the ends are wrong (exit 2, with the measurements).
2. binary search for the first prefix worse than the good end. A prefix that does not build or
   boot, or is still *unknown* at the step's cap, is skipped (``git bisect skip``): the next
   untested prefix nearest the middle is measured instead; when every prefix between the known
   good and bad ones is skipped the culprit is one of them and the report says which.
3. confirmation (KernelCI's rule), before a culprit is named: the culprit against its parent is
   *worse* in ``repeats`` separate measurements, and the bad end without the culprit is same as the
   good end. When the revert does not apply (a later patch depends on the culprit) the report says
   so and rests on the culprit-against-parent evidence. When the culprit against its parent is not
   worse, the first worse prefix is reported with "the regression may be spread" — never a guess.

An interrupted bisect resumes from its state file: the log of every measurement made. The search
is replayed against the log (a deterministic search asks for the same measurements in the same
order) and only the first measurement not in the log goes to the board.

The same determinism lets a publisher that did not run the bisect re-decide it (``--replay``): a
pull request's bisect ran the PR's series on a lab board, so everything it wrote is untrusted
data. The search runs again with a measure that re-decides step k from the rounds' result files
in ``steps/NN_…/`` (``rtgate.ab.loop.ABRun.replay``, with the planned rounds fixed before the
bisect began, ``--planned-rounds``), after checking that directory is the step the search asks
for at that point. Its state file, ab.json, ab.md and bisect.json are never read.

The rooms: ``search`` (the search, pure), ``state`` (its state file), ``doc`` (bisect.json, the
one model, and a variant's words), ``patches`` (the series' patches as the document names them),
``render`` (the Markdown), ``measure`` (a step on a board, or re-decided from its rounds),
``run`` (the engine `rtgate bisect` calls with its ``settings``).
"""
