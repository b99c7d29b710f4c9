"""A trial's sample files (client and server CPU/RSS) are foreign input: read when they
are regular files, never through a link."""

from __future__ import annotations

from pathlib import Path

from gridbench.jobflow.analysis.load import read_resources, read_server_resources
from gridbench.jobflow.run.resources import RESOURCES_FILE
from gridbench.jobflow.run.server_resources import SERVER_RESOURCES_FILE

CLIENT = "t_ns,cpu_percent,rss_bytes,children\n1,50.0,1000,0\n2,70.0,2000,1\n"
SERVER = "t_ns,label,pid,cpu_percent,rss_bytes,state\n1,slurmctld,7,10.0,5000,running\n"


def test_sample_files_are_read(tmp_path: Path) -> None:
    (tmp_path / RESOURCES_FILE).write_text(CLIENT, encoding="utf-8")
    (tmp_path / SERVER_RESOURCES_FILE).write_text(SERVER, encoding="utf-8")
    client = read_resources(tmp_path)
    server = read_server_resources(tmp_path)
    assert client is not None and client["cpu_percent"].to_list() == [50.0, 70.0]
    assert server is not None and server["label"].to_list() == ["slurmctld"]


def test_linked_or_missing_sample_files_are_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "c.csv").write_text(CLIENT, encoding="utf-8")
    (outside / "s.csv").write_text(SERVER, encoding="utf-8")
    trial = tmp_path / "trial"
    trial.mkdir()
    assert read_resources(trial) is None and read_server_resources(trial) is None
    (trial / RESOURCES_FILE).symlink_to(outside / "c.csv")
    (trial / SERVER_RESOURCES_FILE).symlink_to(outside / "s.csv")
    assert read_resources(trial) is None and read_server_resources(trial) is None
