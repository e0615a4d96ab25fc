"""KCIDB: a gate run as one KernelCI report (document), validated with kcidb-io, and sent to a
KCIDB-NG endpoint (send)."""
