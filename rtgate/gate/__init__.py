"""The gate: latency budgets (``thresholds.yml``) and ``rtgate check``, which judges results."""
