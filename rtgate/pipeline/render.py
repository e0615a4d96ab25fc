"""comparison.md: the flavors side by side per scenario, each against RT (the paper's headline
ratios), in words that stay true whichever kernel is faster."""

from __future__ import annotations

from rtgate.gate import markdown
from rtgate.gate.thresholds import flavor_of
from rtgate.result import Result


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.1f}x" if a is not None and b else "—"


def _versus(stock: float | None, rt: float | None) -> str:
    """RT's number against stock's in words that stay true whichever is larger: "2.2x lower than
    stock's", "2.5x higher than stock's" (a loaded emulator can make RT the slower one)."""
    if stock is None or rt is None or not stock or not rt:
        return "not compared (not measured on both kernels)"
    if stock >= rt:
        return f"{stock / rt:.1f}x lower than stock's"
    return f"{rt / stock:.1f}x higher than stock's"


def _num(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}".rstrip("0").rstrip(".")


def comparison(results: list[Result]) -> str:
    """Flavors side by side per scenario, each against RT: the paper's headline ratios."""
    lines = ["## rtgate pipeline: flavors compared", ""]
    for scenario in dict.fromkeys(r.scenario for r in results):
        rows = [r for r in results if r.scenario == scenario]
        rt = next((r for r in rows if flavor_of(r) == "rt"), None)
        board = rows[0].board
        virtual = " — virtual board, not a real-time claim" if board.virtual else ""
        lines += [f"### {markdown.code(board.name)} / {markdown.code(scenario)}{virtual}", "",
                  "| flavor | samples | avg µs | max µs | p99.99 µs | avg vs RT | max vs RT |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in rows:
            t = r.totals
            ref = rt.totals if rt else None
            lines.append(
                f"| {markdown.cell(flavor_of(r))} | {t.samples} | {_num(t.avg_us)} | "
                f"{_num(t.max_us)} | "
                f"{t.p99_99 if t.p99_99 else '—'} | "
                f"{_ratio(t.avg_us, ref.avg_us) if ref else '—'} | "
                f"{_ratio(t.max_us, ref.max_us) if ref else '—'} |")
        stock = next((r for r in rows if flavor_of(r) == "stock"), None)
        if rt and stock:
            lines += ["", f"PREEMPT_RT's maximum latency is "
                          f"{_versus(stock.totals.max_us, rt.totals.max_us)}, its average is "
                          f"{_versus(stock.totals.avg_us, rt.totals.avg_us)}. The Pi 5 paper "
                          "measured 294x and 2.49x lower on a Pi 5 under all-in load"
                          + ("; an emulator's ratios say nothing about a Pi." if board.virtual
                             else ".")]
        lines.append("")
    return "\n".join(lines)
