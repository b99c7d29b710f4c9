"""``gridbench net``'s actions as declarations (:mod:`gridbench.commandline`); each runs a
function of :mod:`gridbench.messaging.command`, imported only when the action runs."""

from __future__ import annotations

from gridbench.commandline import Command, Commands, spec_verbs

COMMANDS = Commands(
    "net",
    (
        Command(
            "net",
            help="messaging benchmarks: ping-pong, echo (TLS), burst, transfers vs sockperf/iperf3",
            parser={
                "description": "Messaging and service benchmarks over real transports (raw "
                "TCP, ZeroMQ, gRPC, MUSCLE3, scp) in real environments (one process, two "
                "processes, two network namespaces, through a relay), each figure beside the "
                "native floor measured in the same run. See docs/net.md."
            },
            dest="net_action",
            actions=spec_verbs(
                module="gridbench.messaging.command",
                what="net spec (YAML), see docs/net.md and examples/net-*.yaml",
                example="--set pingpong.sizes.max=1M",
                noun="a net spec",
                run_help="run a net spec (root for lan), then analyse and report",
                report_help="re-analyse a net results directory, rewrite its reports",
            ),
        ),
    ),
)
