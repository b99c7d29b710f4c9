"""One vocabulary for a run's state and its verdict, in every family, the CLI and the
dashboard: each word once, with the tone of its badge (``ok`` green, ``warn`` amber,
``bad`` red, ``info`` blue).

Runs recorded by earlier versions said "completed" (storage) or "done" (messaging) for
``complete``; :func:`run_state` reads them as the one word.
"""

from __future__ import annotations

from typing import Final, Literal

Tone = Literal["ok", "warn", "bad", "info"]

CREATED: Final = "created"
PREPARING: Final = "preparing"
RUNNING: Final = "running"
ABORTING: Final = "aborting"
COMPLETE: Final = "complete"
#: finished, but an agent was lost or jobs were left without an end: 'gridbench cleanup'
NEEDS_CLEANUP: Final = "needs cleanup"
ABORTED: Final = "aborted"
FAILED: Final = "failed"
CRASHED: Final = "crashed"

#: every state a run records, with its badge's tone
RUN_STATES: Final[dict[str, Tone]] = {
    CREATED: "info",
    PREPARING: "info",
    RUNNING: "info",
    ABORTING: "warn",
    COMPLETE: "ok",
    NEEDS_CLEANUP: "warn",
    ABORTED: "warn",
    FAILED: "bad",
    CRASHED: "bad",
}
#: the words earlier versions recorded, and the state each means
OLD_WORDS: Final[dict[str, str]] = {"completed": COMPLETE, "done": COMPLETE}
#: states in which the run's process has ended (its records are all written)
FINISHED: Final = frozenset({COMPLETE, NEEDS_CLEANUP, ABORTED, FAILED, CRASHED, *OLD_WORDS})

#: the tone of a report finding's status (sections.Status)
FINDING_TONES: Final[dict[str, Tone]] = {
    "pass": "ok",
    "fail": "bad",
    "warn": "warn",
    "info": "info",
}
#: the terminal's colour of each tone (rich styles)
TERMINAL_STYLES: Final[dict[Tone, str]] = {
    "ok": "green",
    "warn": "yellow",
    "bad": "red",
    "info": "",
}

PASS: Final = "pass"
FAIL: Final = "fail"
#: verdicts that are no pass whatever the thresholds say: trials that do not count, and a
#: comparison a figure made void (better than its physical floor)
INVALID: Final = "invalid"
VOID: Final = "void"
#: the states a run that did not end as planned records: its verdict says so first
UNFINISHED: Final = frozenset({ABORTING, ABORTED, FAILED, CRASHED, NEEDS_CLEANUP, RUNNING})


def run_state(word: object) -> str:
    """The state ``word`` names, in today's vocabulary ("" when none is recorded)."""
    if not isinstance(word, str):
        return ""
    return OLD_WORDS.get(word, word)


def state_tone(word: object) -> Tone:
    """The badge tone of a recorded state (an unknown word is ``info``)."""
    return RUN_STATES.get(run_state(word), "info")


def verdict_tone(words: object) -> Tone:
    """The badge tone of a verdict: a plain pass is ``ok``, a qualified pass ("pass
    (flagged figures)") ``warn``, any fail ``bad``, anything else ``info``."""
    if not isinstance(words, str):
        return "info"
    head = words.split(" ", 1)[0]
    if head in (FAIL, VOID):
        return "bad"
    if head == INVALID:
        return "warn"
    if head == PASS:
        return "ok" if words == PASS else "warn"
    return state_tone(head)  # a run that ended without a verdict says its state


def with_state(verdict: str, state: object) -> str:
    """``verdict`` as the catalogue records it for a run in ``state``: a run that did not
    end as planned (aborted, failed, crashed, needs cleanup) never reads "pass": its state
    comes first, what the family said after it ("aborted (invalid trials)", never
    "aborted" beside "pass (invalid trials)")."""
    word = run_state(state)
    head, _, rest = verdict.partition(" ")
    if word not in UNFINISHED or head == word:
        return verdict
    if head in (PASS, INVALID):
        return f"{word} {rest}".strip()
    return f"{word} ({verdict})"
