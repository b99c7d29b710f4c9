"""Ingest skips one bad record instead of aborting, never echoes a huge value, and a
forced re-ingest leaves no stale results (issue 15, item 5). The real CLI throughout."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from conftest import BIN, cli_env
from gridbench.jobflow.events.trial_log import read_trial_log
from test_ingest_helpers import T0_NS, record, write_report

BIG = "x" * (5 * 1024 * 1024)


def _gb(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args], env=cli_env(tmp / "results"), capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def _client(tmp: Path, ids: list[str]) -> Path:
    """The submitter's events for jobs j0.. acknowledged with CE ids ``ids``, 1 job/s."""
    lines = []
    for i, ce in enumerate(ids):
        t = T0_NS + i * 1_000_000_000
        lines.append({"job": f"j{i}", "stage": "submit", "t": t, "source": "client"})
        lines.append({"job": f"j{i}", "stage": "submit_ack", "t": t + 5_000_000,
                      "source": "client", "attrs": {"backend_id": ce}})  # fmt: skip
        lines.append({"job": f"j{i}", "stage": "client_done", "t": t + 9 * 10**9,
                      "source": "client"})  # fmt: skip
    path = tmp / "client.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _ingest_json(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "ingest.json").read_text())
    return data


ZONES = ("posixrules", "localtime", "right/UTC", "Mars/Olympus")


def test_a_report_zone_polars_cannot_apply_skips_its_records_not_the_ingest(
    tmp_path: Path,
) -> None:
    reports = tmp_path / "ce"
    for i, zone in enumerate(ZONES):  # one report per zone, each with one record
        write_report(reports / f"r{i}.xml", [record("job_entry", f"ce{i}",
                     "2024-06-10 12:00:02")], timezone=zone)  # fmt: skip
    write_report(reports / "ok.xml", [record("job_entry", "ce9", "2024-06-10 12:00:03")])
    ids = [f"ce{i}" for i in range(len(ZONES))] + ["ce9"]
    out = tmp_path / "run"
    p = _gb(tmp_path, "ingest", "edgi", "--client", str(_client(tmp_path, ids)),
            "--reports", f"ce={reports}", "--out", str(out))  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    info = _ingest_json(out)
    assert info["stats"]["bad_records"] == len(ZONES)
    for i, zone in enumerate(ZONES):
        assert any(f"unknown report timezone {zone!r}" in w for w in info["warnings"]), zone
        assert any(f"r{i}.xml:2: the report's timezone is unknown; record skipped" in w
                   for w in info["warnings"])  # fmt: skip
    ev = read_trial_log(out / "trials" / "ingested")
    events = set(zip(ev["job"], ev["stage"], strict=True))
    assert (f"j{len(ZONES)}", "ce_entry") in events  # the GMT report's record is kept
    assert all((f"j{i}", "ce_entry") not in events for i in range(len(ZONES)))


def test_a_time_that_overflows_in_its_zone_skips_that_line(tmp_path: Path) -> None:
    good = [{"job": "a", "stage": s, "t": T0_NS + i, "source": "client"}
            for i, s in enumerate(("submit", "client_done"))]  # fmt: skip
    bad = [
        {"job": "b", "stage": "submit", "time": "9999-12-31T23:59:59-23:59", "source": "client"},
        {"job": "c", "stage": "submit", "time": "0001-01-01T00:00:00+23:59", "source": "client"},
        {"job": "d", "stage": "submit", "time": "2262-04-12T00:00:00Z", "source": "client"},
    ]
    src = tmp_path / "ev.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in good + bad))
    out = tmp_path / "run"
    p = _gb(tmp_path, "ingest", "jsonl", str(src), "--out", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    info = _ingest_json(out)
    assert info["stats"]["bad_lines"] == 3 and info["stats"]["events"] == 2
    assert sum("out of range" in w for w in info["warnings"]) == 3


def test_a_5_mb_value_is_cut_in_warnings_output_and_ingest_json(tmp_path: Path) -> None:
    reports = tmp_path / "ce"
    write_report(reports / "a.xml", [record("job_entry", "ce1", "2024-06-10 12:00:02")],
                 timezone=BIG)  # fmt: skip
    write_report(reports / "b.xml", [record(BIG, "ce2", "2024-06-10 12:00:03"),
                                     record("job_entry", "ce2", BIG)])  # fmt: skip
    out = tmp_path / "run"
    p = _gb(tmp_path, "ingest", "edgi", "--client", str(_client(tmp_path, ["ce1", "ce2"])),
            "--reports", f"ce={reports}", "--out", str(out))  # fmt: skip
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert len(p.stdout) + len(p.stderr) < 20_000
    assert "…" in p.stdout + p.stderr
    assert len((out / "ingest.json").read_text()) < 20_000
    warnings = _ingest_json(out)["warnings"]
    assert any("unknown report timezone 'xxx" in w and "…" in w for w in warnings)
    assert any("bad dt 'xxx" in w and "…" in w for w in warnings)


def test_a_5_mb_value_in_a_kept_ingest_is_cut_in_ingest_json(tmp_path: Path) -> None:
    reports = tmp_path / "ce"
    write_report(reports / "a.xml", [record(BIG, "ce1", "2024-06-10 12:00:02")])
    write_report(reports / "b.xml", [record("job_entry", "ce2", "2024-06-10 12:00:03")])
    out = tmp_path / "run"
    p = _gb(tmp_path, "ingest", "edgi", "--client", str(_client(tmp_path, ["ce1", "ce2"])),
            "--reports", f"ce={reports}", "--out", str(out))  # fmt: skip
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert len(p.stdout) + len(p.stderr) < 20_000
    text = (out / "ingest.json").read_text()
    assert len(text) < 20_000
    assert any("unknown event 'xxx" in w and "…" in w for w in _ingest_json(out)["warnings"])


def test_ingest_force_over_an_analysed_run_removes_its_stale_results(tmp_path: Path) -> None:
    def events(n: int) -> Path:
        src = tmp_path / f"ev{n}.jsonl"
        src.write_text("".join(
            json.dumps({"job": f"j{j}", "stage": s, "t": T0_NS + j * 10**9 + k * 10**8,
                        "source": "client"}) + "\n"
            for j in range(n) for k, s in enumerate(("submit", "client_done"))
        ))  # fmt: skip
        return src

    out = tmp_path / "run"
    assert _gb(tmp_path, "ingest", "jsonl", str(events(10)), "--out", str(out)).returncode == 0
    assert _gb(tmp_path, "analyze", str(out)).returncode in (0, 1)
    assert (out / "metrics.json").exists() and (out / "report.html").exists()
    p = _gb(tmp_path, "ingest", "jsonl", str(events(3)), "--out", str(out), "--force")
    assert p.returncode == 0, p.stderr
    for stale in ("metrics.json", "report.json", "report.html", "tables"):
        assert not (out / stale).exists(), stale
    shown = _gb(tmp_path, "show", str(out))
    assert shown.returncode == 0 and "not analysed yet" in shown.stdout


def test_ingest_force_never_overwrites_a_measured_run_or_another_folder(
    jobflow_run: Path, tmp_path: Path
) -> None:
    """--force replaces only what ingest made: over a measured run (its trials, metrics and
    report) or a folder without ingest.json it refuses, and nothing there changes."""
    from family_runs import copy_run

    src = tmp_path / "ev.jsonl"
    src.write_text("".join(
        json.dumps({"job": f"j{j}", "stage": s, "t": T0_NS + j * 10**9 + k * 10**8,
                    "source": "client"}) + "\n"
        for j in range(3) for k, s in enumerate(("submit", "client_done"))
    ))  # fmt: skip
    run = copy_run(jobflow_run, tmp_path / "results")
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    p = _gb(tmp_path, "ingest", "jsonl", str(src), "--out", str(run), "--force")
    assert p.returncode == 2 and "holds measured trials (p00-t00" in p.stderr, p.stderr
    assert {q: q.read_bytes() for q in run.rglob("*") if q.is_file()} == before
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    p = _gb(tmp_path, "ingest", "jsonl", str(src), "--out", str(other), "--force")
    assert p.returncode == 2 and "has no ingest.json" in p.stderr, p.stderr
    assert (other / "notes.txt").read_text() == "keep me" and not (other / "trials").exists()


def test_a_json_line_with_a_lone_surrogate_or_nan_is_skipped_with_its_line(
    tmp_path: Path,
) -> None:
    def line(job: str, stage: str, k: int, attrs: str = "{}") -> str:
        t = T0_NS + k * 10**8
        return f'{{"job":"{job}","stage":"{stage}","t":{t},"source":"client","attrs":{attrs}}}\n'

    src = tmp_path / "ev.jsonl"
    src.write_text(
        line("j0", "submit", 0) + line("j0", "client_done", 1)
        + line("j1", "submit", 2) + line("j1", "client_done", 3)
        + line("j\\ud800", "submit", 4)  # line 5: valid JSON, no encodable string
        + line("j2", "submit", 5, '{"why":"\\udfff"}')  # line 6
        + line("j2", "client_done", 6, '{"k":NaN}')  # line 7: NaN is no JSON number
    )  # fmt: skip
    out = tmp_path / "run"
    p = _gb(tmp_path, "ingest", "jsonl", str(src), "--out", str(out))
    assert p.returncode == 0, p.stderr
    warned = " ".join(_ingest_json(out)["warnings"])
    assert "ev.jsonl:5: 'job' holds a lone surrogate" in warned, warned
    assert "ev.jsonl:6: 'attrs' holds a lone surrogate" in warned, warned
    assert "ev.jsonl:7: not valid JSON (NaN is not a JSON number)" in warned, warned
    assert sorted(set(read_trial_log(out / "trials" / "ingested")["job"])) == ["j0", "j1"]
