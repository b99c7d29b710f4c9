"""``gridbench net plan``'s estimated duration: a cost model of the spec (floor tools'
fixed durations, round trips per size, calls, transfers, peer starts); no timing is
asserted, only that the estimate follows the spec."""

from __future__ import annotations

import pytest

from gridbench.messaging.load import load_net_spec_text
from gridbench.messaging.model import NetSpec
from gridbench.messaging.plan import estimated_seconds, peer_start_s, step_seconds, steps

PP = "name: x\nenvironments: [host]\nfloor: {sockperf: false, iperf3: false}\n"


def spec(text: str) -> NetSpec:
    s, _ = load_net_spec_text(text, "t.yaml")
    return s


def pattern_seconds(s: NetSpec, pattern: str) -> float:
    return sum(step_seconds(s, st) for st in steps(s) if st.pattern == pattern)


def test_a_size_s_time_doubles_with_its_tests() -> None:
    def trips(tests: int, round_trips: int) -> float:
        pp = f"{{transports: [tcp], sizes: {{max: 1M}}, tests: {tests}, round_trips: {round_trips}"
        s = spec(PP + f"pingpong: {pp}, warmup: 0}}\n")
        (step,) = steps(s)
        return step_seconds(s, step) - peer_start_s("host")

    base = trips(10, 10)
    assert trips(20, 10) == pytest.approx(2 * base)
    # each test builds its message once, whatever its round trips
    assert base < trips(10, 20) < 2 * base


def test_a_relay_delay_adds_to_every_round_trip() -> None:
    text = "environments: [relay]\npingpong: {transports: [tcp], sizes: {max: 1k}}\n"
    plain = spec("name: x\n" + text)
    slow = spec("name: x\nrelay: {tool: gridbench, delay: 5ms}\n" + text)
    assert pattern_seconds(slow, "pingpong") > pattern_seconds(plain, "pingpong") + 1.0


def test_floor_tools_cost_their_duration() -> None:
    text = "name: x\nenvironments: [host]\npingpong: {transports: [tcp]}\nfloor: {duration: "
    one, two = spec(text + "1s}\n"), spec(text + "2s}\n")
    assert pattern_seconds(two, "floor") > pattern_seconds(one, "floor")


def test_echo_burst_and_transfers_scale_with_their_counts() -> None:
    e = "name: x\nenvironments: [host]\necho: {configs: [network], calls: [100], repetitions: "
    assert pattern_seconds(spec(e + "4}\n"), "echo") > pattern_seconds(spec(e + "2}\n"), "echo")
    b = "name: x\nenvironments: [host]\nburst: {calls: "
    assert pattern_seconds(spec(b + "2000}\n"), "burst") > pattern_seconds(
        spec(b + "1000}\n"), "burst"
    )
    t = "name: x\nenvironments: [host]\ntransfer: {tools: [zmq], size: 256M, repetitions: "
    one, two = spec(t + "2}\n"), spec(t + "4}\n")
    assert pattern_seconds(two, "transfer") > 1.9 * pattern_seconds(one, "transfer") - 1.0


def test_more_environments_take_longer() -> None:
    one = spec("name: x\nenvironments: [host]\n")
    two = spec("name: x\nenvironments: [host, process]\n")
    assert estimated_seconds(two) > estimated_seconds(one) > 0
