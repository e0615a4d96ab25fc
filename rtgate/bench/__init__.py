"""`rtgate bench`: run cyclictest under a scenario's loads and write a normalized result."""
