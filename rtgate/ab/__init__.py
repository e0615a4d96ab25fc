"""The A/B gate: the base kernel (A) against the candidate (B) on one board, in interleaved
rounds, until the A/B decision is made or the time is up.

``settings`` (what a run is asked), ``loop`` (the rounds, measured or replayed), ``plan``
(margins, alpha and the planned rounds), ``render`` (ab.md) and ``doc`` (ab.json, a model with
a committed schema).
"""
