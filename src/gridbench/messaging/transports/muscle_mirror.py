"""The MUSCLE3 mirror: receives each message on ``in`` and sends it straight back on
``out``. Started by ``muscle_manager --start-all`` (never by hand): ``python -m
gridbench.messaging.transports.muscle_mirror``.

It is a canonical MUSCLE3 submodel: one reuse-loop iteration per message (F_INIT ``in``,
O_F ``out``), so a round trip costs what a macro/micro coupling step costs.
"""

from __future__ import annotations

from libmuscle import Instance, Message
from ymmsl import Operator


def main() -> int:
    """Mirror messages until the driver closes its port."""
    instance = Instance({Operator.F_INIT: ["in"], Operator.O_F: ["out"]})
    while instance.reuse_instance():
        msg = instance.receive("in")
        instance.send("out", Message(msg.timestamp, None, msg.data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
