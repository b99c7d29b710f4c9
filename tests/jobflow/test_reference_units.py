"""Unit tests of the reference grid's configuration, samplers and report writer."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from defusedxml import ElementTree

from gridbench.errors import SpecError
from gridbench.jobflow.reference import (
    GridConfig,
    build_config,
    config_from_dict,
    load_config,
    preset,
)
from gridbench.jobflow.reference.config import Dist, finishing_capacity_per_s
from gridbench.jobflow.reference.dist import make_sampler
from gridbench.jobflow.reference.reports import ReportWriter


# -- configuration ---------------------------------------------------------------------
def test_default_is_the_sequential_preset_and_batched_differs_only_in_policy() -> None:
    default = GridConfig()
    assert preset("sequential") == default
    assert default.status_update.policy == "sequential"
    batched = preset("batched")
    assert batched.status_update.policy == "batched"
    assert batched.model_copy(update={"status_update": default.status_update}) == default
    # The sequential finishing stage is the only slow one: ~1/cost jobs/s.
    assert finishing_capacity_per_s(default) == pytest.approx(1 / 0.35)
    assert finishing_capacity_per_s(batched) == float("inf")


def test_unknown_key_is_an_error_naming_the_field() -> None:
    with pytest.raises(SpecError) as ei:
        config_from_dict({"status_update": {"polcy": "batched"}})
    assert ei.value.where is not None and "status_update.polcy" in ei.value.where


def test_bad_value_is_an_error_naming_the_field() -> None:
    with pytest.raises(SpecError) as ei:
        config_from_dict({"workers": {"runtime": {"dist": "gamma", "mean": 1}}})
    assert ei.value.where is not None and "workers.runtime.dist" in ei.value.where
    with pytest.raises(SpecError, match="larger than max"):
        config_from_dict({"ce": {"service": {"dist": "uniform", "min": 2, "max": 1}}})


def test_yaml_file_merges_over_preset(tmp_path: Path) -> None:
    f = tmp_path / "grid.yaml"
    f.write_text("workers:\n  slots: 8\nstatus_update:\n  interval_s: 2\n")
    cfg = build_config("batched", f)
    assert cfg.workers.slots == 8
    assert cfg.status_update.interval_s == 2.0
    assert cfg.status_update.policy == "batched"  # kept from the preset
    assert load_config(f).status_update.policy == "sequential"


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    f = tmp_path / "grid.yaml"
    f.write_text("workers:\n  slots: 8\n  runtime: [1, 2\n")
    with pytest.raises(SpecError) as ei:
        load_config(f)
    assert ei.value.where is not None and re.search(r"grid\.yaml:\d+$", ei.value.where)


def test_unknown_preset() -> None:
    with pytest.raises(SpecError, match="unknown reference grid preset"):
        build_config("nope")


# -- samplers --------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["lognormal", "exponential", "uniform"])
def test_sampler_mean_and_cv(kind: str) -> None:
    cv = 1.0 if kind == "exponential" else 0.3
    d = Dist(dist=kind, mean=2.0, cv=cv)  # type: ignore[arg-type]
    draw = make_sampler(d, np.random.default_rng(7))
    x = np.array([draw() for _ in range(40_000)])
    assert x.mean() == pytest.approx(2.0, rel=0.03)
    assert x.std() / x.mean() == pytest.approx(cv, rel=0.06)
    assert x.min() >= 0.0


def test_sampler_clips_and_fixed() -> None:
    rng = np.random.default_rng(1)
    assert make_sampler(Dist(dist="fixed", mean=0.25), rng)() == 0.25
    clipped = make_sampler(Dist(dist="exponential", mean=1.0, min=0.5, max=0.75), rng)
    x = np.array([clipped() for _ in range(2000)])
    assert x.min() == 0.5 and x.max() == 0.75
    uni = make_sampler(Dist(dist="uniform", min=3.0, max=4.0), rng)
    y = np.array([uni() for _ in range(2000)])
    assert 3.0 <= y.min() < 3.1 and 3.9 < y.max() <= 4.0


# -- reports ---------------------------------------------------------------------------
class FakeClock:
    def __init__(self, t: int) -> None:
        self.t = t

    def __call__(self) -> int:
        return self.t


T0 = 1_309_257_006_159_000_000  # 2011-06-28 10:30:06.159 GMT


def test_report_rotation_publication_and_format(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    w = ReportWriter(
        "ce", tmp_path, rotate_s=5.0, publication_delay_s=2.0, dt_precision="s", clock=clock
    )
    w.entry(T0, "https://ce/1?a=<b>&c", "dsp", "gLite/seegrid")
    w.submission(T0 + 1_000_000_000, "https://ce/1?a=<b>&c", "25c3-bridge", "http://bridge:9091")
    assert w.published() == []
    clock.t = T0 + 4_999_000_000
    w.tick()
    assert w.published() == [] and w.published_path("ce-000001.xml") is None  # still open
    clock.t = T0 + 5_000_000_000
    w.tick()  # closed now, embargoed for 2 s
    assert w.published() == []
    w.status(clock.t, "https://ce/1?a=<b>&c", "Finished")  # goes to a new file
    clock.t = T0 + 7_000_000_000
    assert [f.name for f in w.published()] == ["ce-000001.xml"]
    path = w.published_path("ce-000001.xml")
    assert path is not None
    assert w.published_path("ce-000002.xml") is None  # the open one

    text = path.read_text()
    assert text.startswith('<report timestamp="1309257006159" timezone="GMT" version="1.1">\n')
    root = ElementTree.fromstring(text.encode())
    mds = root.findall("metric_data")
    assert [m.findtext("event") for m in mds] == ["job_entry", "job_submission"]
    assert mds[0].findtext("dt") == "2011-06-28 10:30:06"
    assert mds[1].findtext("dt") == "2011-06-28 10:30:07"
    assert mds[0].findtext("job_id") == "https://ce/1?a=<b>&c"  # escaped, round-trips
    assert mds[0].findtext("application") == "dsp"
    assert mds[0].findtext("input_grid_name") == "gLite/seegrid"
    assert mds[1].findtext("job_id_bridge") == "25c3-bridge"
    assert mds[1].findtext("status") == "Submitted"
    assert mds[1].findtext("output_grid_name") == "http://bridge:9091"


def test_report_ms_precision(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    w = ReportWriter(
        "bridge", tmp_path, rotate_s=1, publication_delay_s=0, dt_precision="ms", clock=clock
    )
    w.status(T0 + 7_000_000, "b1", "Running")
    w.close()
    root = ElementTree.fromstring((tmp_path / "bridge" / "bridge-000001.xml").read_bytes())
    assert root.findtext("metric_data/dt") == "2011-06-28 10:30:06.166"


@pytest.mark.parametrize(
    "name", ["../ce-000001.xml", "ce-000001.xml/..", "bridge-000001.xml", "ce-1.xml", "x"]
)
def test_published_path_refuses_bad_names(tmp_path: Path, name: str) -> None:
    w = ReportWriter("ce", tmp_path, rotate_s=1, publication_delay_s=0)
    w.status(T0, "j", "Running")
    w.close()
    assert w.published_path("ce-000001.xml") is not None
    assert w.published_path(name) is None


def test_cut_report_is_repaired_and_numbering_continues(tmp_path: Path) -> None:
    (tmp_path / "ce").mkdir()
    cut = tmp_path / "ce" / "ce-000007.xml"
    cut.write_text('<report timestamp="1" timezone="GMT" version="1.1">\n  <metric_data>\n')
    w = ReportWriter("ce", tmp_path, rotate_s=1, publication_delay_s=0)
    assert cut.read_text().rstrip().endswith("</report>")
    w.status(T0, "j", "Running")
    w.close()
    assert [f.name for f in w.published()] == ["ce-000007.xml", "ce-000008.xml"]


def test_cut_report_mid_element_is_cut_back_to_complete_events(tmp_path: Path) -> None:
    (tmp_path / "ce").mkdir()
    cut = tmp_path / "ce" / "ce-000001.xml"
    cut.write_text(
        '<report timestamp="1" timezone="GMT" version="1.1">\n'
        "  <metric_data>\n    <event>job_entry</event>\n  </metric_data>\n"
        "  <metric_data>\n    <dt>2011-"
    )
    ReportWriter("ce", tmp_path, rotate_s=1, publication_delay_s=0)
    root = ElementTree.fromstring(cut.read_bytes())
    assert [m.findtext("event") for m in root.findall("metric_data")] == ["job_entry"]


def test_empty_cut_report_becomes_an_empty_document(tmp_path: Path) -> None:
    (tmp_path / "ce").mkdir()
    cut = tmp_path / "ce" / "ce-000001.xml"
    cut.write_text("")
    ReportWriter("ce", tmp_path, rotate_s=1, publication_delay_s=0)
    root = ElementTree.fromstring(cut.read_bytes())
    assert root.tag == "report" and root.get("timezone") == "GMT"
    assert root.findall("metric_data") == []
