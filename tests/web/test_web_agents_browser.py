"""The dashboard's agents in real headless Chromium (the set-up of test_web_browser.py): a
saved preset with two local agent processes, its *Test connectivity* button on /agents, and
a live run on two agents whose page shows each agent's counters growing."""

from __future__ import annotations

import re
from typing import Any

import pytest

from test_web_browser import browser, page, server  # noqa: F401  # the Chromium set-up
from web_server import Server

pytestmark = pytest.mark.e2e
PRESET = """\
description: two local agent processes on the noop backend
backend: {type: noop, options: {runtime_s: 0.2}}
agents: {processes: 2}
"""
LIVE_SPEC = """\
name: browser-agents
backend: {type: noop, options: {runtime_s: 0.2}}
load: {model: open, rate: 10/s, agents: {processes: 2}}
trials: 1
trial: {duration: 10s}
timeouts: {status_interval: 0.2s, drain: 20s, settle: 0s}
"""


def _agent_count(pg: Any, agent: str, key: str) -> int:
    text = pg.inner_text(f'#agent-table tr[data-agent="{agent}"] .a-{key}').strip()
    return int(text) if text.isdigit() else 0


def _submitted_above(counts: dict[str, int]) -> str:
    """A JS condition: every agent's submitted cell exists and is above its count."""
    cell = "document.querySelector('#agent-table tr[data-agent=\"{}\"] .a-submitted')"
    return " && ".join(
        f"({cell.format(a)} !== null && Number({cell.format(a)}.textContent) > {n})"
        for a, n in counts.items()
    )


def test_agents_page_tests_connectivity(page: Any, server: Server) -> None:  # noqa: F811
    pg = page
    pg.goto("/agents")
    assert pg.locator("#no-agent-presets").count() == 1
    pg.goto("/presets/edit")
    pg.fill('input[name="name"]', "two-agents")
    pg.fill("#ptext", PRESET)
    pg.click('button[value="save"]')
    pg.wait_for_url(re.compile(r"/presets$"))
    pg.click('nav a[href="/agents"]')
    pg.wait_for_url(re.compile(r"/agents$"))
    row = pg.locator('#agent-presets tr[data-preset="two-agents"]')
    assert row.locator(".where").inner_text() == "2 local processes"
    row.locator("button.test-btn").click()
    pg.wait_for_selector("#agent-check", timeout=120_000)
    agents = pg.locator("#agent-check tr.agent-row")
    assert [agents.nth(k).get_attribute("data-agent") for k in range(2)] == ["agent-0", "agent-1"]
    assert agents.count() == 2
    for k in range(2):
        r = agents.nth(k)
        for step in ("gridbench-version", "clock-offset", "backend-on-that-host"):
            assert r.locator(f".step-{step} .badge").inner_text() == "ok", r.inner_text()
        offset = r.locator(".step-clock-offset .detail").inner_text()
        assert re.match(r"[+-]\d+\.\d{3} ms ± \d+\.\d{3} ms", offset), offset
    assert pg.inner_text("#agent-check-h").endswith("ok")
    # on the new-experiment page the preset brings its agents along
    pg.goto("/new")
    pg.wait_for_function("() => window.gbSync && window.gbSync.pending === 0")
    pg.select_option("#preset", "saved:two-agents")
    pg.click("#use-preset")
    pg.wait_for_function("() => document.getElementById('yaml').value.includes('processes: 2')")
    assert "type: noop" in pg.input_value("#yaml")


def test_live_run_shows_each_agent(page: Any, server: Server) -> None:  # noqa: F811
    pg = page
    pg.goto("/new")
    pg.wait_for_function("() => window.gbSync && window.gbSync.pending === 0")
    pg.fill("#yaml", LIVE_SPEC)
    pg.wait_for_timeout(400)
    pg.wait_for_function("() => window.gbSync && window.gbSync.pending === 0")
    pg.click("#btn-start")
    pg.wait_for_url(re.compile(r"/experiments/[^/]+$"))
    pg.wait_for_selector('#agent-table tr[data-agent="agent-1"]', timeout=60_000)
    assert pg.locator("#agents-live").is_visible()
    pg.wait_for_function(f"() => {_submitted_above({'agent-0': 1, 'agent-1': 1})}")
    first = {a: _agent_count(pg, a, "submitted") for a in ("agent-0", "agent-1")}
    pg.wait_for_function(f"() => {_submitted_above(first)}")  # pushed updates, no reload
    assert _agent_count(pg, "agent-0", "acknowledged") > 0
    assert "p50" in pg.inner_text("#submit-latency-value")
    phase = pg.locator('#agent-table tr[data-agent="agent-0"] .a-phase').text_content() or ""
    assert phase.strip() in ("submitting", "draining"), phase  # the agent's own phase
    # the run ends and the page reloads with its results; the live record keeps the agents
    pg.wait_for_selector("#live-record", state="attached", timeout=90_000)
    assert pg.inner_text("#status") == "complete"
    final = pg.locator("#live-record #agent-table tr.agent-row")
    assert final.count() == 2
    assert (
        int((final.nth(0).locator(".a-completed").text_content() or "0").strip())
        > first["agent-0"] // 2
    )
