"""``gridbench collect`` reads experiment.json's ``agents.logs``, foreign input like every
store file: an entry that is no mapping, a path to a device (``/dev/zero`` once filled the
disk at 1 GB/s) or a file that is no event log is one named error per agent, and the
trial's own log is left as it was. A real job-flow run of the session, copied first."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from family_runs import copy_run, gb


def test_collect_refuses_devices_malformed_entries_and_foreign_files(
    jobflow_run: Path, tmp_path: Path
) -> None:
    run = copy_run(jobflow_run, tmp_path / "results")
    foreign = tmp_path / "passwd"
    foreign.write_text("root:x:0:0:root:/root:/bin/bash\n")
    host = socket.gethostname()
    exp = json.loads((run / "experiment.json").read_text())
    exp["agents"] = {
        "kind": "scheduler",
        "logs": {
            "p00-t00": {
                "agent-0": {"path": "/dev/zero", "host": host},
                "agent-1": "x",
                "agent-2": [1, 2],
                "agent-3": {"path": str(foreign), "host": host},
            }
        },
    }
    (run / "experiment.json").write_text(json.dumps(exp))
    log = run / "trials" / "p00-t00" / "events.arrows"
    before = log.read_bytes()
    p = gb(run.parent, "collect", str(run))
    out = p.stdout + p.stderr
    assert p.returncode == 3, out[-3000:]  # EXIT_BACKEND: some agents' logs not collected
    assert "Traceback" not in out and "internal error" not in out, out[-3000:]
    assert "agent-0: " in p.stderr and "/dev/zero is not a regular file" in p.stderr, p.stderr
    assert "agent-1: its entry is not a mapping" in p.stderr, p.stderr
    assert "agent-2: its entry is not a mapping" in p.stderr, p.stderr
    assert "agent-3: " in p.stderr and "event log is not valid CSV" in p.stderr, p.stderr
    assert "p00-t00: 0 events merged" in p.stdout
    assert log.read_bytes() == before
    copied = run / "agents" / "agent-0"
    assert not copied.exists() or sum(f.stat().st_size for f in copied.iterdir()) == 0


def test_collect_and_export_of_another_familys_run_name_its_commands(
    io_run: Path, net_run: Path, tmp_path: Path
) -> None:
    for run, kind in ((io_run, "io"), (net_run, "net")):
        before = sorted(p.relative_to(run) for p in run.rglob("*"))
        for command in ("collect", "export"):
            p = gb(tmp_path, command, str(run))
            assert p.returncode == 2, p.stdout + p.stderr
            assert f"'gridbench {command}' does not apply to {kind} runs" in p.stderr
            assert f"see 'gridbench {kind} --help'" in p.stderr
            assert "Traceback" not in p.stderr
        assert sorted(p.relative_to(run) for p in run.rglob("*")) == before
