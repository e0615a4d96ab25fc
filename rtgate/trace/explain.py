"""A trace section in words: the short paragraph a failed check carries (JUnit, Markdown)."""

from __future__ import annotations

from rtgate.result import Trace, TraceBreach
from rtgate.textfmt import fmt

# Frames and trace entries kept in a paragraph; the result and the raw trace hold them all.
MAX_FRAMES = 24
MAX_TAIL = 6


def headline(trace: Trace) -> str:
    version = f" {trace.version}" if trace.version else ""
    return (f"Trace at the breach ({trace.tool}{version}, stop at {fmt(trace.threshold_us)} µs, "
            f"follow-up run capped at {trace.cap_s} s)")


def breach(b: TraceBreach, *, with_stack: bool = True) -> str:
    where = f"CPU {b.cpu}" if b.cpu is not None else "a CPU"
    parts = [f"{where}: {'IRQ' if b.kind == 'irq' else 'thread'} latency {fmt(b.total_us)} µs"]
    shares = [f"{c.name} {fmt(c.us)} µs" + (f" ({fmt(c.share)} %)" if c.share is not None else "")
              for c in b.components if c.share is not None]
    if shares:
        parts.append("; ".join(shares))
    if b.blocking_task:
        parts.append(f"blocking task {b.blocking_task}")
    if b.stack and with_stack:
        more = len(b.stack) - MAX_FRAMES
        parts.append("stack (innermost first): " + " <- ".join(b.stack[:MAX_FRAMES])
                     + (f" <- … {more} more" if more > 0 else ""))
    if b.tail and with_stack:
        parts.append(f"{tail_label(b)}: " + " | ".join(b.tail[-MAX_TAIL:]))
    return "; ".join(parts)


def tail_label(b: TraceBreach) -> str:
    # Said every time: a list of functions reads like a stack, and this one is not.
    return (f"last {min(len(b.tail), MAX_TAIL)} trace entries on the CPU before the stop "
            "(oldest first; a trace tail, not a stack)")


def paragraph(trace: Trace) -> str:
    body = ([breach(b) for b in trace.breaches] if trace.breaches
            else [trace.note or "no analysis"])
    raw = f" Raw: {', '.join(trace.raw)}." if trace.raw else ""
    return f"{headline(trace)}: " + " | ".join(body) + "." + raw
