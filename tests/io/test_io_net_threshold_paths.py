"""A misspelled io or net threshold path is caught before anything runs, with a "did you
mean" and the spec's line (issue 21, item 3): against each family's metrics schema, keyed
as its analysis keys the figures thresholds read."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import BIN, cli_env
from gridbench.io import analysis as io_analysis
from gridbench.io import clients_analysis, posix_analysis
from gridbench.io.load import load_io_spec_text
from gridbench.io.threshold_paths import IoThresholds
from gridbench.io.threshold_paths import threshold_problem as io_problem
from gridbench.messaging import analysis as net_analysis
from gridbench.messaging.model import NetSpec
from gridbench.messaging.threshold_paths import NetThresholds
from gridbench.messaging.threshold_paths import threshold_problem as net_problem
from gridbench.thresholds import DEFAULT_SCOPE

ROOT = Path(__file__).resolve().parents[2]
IO_EXAMPLE = ROOT / "examples" / "io-seed-nfs.yaml"
NET_EXAMPLE = ROOT / "examples" / "net-loopback-quick.yaml"
TARGETS = ["nfs", "cand"]
NET = NetSpec(name="t")


def test_the_checked_scopes_are_the_evaluated_ones() -> None:
    io_scopes = io_analysis.threshold_scopes(io_analysis.threshold_document([]))
    io_scopes |= posix_analysis.threshold_scopes(posix_analysis.threshold_paths({}, []))
    io_scopes |= clients_analysis.threshold_scopes(clients_analysis.threshold_document(None))
    assert set(IoThresholds.model_fields) == set(io_scopes)
    net_scopes = set(net_analysis.threshold_scopes({})) - {DEFAULT_SCOPE}
    assert set(NetThresholds.model_fields) == net_scopes


def test_io_latency_percentiles_are_the_schema_fields() -> None:
    from gridbench.io.metrics_schema import Latency
    from gridbench.io.parse import PERCENTILES

    assert list(Latency.model_fields) == [name for name, _ in PERCENTILES]
    for name, _ in PERCENTILES:
        assert io_problem(f"matrix.cand.write.lat_ms.{name}", TARGETS) is None


@pytest.mark.parametrize(
    ("metric", "instead"),
    [
        ("matrix.cand.write.kbps.meen", "matrix.cand.write.kbps.mean"),
        ("matrix.cnd.write.speedup", "matrix.cand.write.speedup"),
        ("matrix.cand.wrte.speedup", "matrix.cand.write.speedup"),
        ("matrx.cand.read.speedup", "matrix.cand.read.speedup"),
        ("matrix.cand.read.speedupp", "matrix.cand.read.speedup"),
        ("bonnie.cand.rewrite.speedp", "bonnie.cand.rewrite.speedup"),
        (
            "concurrency.cand.write.2.last_done_kbps.meam",
            "concurrency.cand.write.2.last_done_kbps.mean",
        ),
        ("replay.cand.read.sync.4.kbps.men", "replay.cand.read.sync.4.kbps.mean"),
        ("foo.bar", None),  # io has no default scope: refused, nothing near
        ("matrix.cand.write.lat_ms.p9", "matrix.cand.write.lat_ms.p99"),
        ("concurrency.cand.write.2.lat_ms.p999x", "concurrency.cand.write.2.lat_ms.p999"),
        (
            "clients.series.cand.write.3.last_done_kbps.meen",
            "clients.series.cand.write.3.last_done_kbps.mean",
        ),
        ("clients.seris.cand.read.2.speedup", "clients.series.cand.read.2.speedup"),
        ("clients.series.cnd.read.2.scaling", "clients.series.cand.read.2.scaling"),
        ("clients.series.cand.raed.2.scaling", "clients.series.cand.read.2.scaling"),
        ("clients.same_file.cand.lat_ms.p99x", "clients.same_file.cand.lat_ms.p99"),
        ("clients.hosts.cand.write.lab-2.speedupp", "clients.hosts.cand.write.lab-2.speedup"),
        ("clients.lots", "clients.lost"),
    ],
)
def test_io_misspellings_are_named_with_what_was_meant(metric: str, instead: str | None) -> None:
    problem = io_problem(metric, TARGETS)
    assert problem is not None
    assert problem[1] == instead


@pytest.mark.parametrize(
    "metric",
    [
        "matrix.cand.write.kbps.mean",
        "matrix.cand.read.lat_ms.p99",
        "matrix.nfs.random_read.cpu_pct",
        "bonnie.cand.output_block.kbps.mean",
        "concurrency.cand.read.4.lat_ms.p99",
        "conformance.cand.open.rate",
        "replay.cand.write.nosync.1.speedup",
        "matrix.other_target.read.speedup",  # not a near miss of a declared target
        "clients.series.cand.write.3.last_done_kbps.mean",
        "clients.series.nfs.read.1.per_client_kbps.lab-1",
        "clients.same_file.cand.sum_kbps.mean",
        "clients.hosts.cand.random_read.lab-2.kbps.mean",
        "clients.lost",
    ],
)
def test_io_real_paths_pass(metric: str) -> None:
    assert io_problem(metric, TARGETS) is None


def test_a_target_name_may_hold_dots() -> None:
    targets = ["nfs", "cand.1", "nfs.v4"]
    assert io_problem("matrix.cand.1.read.speedup", targets) is None
    assert io_problem("bonnie.nfs.v4.rewrite.cpu_pct", targets) is None
    assert io_problem("matrix.nfs.v4.wrte.speedup", targets) == (
        "'matrix.nfs.v4.wrte' names nothing",
        "matrix.nfs.v4.write.speedup",
    )
    assert io_problem("clients.series.nfs.v4.write.2.scaling", targets) is None
    assert io_problem("clients.series.nfs.v4.wrte.2.scaling", targets) == (
        "'clients.series.nfs.v4.wrte' names nothing",
        "clients.series.nfs.v4.write.2.scaling",
    )


@pytest.mark.parametrize(
    ("metric", "instead"),
    [
        ("pingpong.tcp.host.1024.rtt_ms.p99x", "pingpong.tcp.host.1024.rtt_ms.p99"),
        ("pingpng.tcp.host.1024.floor.ratio", "pingpong.tcp.host.1024.floor.ratio"),
        ("pingpong.tcp.hots.1024.floor.ratio", "pingpong.tcp.host.1024.floor.ratio"),
        ("echo.grpc.host.netwrk.mean_ms", "echo.grpc.host.network.mean_ms"),
        ("echo_scaling.grpc.host.network.8.mean_mss", "echo_scaling.grpc.host.network.8.mean_ms"),
        ("burst.grpc.host.enque_ms.mean", "burst.grpc.host.enqueue_ms.mean"),
        ("transfer.tcp_stream.host.up.4.mb_s.mean", "transfer.tcp_streams.host.up.4.mb_s.mean"),
        ("floor.host.sockpref.64.rtt_ms.mean", "floor.host.sockperf.64.rtt_ms.mean"),
        ("overhead_count", "overheads_count"),
    ],
)
def test_net_misspellings_are_named_with_what_was_meant(metric: str, instead: str) -> None:
    problem = net_problem(metric, NET)
    assert problem is not None
    assert problem[1] == instead


@pytest.mark.parametrize(
    "metric",
    [
        "pingpong.tcp.host.1024.rtt_ms.p99",
        "pingpong.zmq.process.0.floor.ratio",
        "echo.grpc.host.network.mean_ms",
        "echo.grpc.host.tls.100.p99_ms",
        "echo_scaling.grpc.host.network.8.mean_ms",
        "echo_scaling.grpc.host.inprocess.fit.r2",
        "burst.grpc.host.enqueue_cpu_ms.mean",
        "transfer.tcp_streams.lan.down.4.mb_s.mean",
        "floor.host.iperf3.4.up.mb_s",
        "overheads_count",
        "validity.valid",
    ],
)
def test_net_real_paths_pass(metric: str) -> None:
    assert net_problem(metric, NET) is None


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args], env=cli_env(tmp_path / "results"), capture_output=True, text=True
    )


def _typo(tmp_path: Path, example: Path, right: str, wrong: str) -> tuple[Path, int]:
    """``example`` with ``right`` misspelt as ``wrong``, and the line it is on."""
    text = example.read_text()
    assert right in text
    line = text[: text.index(right)].count("\n") + 1
    spec = tmp_path / example.name
    spec.write_text(text.replace(right, wrong))
    return spec, line


@pytest.mark.parametrize("command", [["validate"], ["io", "validate"], ["io", "run"]])
def test_io_cli_refuses_a_misspelled_threshold(tmp_path: Path, command: list[str]) -> None:
    right = "matrix.candidate.write.kbps.mean"
    spec, line = _typo(tmp_path, IO_EXAMPLE, right, "matrix.candidate.write.kbps.meen")
    p = _cli(tmp_path, *command, str(spec))
    assert p.returncode == 2, p.stdout + p.stderr
    assert f"{spec}:{line}: field 'thresholds.1.metric'" in p.stderr
    assert f"did you mean '{right}'?" in p.stderr
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "results").exists()  # refused before anything ran


@pytest.mark.parametrize("command", [["validate"], ["net", "validate"], ["net", "run"]])
def test_net_cli_refuses_a_misspelled_threshold(tmp_path: Path, command: list[str]) -> None:
    right = "pingpong.tcp.host.1024.rtt_ms.p50"
    spec, line = _typo(tmp_path, NET_EXAMPLE, right, "pingpong.tcp.hots.1024.rtt_ms.p50")
    p = _cli(tmp_path, *command, str(spec))
    assert p.returncode == 2, p.stdout + p.stderr
    assert f"{spec}:{line}: field 'thresholds.0.metric'" in p.stderr
    assert f"did you mean '{right}'?" in p.stderr
    assert not (tmp_path / "results").exists()


def test_a_set_override_is_named_as_the_place(tmp_path: Path) -> None:
    p = _cli(
        tmp_path,
        *["io", "validate", str(IO_EXAMPLE)],
        *["--set", "thresholds.0.metric=matrx.candidate.read.speedup"],
    )
    assert p.returncode == 2, p.stdout + p.stderr
    assert "--set thresholds.0.metric: field 'thresholds.0.metric'" in p.stderr
    assert "did you mean 'matrix.candidate.read.speedup'?" in p.stderr


@pytest.mark.parametrize(
    "example",
    sorted(p.name for p in (ROOT / "examples").glob("*.yaml") if "threshold" in p.read_text()),
)
def test_every_example_threshold_still_validates(tmp_path: Path, example: str) -> None:
    p = _cli(tmp_path, "validate", str(ROOT / "examples" / example))
    assert p.returncode == 0, p.stdout + p.stderr


def test_reanalysis_reports_what_a_finished_run_asked(tmp_path: Path) -> None:
    # a run's saved spec is re-read unchecked: its unknown path fails that threshold only
    text = IO_EXAMPLE.read_text().replace("kbps.mean", "kbps.meen")
    spec, _ = load_io_spec_text(text, "spec.yaml", checked=False)
    assert any(t.metric.endswith("kbps.meen") for t in spec.thresholds)
