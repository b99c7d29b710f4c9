"""Counterbalancing: the order in which a participant meets the tools and their tasks.

Tools follow a balanced Latin square (Williams design), so that neither a tool's position
nor the tool used just before it favours one tool; tasks are shuffled within a tool with a
seed derived from the study's seed, the participant and the tool, and the order is recorded
in the participant's ``session_started`` record (so analysis never has to recompute it).
"""

from __future__ import annotations

import random

from gridbench.study.model import StudySpec
from gridbench.study.records import SessionStarted, now_ns


def balanced_latin_square(n: int) -> list[list[int]]:
    """Williams design: rows of tool indices; each tool in each position equally often and each
    tool immediately follows each other tool equally often. n rows for even n, 2n rows for
    odd n (an odd square needs each row's mirror image to balance the carry-over)."""
    if n < 1:
        raise ValueError(f"a Latin square needs at least one tool, not {n}")
    # The first row zig-zags 0, 1, n-1, 2, n-2, ...: its successive differences are all
    # distinct mod n, which is what makes every ordered pair adjacent exactly once.
    first = [0] + [(k + 1) // 2 if k % 2 else n - k // 2 for k in range(1, n)]
    rows = [[(v + shift) % n for v in first] for shift in range(n)]
    if n % 2 == 1:
        rows += [list(reversed(row)) for row in rows]
    return rows


def task_order(spec: StudySpec, participant: str, tool: str) -> list[str]:
    """The order of ``tool``'s tasks for ``participant``: shuffled with a seed of
    ``"<order.seed>:<participant>:<tool>"`` when ``order.shuffle_tasks``, else as declared."""
    tasks = [t.id for t in spec.tool(tool).tasks]
    if spec.order.shuffle_tasks:
        # a string seed is hashed (SHA-512) by random.Random: stable across runs and hosts
        random.Random(f"{spec.order.seed}:{participant}:{tool}").shuffle(tasks)
    return tasks


def session_order(spec: StudySpec, participant: str) -> SessionStarted:
    """The participant's tool order (row = index of the participant in ``spec.participants``,
    modulo the square's rows) and task order per tool. Returns the record to append (t_ns=now);
    ValueError for a participant the spec does not declare."""
    if participant not in spec.participants:
        raise ValueError(f"participant {participant!r} is not declared in the study's participants")
    index = spec.participants.index(participant)
    tools = [t.id for t in spec.tools]
    if spec.order.latin_square:
        square = balanced_latin_square(len(tools))
        row = index % len(square)
        tool_order = [tools[i] for i in square[row]]
    else:
        row, tool_order = 0, tools
    return SessionStarted(
        t_ns=now_ns(),
        source="web",
        participant=participant,
        square_row=row,
        tool_order=tool_order,
        task_order={tool: task_order(spec, participant, tool) for tool in tool_order},
        seed=spec.order.seed,
    )
