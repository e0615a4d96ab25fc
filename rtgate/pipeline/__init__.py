"""The pipeline: build → deploy → boot → bench → restore → check, for every flavor × scenario.

It is a thin loop over the stages: the kernel stage builds (or takes from the cache, or from
``--kernels``), the board stage measures, the gate judges. An infrastructure failure of one run
(no boot, wrong release, timeout) is recorded and the loop goes on, so one stuck emulator does
not hide the verdicts of the other runs; it still makes the whole pipeline exit 3.

The preemption-model sweep (``sweep``) is the same loop over models instead of flavors.

The rooms: ``settings`` (what `rtgate pipeline` and `rtgate sweep` are asked), ``kernels``
(where a flavor's kernel comes from, and what a built one can do), ``plan`` (every flavor ×
scenario resolved before any build or boot, printable as YAML), ``engine`` (``pipeline``),
``render`` (comparison.md), and the sweep's ``sweepplan``, ``sweep`` (its engine) and
``sweeprender`` (sweep.md, its plots and page).
"""
