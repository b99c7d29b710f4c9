"""Impossible data is flagged, and the work an input causes is bounded (issue 15, item 6).

Events go in through ``gridbench ingest jsonl`` and come out of ``gridbench analyze``,
both run as the real CLI.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from conftest import BIN, cli_env

T0 = 1_718_000_000_000_000_000
S = 1_000_000_000


def _gb(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args], env=cli_env(tmp / "results"), capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def _write(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def _event(job: int, stage: str, t: int) -> dict[str, Any]:
    return {"job": f"j{job}", "stage": stage, "t": t, "source": "client"}


def test_backwards_stamps_are_counted_flagged_and_left_out_of_latencies(
    tmp_path: Path,
) -> None:
    events = []
    for j in range(20):
        t = T0 + j * S
        # two jobs started running 2 s before they were submitted: time went backwards
        start = t - 2 * S if j < 2 else t + S // 2
        events += [_event(j, "submit", t), _event(j, "run", start), _event(j, "client_done", t + S)]
    src = _write(tmp_path / "ev.jsonl", events)
    ing = _gb(tmp_path, "ingest", "jsonl", str(src), "--out", str(tmp_path / "run"))
    assert ing.returncode == 0, ing.stderr
    a = _gb(tmp_path, "analyze", str(tmp_path / "run"), "--json")
    assert a.returncode in (0, 1), a.stderr
    trial = json.loads(a.stdout)["points"][0]["trials"][0]
    v = trial["validity"]
    assert trial["valid"] is False and v["backwards_jobs"] == 2
    assert any("2 job(s) reached run before submit" in r for r in v["reasons"])
    seg = trial["latency"]["submit->run"]
    assert seg["n"] == 18 and seg["min"] == 0.5  # the 18 honest jobs only, never -2 s
    other = trial["latency"]["run->client_done"]
    assert other["n"] == 18 and other["max"] == 0.5  # not 3 s (1 s overall - -2 s)


def test_a_chain_of_thousands_of_stages_is_refused_naming_the_cap(tmp_path: Path) -> None:
    events = [_event(j, f"stage{k}", T0 + k * 1000 + j) for j in range(5) for k in range(3000)]
    src = _write(tmp_path / "many.jsonl", events)
    p = _gb(tmp_path, "ingest", "jsonl", str(src), "--out", str(tmp_path / "run"))
    assert p.returncode == 2, p.stdout + p.stderr
    assert "3000 stages" in p.stderr and "at most 64 stages" in p.stderr
    assert "fix:" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "run" / "trials").exists()


def test_a_planted_trial_chain_of_thousands_of_stages_is_refused(tmp_path: Path) -> None:
    events = [_event(j, s, T0 + i * S + j) for j in range(5) for i, s in
              enumerate(("submit", "client_done"))]  # fmt: skip
    src = _write(tmp_path / "ev.jsonl", events)
    run = tmp_path / "run"
    assert _gb(tmp_path, "ingest", "jsonl", str(src), "--out", str(run)).returncode == 0
    info_file = run / "trials" / "ingested" / "trial.json"
    info = json.loads(info_file.read_text())
    stages = [{"name": f"s{k}", "source": "client"} for k in range(3000)]
    info["chain"] = {"stages": stages, "segments": []}
    info_file.write_text(json.dumps(info))
    a = _gb(tmp_path, "analyze", str(run), "--json")
    assert a.returncode == 2, a.stdout[-500:] + a.stderr
    assert "at most 64 stages" in a.stderr and "internal error" not in a.stderr
