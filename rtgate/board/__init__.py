"""Boards: where a kernel is deployed, booted and measured (local host, QEMU, Raspberry Pi 5)."""
