"""The credential probe through the command backend's arc and gram presets, against the
live test sites (tests/arc_site.py, tests/gram_site.py): arcproxy and grid-proxy-init,
each call timed, each writing a fresh proxy."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from arc_site import ArcSite, arc_fixture  # noqa: F401 (the fixture arc)
from gram_site import GramSite, gram_fixture  # noqa: F401 (the fixture gram)
from gridbench.jobflow.analysis.experiment import analyze_run
from gridbench.jobflow.events.trial_log import read_trial_log
from gridbench.jobflow.experiment.runner import ExperimentRunner
from gridbench.jobflow.spec import load_spec_text, make_plan

pytestmark = pytest.mark.e2e


def credential_probe(options: dict[str, Any], root: Path) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Three credential probes 0.1 s apart with this command configuration."""
    text = yaml.safe_dump(
        {
            "name": "credential",
            "backend": {"type": "command", "options": options},
            "load": {"model": "probe", "operation": "credential", "count": 3, "gap": "0.1s"},
        }
    )
    spec, data = load_spec_text(text)
    out = asyncio.run(ExperimentRunner(make_plan(spec, data), data, root).execute())
    assert out.status == "complete"
    ev = read_trial_log(out.run.trial_dir("p00-t00"))
    trial = analyze_run(out.run.path)["points"][0]["trials"][0]
    return ev, trial


def calls(ev: pl.DataFrame) -> list[dict[str, Any]]:
    rows = ev.filter(pl.col("stage") == "op_end")
    return [json.loads(x) for x in rows["attrs"].to_list()]


def test_arcproxy_is_timed(arc: ArcSite, tmp_path: Path) -> None:
    proxy = tmp_path / "probe-proxy.pem"  # not the site's proxy, which other tests use
    app = tmp_path / "job.xrsl"
    app.write_text('&(executable="/bin/true")\n')
    options = {
        "preset": "arc",
        "env": arc.env,
        "workdir": str(tmp_path),
        "vars": {"url": arc.url, "app": str(app), "proxy_args": ["-P", str(proxy)]},
    }
    ev, t = credential_probe(options, tmp_path / "results")
    assert [c["op"] for c in calls(ev)] == ["credential"] * 3
    assert not any("error" in c for c in calls(ev)), calls(ev)
    m = t["model"]
    assert (m["single"]["n"], m["single"]["errors"]) == (3, 0)
    assert m["statement"].startswith("credential-issue time: ")
    assert "BEGIN CERTIFICATE" in proxy.read_text()  # arcproxy wrote a proxy
    info = arc.run("arcproxy", "-P", str(proxy), "-i", "validityLeft")
    assert int(info.strip()) > 3600


def test_grid_proxy_init_is_timed(gram: GramSite, tmp_path: Path) -> None:
    proxy = tmp_path / "probe-proxy.pem"
    args = ["-cert", str(gram.root / "usercert.pem"), "-key", str(gram.root / "userkey.pem")]
    options = {
        "preset": "gram",
        "vars": {"url": gram.contact, "proxy_args": [*args, "-out", str(proxy)]},
        "env": gram.env,
        "workdir": str(tmp_path),
    }
    ev, t = credential_probe(options, tmp_path / "results")
    assert not any("error" in c for c in calls(ev)), calls(ev)
    m = t["model"]
    assert (m["single"]["n"], m["single"]["errors"]) == (3, 0)
    assert m["statement"].startswith("credential-issue time: ")
    gram.run("grid-proxy-info", "-file", str(proxy), "-exists", "-valid", "1:00")

    # a refused issue (no key where it is said to be) is recorded as an error per call
    bad = {**options, "vars": {**options["vars"], "proxy_args": ["-key", str(tmp_path / "none")]}}
    ev, t = credential_probe(bad, tmp_path / "bad")
    assert [("error" in c) for c in calls(ev)] == [True] * 3
    assert t["model"]["single"]["errors"] == 3 and not t["valid"]
