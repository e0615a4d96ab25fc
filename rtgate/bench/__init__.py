"""The local runner: a scenario's loads and cyclictest on this machine, the result assembled
(`bench/run.py` is `rtgate bench`'s engine; every board driver reuses its pieces)."""
