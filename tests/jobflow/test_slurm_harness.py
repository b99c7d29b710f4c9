"""The test cluster harness itself: a daemon that cannot start is reported with its log."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from slurm_cluster import ClusterError, SlurmCluster, slurm_conf


def test_conf_has_the_lines_that_matter(tmp_path: Path) -> None:
    c = SlurmCluster(tmp_path)
    lines = set(slurm_conf(c).splitlines())
    for want in (
        "LogTimeFormat=iso8601_ms",
        "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0",
        "DefMemPerCPU=100",
        "SlurmdParameters=config_overrides",
        "MaxJobCount=100000",
        "MinJobAge=600",
        f"SlurmctldPort={c.ctld_port}",
        f"AuthInfo=socket={c.munge_socket}",
    ):
        assert want in lines
    assert len({c.ctld_port, c.slurmd_port, c.dbd_port, c.db_port}) == 4


def test_a_daemon_that_cannot_start_fails_with_its_log(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        c = SlurmCluster(tmp_path, ctld_port=taken.getsockname()[1])
        try:
            with pytest.raises(ClusterError) as err:
                c.start()
        finally:
            c.stop()
    text = str(err.value)
    assert text.startswith("slurmctld did not start (exited 1")
    assert "Address already in use" in text
    assert c.procs == {}  # munged was stopped too
