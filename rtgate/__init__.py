"""rtgate: a latency-regression gate for real-time Linux."""

__version__ = "0.1.0"
