"""A campaign's folder and its units' run folders are foreign input (issue 41's
adversarial pass): documents and status read them whatever they hold (wrong types, a
damaged or huge file, a link or a FIFO planted where a file or a run folder is expected, a
run deleted by hand, names that try to reach the file system, text that tries to break a
page) and answer with one clear message, never an internal error, a hang or a file
written outside the store."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from campaign_helpers import campaign_dirs, gb, jobflow_spec, summary
from conftest import BIN, cli_env

pytestmark = pytest.mark.xdist_group("campaign-hostile")  # one real campaign, copied

CAMPAIGN = """\
name: hostile
components:
  - id: aem
    units:
      - {id: flow, spec: jobflow.yaml}
"""


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A campaign that ran one job-flow unit on the embedded reference grid (passed)."""
    base = tmp_path_factory.mktemp("hostile")
    jobflow_spec(base)
    camp = base / "campaign.yaml"
    camp.write_text(CAMPAIGN, encoding="utf-8")
    p = gb(base / "results", "campaign", "run", str(camp))
    assert p.returncode == 0, p.stdout + p.stderr
    return base


class Store:
    """A copy of the made campaign to damage: its results root, campaign folder and run."""

    def __init__(self, made: Path, tmp: Path) -> None:
        self.root = tmp / "results"
        shutil.copytree(made / "results", self.root, symlinks=True)
        [self.camp] = campaign_dirs(self.root)
        [self.run] = [p for p in self.root.iterdir() if p.name != "campaigns"]

    def state(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.camp / "campaign.json").read_text())
        return data

    def set_state(self, data: dict[str, Any]) -> None:
        (self.camp / "campaign.json").write_text(json.dumps(data))

    def log(self, *events: dict[str, Any]) -> None:
        with open(self.camp / "log.jsonl", "a", encoding="utf-8") as fh:
            for e in events:
                fh.write(json.dumps(e) + "\n")

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return gb(self.root, *args, timeout=timeout)

    def docs(self) -> str:
        return "\n".join(p.read_text() for p in sorted((self.camp / "docs").iterdir()))


@pytest.fixture
def store(made: Path, tmp_path: Path) -> Store:
    return Store(made, tmp_path)


def _clean(p: subprocess.CompletedProcess[str]) -> str:
    out = p.stdout + p.stderr
    assert "Traceback" not in out and "internal error" not in out, out
    return " ".join(out.split())


def _attempt(unit: str, attempt: int, outcome: str, **fields: Any) -> list[dict[str, Any]]:
    """A started and ended attempt as the log records one (with ``fields`` on its end)."""
    start = {"event": "start", "unit": unit, "rep": 1, "attempt": attempt}
    start |= {"at": "2026-01-01T00:00:00+00:00"}
    end = {"event": "end", "unit": unit, "rep": 1, "attempt": attempt, "outcome": outcome}
    end |= {"at": "2026-01-01T00:00:05+00:00", "reasons": ["made up"], **fields}
    return [start, end]


# -- wrong types ---------------------------------------------------------------------------


def _units_a_list(s: Store) -> None:
    s.set_state({**s.state(), "units": ["aem.flow"]})


def _record_fields(s: Store) -> None:
    st = s.state()
    st["units"]["aem.flow"].update(
        hosts=5, sets=7, estimate_s=1e308, family=["x"], command={"a": 1}, spec_path=3
    )
    s.set_state(st)


def _estimate_past_any_float(s: Store) -> None:
    st = s.state()
    st["units"]["aem.flow"]["estimate_s"] = 10**400
    s.set_state(st)


def _record_a_string(s: Store) -> None:
    st = s.state()
    st["units"]["aem.flow"] = "ab"
    s.set_state(st)


def _progress_and_runner(s: Store) -> None:
    s.set_state({**s.state(), "progress": "[red]x", "running": 5, "runner": [1]})


def _log_fields(s: Store) -> None:
    start, end = _attempt("aem.flow", 9, "failed", reasons=5)
    s.log({**start, "hosts": 5}, end, {"event": "resume", "rerun": 3})


def _times_with_and_without_zone(s: Store) -> None:
    start, end = _attempt("aem.flow", 9, "failed")
    s.log({**start, "at": "2026-01-01T00:00:00"}, end)


def _previous_summary(s: Store) -> None:
    """An earlier campaign of the same name whose summary.json has other types."""
    prev = s.camp.parent / "20200101T000000Z-hostile"
    shutil.copytree(s.camp, prev, symlinks=True)
    data = json.loads((prev / "docs" / "summary.json").read_text())
    data.update(counts=[1], verdicts="aem.flow", total="x")
    (prev / "docs" / "summary.json").write_text(json.dumps(data))


WRONG_TYPES: dict[str, Callable[[Store], None]] = {
    "units a list": _units_a_list,
    "a record's fields": _record_fields,
    "a record a string": _record_a_string,
    "an estimate past any float": _estimate_past_any_float,
    "progress and runner": _progress_and_runner,
    "the log's fields": _log_fields,
    "times with and without a zone": _times_with_and_without_zone,
    "the previous campaign's summary": _previous_summary,
}


@pytest.mark.parametrize("case", sorted(WRONG_TYPES))
def test_wrong_types_are_read_without_an_internal_error(store: Store, case: str) -> None:
    WRONG_TYPES[case](store)
    for verb in ("report", "status"):
        p = store.cli("campaign", verb, store.camp.name)
        _clean(p)
        assert p.returncode in (0, 1), p.stdout + p.stderr
    assert summary(store.camp)["verdicts"]["aem.flow"] in ("passed", "failed")


def test_metrics_of_another_form_make_the_unit_an_error_naming_the_file(store: Store) -> None:
    m = json.loads((store.run / "metrics.json").read_text())
    m["thresholds"] = "x"
    (store.run / "metrics.json").write_text(json.dumps(m))
    p = store.cli("campaign", "report", store.camp.name)
    said = _clean(p)
    assert p.returncode == 1, said
    [incident] = summary(store.camp)["incidents"]
    assert incident["kind"] == "error"
    assert str(store.run / "metrics.json") in incident["summary"]
    assert f"gridbench analyze {store.run.name}" in incident["summary"]


@pytest.mark.parametrize("how", ["not JSON", "a link"])
def test_damaged_exclusions_are_an_incident_not_the_end_of_the_documents(
    store: Store, how: str, tmp_path: Path
) -> None:
    path = store.run / "exclusions.jsonl"
    if how == "a link":
        (tmp_path / "elsewhere.jsonl").write_text("")
        path.symlink_to(tmp_path / "elsewhere.jsonl")
    else:
        path.write_text('{"action": "exclude", "trial": \n')
    p = store.cli("campaign", "report", store.camp.name)
    said = _clean(p)
    assert p.returncode == 0, said  # the outcome stands: metrics.json applied them
    s = summary(store.camp)
    assert s["verdicts"] == {"aem.flow": "passed"}
    [incident] = s["incidents"]
    assert incident["kind"] == "damaged" and incident["severity"] == "minor"
    assert any(str(path) in e for e in incident["evidence"]), incident


def test_a_run_deleted_by_hand_is_named_with_the_fix(store: Store) -> None:
    shutil.rmtree(store.run)
    p = store.cli("campaign", "report", store.camp.name)
    _clean(p)
    [incident] = summary(store.camp)["incidents"]
    assert f"{store.run} is no longer in the store" in incident["summary"]
    assert "--new" in incident["summary"]


def test_a_run_folder_planted_as_a_link_is_not_read(store: Store, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    shutil.move(str(store.run), outside)
    store.run.symlink_to(outside)
    p = store.cli("campaign", "report", store.camp.name)
    _clean(p)
    [incident] = summary(store.camp)["incidents"]
    assert "symbolic link" in incident["summary"] and "not followed" in incident["summary"]


def test_a_huge_error_text_is_quoted_short(store: Store) -> None:
    (store.run / "metrics.json").unlink()
    exp = json.loads((store.run / "experiment.json").read_text())
    exp["error"] = "<b>boom</b> " * 250_000  # 3 MB
    (store.run / "experiment.json").write_text(json.dumps(exp))
    _clean(store.cli("campaign", "report", store.camp.name))
    docs = store.camp / "docs"
    for page in ("incidents.md", "incidents.html", "summary.html", "case-aem.flow.html"):
        assert (docs / page).stat().st_size < 100_000, page
    assert "more characters" in (docs / "incidents.md").read_text()
    assert "<b>boom" not in (docs / "incidents.html").read_text()


def test_a_huge_reason_in_exclusions_or_the_log_is_quoted_short(store: Store) -> None:
    line = {"action": "exclude", "trial": "p00-t01", "reason": "<i>down</i> | " * 200_000}
    (store.run / "exclusions.jsonl").write_text(json.dumps(line) + "\n")
    store.log(*_attempt("aem.flow", 6, "interrupted", reasons=["x" * 3_000_000] * 3))
    _clean(store.cli("campaign", "report", store.camp.name))
    for page in (store.camp / "docs").iterdir():
        assert page.stat().st_size < 200_000, page.name
    incidents = (store.camp / "docs" / "incidents.md").read_text()
    assert "p00-t01 excluded by hand" in incidents and "more characters" in incidents


# -- planted links and FIFOs, huge files ----------------------------------------------------


def _error_attempt_with_log(store: Store) -> Path:
    store.log(*_attempt("aem.flow", 7, "error"))
    return store.camp / "units" / "aem.flow.r1.a7.log"


def test_a_fifo_planted_as_a_unit_s_log_does_not_hang_the_documents(store: Store) -> None:
    os.mkfifo(_error_attempt_with_log(store))
    p = store.cli("campaign", "report", store.camp.name, timeout=60)
    _clean(p)
    [incident] = [i for i in summary(store.camp)["incidents"] if i["attempt"] == "aem.flow.r1.a7"]
    assert any("not read" in e and "not a regular file" in e for e in incident["evidence"])


def test_a_huge_unit_log_is_read_by_its_tail(store: Store) -> None:
    log = _error_attempt_with_log(store)
    with open(log, "wb") as fh:
        fh.seek(256 * 1024 * 1024)  # sparse: 256 MiB of NUL, then the last line
        fh.write(b"\nthe last line the unit printed\n")
    code = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, timeout=120)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, str(BIN), "campaign", "report", store.camp.name],
        env=cli_env(store.root),
        capture_output=True,
        text=True,
        timeout=180,
    )
    peak_mib = int(p.stdout.split()[-1]) / 1024
    assert peak_mib < 200, f"the report took {peak_mib:.0f} MiB for a 256 MiB log"
    [incident] = [i for i in summary(store.camp)["incidents"] if i["attempt"] == "aem.flow.r1.a7"]
    assert "log: the last line the unit printed" in incident["evidence"]


def test_a_spec_path_planted_as_a_fifo_does_not_hang_the_documents(
    store: Store, tmp_path: Path
) -> None:
    fifo = tmp_path / "spec.fifo"
    os.mkfifo(fifo)
    st = store.state()
    st["units"]["aem.flow"]["spec_path"] = str(fifo)
    store.set_state(st)
    _clean(store.cli("campaign", "report", store.camp.name, timeout=60))
    case = (store.camp / "docs" / "case-aem.flow.md").read_text()
    assert f"the spec file {fifo} cannot be read" in case


@pytest.mark.parametrize("how", ["missing", "a FIFO"])
def test_the_campaign_file_s_copy_missing_or_a_fifo_is_one_clear_error(
    store: Store, how: str
) -> None:
    copy = store.camp / "campaign.yaml"
    copy.unlink()
    if how == "a FIFO":
        os.mkfifo(copy)
    p = store.cli("campaign", "report", store.camp.name, timeout=60)
    said = _clean(p)
    assert p.returncode == 2 and f"error: {copy}" in said, said
    assert ("copy the campaign file there again" if how == "missing" else "not a regular") in said


def test_the_documents_are_not_written_through_a_planted_docs_link(
    store: Store, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(store.camp / "docs")
    (store.camp / "docs").symlink_to(outside)
    p = store.cli("campaign", "report", store.camp.name)
    said = _clean(p)
    assert p.returncode == 2 and "symbolic link" in said and "remove the link" in said
    assert list(outside.iterdir()) == []


# -- names from the log ---------------------------------------------------------------------


def test_names_in_the_log_never_reach_the_file_system(store: Store) -> None:
    secret = store.root.parent / "secret.r1.a1.log"
    secret.write_text("SECRET CONTENT\n")
    # units/../../../../secret.r1.a1.log is that file
    store.log(*_attempt("../../../../secret", 1, "error"))
    store.log(*_attempt("aem.flow", 8, "killed", run="/etc"))
    _clean(store.cli("campaign", "report", store.camp.name))
    assert "SECRET" not in store.docs()
    assert '"/etc"' not in json.dumps(summary(store.camp))


def test_a_pid_planted_in_the_log_is_never_stopped(store: Store) -> None:
    bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        created = psutil.Process(bystander.pid).create_time()
        store.log(  # a start with no end: what a campaign killed midway leaves
            {
                "event": "start",
                "unit": "aem.flow",
                "rep": 1,
                "attempt": 9,
                "at": "2026-01-01T00:00:00+00:00",
                "pid": bystander.pid,
                "create_time": created,
            }
        )
        p = store.cli("cleanup", store.camp.name, "--yes")
        assert p.returncode == 0 and "still runs" not in _clean(p), p.stdout + p.stderr
        time.sleep(0.5)
        assert bystander.poll() is None, "cleanup stopped a process the campaign never started"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(bystander.pid, signal.SIGKILL)
        bystander.wait()


# -- writers ------------------------------------------------------------------------------


def test_a_unit_s_log_is_never_written_through_a_planted_link(tmp_path: Path) -> None:
    from gridbench.campaign.model import parse_campaign, resolve_units
    from gridbench.campaign.run_plan import Plan
    from gridbench.campaign.runner import CampaignRunner
    from gridbench.errors import ResultsError

    jobflow_spec(tmp_path)
    parsed = parse_campaign(CAMPAIGN, str(tmp_path / "campaign.yaml"), tmp_path)
    units = resolve_units(parsed)
    runner = CampaignRunner(parsed, Plan(units, {}), tmp_path / "results")
    folder = runner.open()
    runner.record_event("begin")
    victim = tmp_path / "victim.txt"
    victim.write_text("kept\n")
    (folder.path / "units" / "aem.flow.r1.a1.log").symlink_to(victim)
    try:
        with pytest.raises(ResultsError, match="symbolic link"):
            runner._start(units[0], 1)
    finally:
        for r in runner.running:
            os.killpg(r.proc.pid, signal.SIGKILL)
            r.proc.wait()
    assert victim.read_text() == "kept\n"


def test_a_link_to_a_run_is_not_made_through_a_planted_runs_link(tmp_path: Path) -> None:
    from gridbench.campaign.folder import CampaignDir
    from gridbench.errors import ResultsError

    folder = CampaignDir.create(tmp_path / "results", "x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (folder.path / "runs").rmdir()
    (folder.path / "runs").symlink_to(outside)
    with pytest.raises(ResultsError, match="symbolic link"):
        folder.link("aem.flow.r1.a1", "20260101T000000Z-x")
    assert list(outside.iterdir()) == []


def test_a_link_named_like_a_unit_s_run_is_not_taken_for_it(tmp_path: Path) -> None:
    from gridbench.campaign.model import parse_campaign, resolve_units
    from gridbench.campaign.run_plan import Plan
    from gridbench.campaign.runner import CampaignRunner

    jobflow_spec(tmp_path)
    parsed = parse_campaign(CAMPAIGN, str(tmp_path / "campaign.yaml"), tmp_path)
    units = resolve_units(parsed)
    root = tmp_path / "results"
    runner = CampaignRunner(parsed, Plan(units, {}), root)
    runner.open()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / f"20990101T000000Z-{units[0].run_name}").symlink_to(outside)
    assert runner._find_run("aem.flow", set()) is None
    (root / f"20990101T000001Z-{units[0].run_name}").mkdir()
    assert runner._find_run("aem.flow", set()) == f"20990101T000001Z-{units[0].run_name}"


def test_markdown_keeps_a_spec_with_backticks_inside_its_fence() -> None:
    from gridbench.campaign.render import Document, Pre, document_md

    text = "name: x\n# ````\n| a | b |\n````\n<script>y</script>\n"
    md = document_md(Document("case-x", "t", "TC-x", (Pre(text),)))
    lines = md.splitlines()
    opening = next(i for i, line in enumerate(lines) if line.startswith("```"))
    fence = lines[opening]
    closing = lines.index(fence, opening + 1)
    assert lines[opening + 1 : closing] == text.rstrip().splitlines()
