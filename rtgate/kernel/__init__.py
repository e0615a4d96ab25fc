"""Kernel builds: a target (kernel/targets/) × flavor × source × patch series, resolved into a
plan and built.

`rtgate.kernel.build.build()` is the entry point for other stages; `rtgate kernel` is the CLI.
"""
