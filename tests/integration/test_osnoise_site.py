"""The site shows an rtla osnoise run on its own metrics (issue 38): a real guest capture read by
the real `rtgate parse`, published by the real `rtgate report` (gnuplot draws its plots)."""

from __future__ import annotations

from pathlib import Path

from clirun import RunCli

CAPTURE = Path(__file__).parents[1] / "data" / "rtla" / "guest-osnoise-top.stdout"


def test_the_site_shows_os_noise_on_its_own_metrics(rtgate_cli: RunCli, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    proc = rtgate_cli("parse", CAPTURE, "--board", "qemu-arm64", "--virtual", "--scenario",
                      "osnoise-net", "--flavor", "rt", "-o", run / "result.json")
    assert proc.returncode == 0, proc.stderr
    budgets = tmp_path / "thresholds.yml"
    budgets.write_text(
        "schema: rtgate/thresholds/v3\nbudgets:\n"
        "  - {board: qemu-arm64, flavor: rt, scenario: osnoise-net, tool: osnoise,\n"
        "     max_single_noise_us: 20000, min_cpu_available_pct: 10, reason: noise}\n")
    proc = rtgate_cli("report", run, "--thresholds", budgets, "--out", tmp_path / "site")
    assert proc.returncode == 0, proc.stderr
    [page] = (tmp_path / "site" / "runs").glob("*/index.html")
    html = " ".join(page.read_text().split())
    assert "<h2>OS noise</h2>" in html and "<h2>Latency</h2>" not in html
    assert ('<tr><th>max_single_noise_us</th><td class="num">21178 µs</td> '
            '<td>≤ 20000 µs</td><td><span class="verdict verdict-fail">fail</span></td>') in html
    assert '<tr><th>min_cpu_available_pct</th><td class="num">13.95 %</td>' in html
    assert "<th>p99.99</th>" not in html  # no latency rows for a tool that measures none
