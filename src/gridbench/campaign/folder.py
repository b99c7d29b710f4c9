"""A campaign's folder in the results store: ``ROOT/campaigns/<stamp>-<name>/``.

::

    campaign.yaml     the campaign file as run (a copy of its text)
    campaign.json     the state, rewritten atomically after every event (status, pages)
    log.jsonl         the campaign's own record, append-only and fsynced: every start and
                      end of a unit's repetition, each suspension, each resumption
    runs/<unit>.r<repetition>.a<attempt>  ->  ../../../<run folder>
                      a link to each unit's run folder in the store (never a copy)
    units/<unit>.r<repetition>.a<attempt>.log   what the unit's command printed
    docs/             the IEEE 829 documents (HTML and Markdown) and summary.json

The log is the truth: the state is replayed from it (:func:`replay`), so a campaign
killed at any instant (kill -9 included) resumes from what the log says was finished.
The store's readers never follow a link: the campaign names each unit's run folder in its
log, and reads it at the store's root; the links are for people and browsers.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gridbench.errors import ResultsError
from gridbench.store.catalogue import is_run_name
from gridbench.store.layout import now_iso, read_json, slug, write_json, write_text_atomic
from gridbench.store.records import append_record, read_records
from gridbench.store.safe_open import CAPS, opened_store_file, read_store_text, refuse_links

CAMPAIGNS_DIR = "campaigns"
STATE_FILE = "campaign.json"
LOG_FILE = "log.jsonl"
COPY_FILE = "campaign.yaml"
RUNS_DIR = "runs"
UNITS_DIR = "units"
DOCS_DIR = "docs"
SUMMARY_FILE = "summary.json"
SCHEMA = "gridbench.campaign/1"

#: a repetition's outcomes that finish it: it is not run again on resumption
DONE = frozenset({"passed", "failed", "error", "timeout"})
#: campaign states
RUNNING, COMPLETE, SUSPENDED, INTERRUPTED = "running", "complete", "suspended", "interrupted"


#: a unit's name in the log, ``component.unit`` (each an id of the campaign file's form):
#: the log is foreign input, and the name becomes a file's (``units/<name>.log``)
UNIT_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,39}\.[A-Za-z][A-Za-z0-9_-]{0,39}")
#: the last bytes of a unit's log its incidents quote (a log may be gigabytes)
LOG_TAIL_BYTES = 64 * 1024
#: the longest campaign file a campaign folder's copy may be
COPY_CAP = CAPS["spec"]


def digest(text: str) -> str:
    """The campaign file's fingerprint: a resumption needs the same file."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def attempt_name(unit: str, rep: int, attempt: int) -> str:
    """``<unit>.r<repetition>.a<attempt>``: a repetition's attempt in links and logs."""
    return f"{unit}.r{rep}.a{attempt}"


@dataclass(frozen=True)
class CampaignDir:
    """Paths inside one campaign's folder."""

    path: Path

    @classmethod
    def create(cls, root: Path, name: str) -> CampaignDir:
        base = root / CAMPAIGNS_DIR
        base.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        for n in range(1, 1000):
            p = base / (f"{stamp}-{slug(name)}" + ("" if n == 1 else f"-{n}"))
            try:
                p.mkdir()
            except FileExistsError:
                continue
            for sub in (RUNS_DIR, UNITS_DIR, DOCS_DIR):
                (p / sub).mkdir()
            return cls(p)
        raise ResultsError(
            f"too many campaigns named {name!r} started within one second", where=str(base)
        )

    @property
    def id(self) -> str:
        return self.path.name

    @property
    def root(self) -> Path:
        """The results root the campaign belongs to."""
        return self.path.parent.parent

    @property
    def state_file(self) -> Path:
        return self.path / STATE_FILE

    @property
    def log_file(self) -> Path:
        return self.path / LOG_FILE

    @property
    def docs(self) -> Path:
        return self.path / DOCS_DIR

    def log(self, event: str, **fields: Any) -> dict[str, Any]:
        """Append one event (fsynced) and return it."""
        line = {"event": event, "at": now_iso(), "t": round(time.time(), 3), **fields}
        append_record(self.log_file, line)
        return line

    def events(self) -> list[dict[str, Any]]:
        return read_records(self.log_file)

    def read_state(self) -> dict[str, Any]:
        data = read_json(self.state_file, missing_fix="is this a campaign folder?")
        if not isinstance(data, dict):
            raise ResultsError("campaign.json is not an object", where=str(self.state_file))
        return data

    def write_state(self, state: Mapping[str, Any]) -> None:
        write_json(self.state_file, state)

    def write_copy(self, text: str) -> None:
        write_text_atomic(self.path / COPY_FILE, text)

    def copy_text(self) -> str:
        """The campaign file as run (its copy): read as the store reads foreign files (no
        link followed, a regular file, bounded)."""
        path = self.path / COPY_FILE
        try:
            return read_store_text(path, cap=COPY_CAP, base=self.path)
        except FileNotFoundError:
            raise ResultsError(
                "the campaign folder has lost its copy of the campaign file",
                where=str(path),
                fix="copy the campaign file there again (the one the campaign was run with)",
            ) from None

    def log_tail(self, name: str) -> str:
        """The last :data:`LOG_TAIL_BYTES` of what a unit's attempt printed ('' when it has
        no log): never through a link, a regular file only (a planted /dev/zero or FIFO is
        a ResultsError, not a hang)."""
        try:
            with (
                opened_store_file(self.unit_log(name), base=self.path) as (fd_path, size),
                open(fd_path, "rb") as fh,
            ):
                fh.seek(max(0, size - LOG_TAIL_BYTES))
                data = fh.read(LOG_TAIL_BYTES)
        except FileNotFoundError:
            return ""
        return data.decode("utf-8", errors="replace")

    def unit_log(self, name: str) -> Path:
        return self.path / UNITS_DIR / f"{name}.log"

    def link(self, name: str, run_folder: str) -> Path:
        """``runs/<name>`` -> the run folder at the store's root (relative: the store can
        move); replaced if it exists."""
        if not is_run_name(run_folder):
            raise ResultsError(f"not a run folder's name: {run_folder!r}", where=str(self.path))
        link = self.path / RUNS_DIR / name
        target = Path("..", "..", "..", run_folder)
        tmp = link.with_name(f".{name}.tmp")
        tmp.unlink(missing_ok=True)
        refuse_links(tmp)  # runs/ itself a link: the new link would be made elsewhere
        os.symlink(target, tmp)
        os.replace(tmp, link)
        return link


def campaigns(root: Path) -> list[CampaignDir]:
    """Every campaign folder under the results root, oldest first."""
    base = root / CAMPAIGNS_DIR
    if not base.is_dir() or base.is_symlink():
        return []
    found = [
        CampaignDir(p) for p in base.iterdir() if not p.is_symlink() and (p / STATE_FILE).is_file()
    ]
    return sorted(found, key=lambda c: c.id)


def named(root: Path, name: str) -> list[CampaignDir]:
    """The campaigns of one name (the campaign file's ``name``), oldest first."""
    out = []
    for c in campaigns(root):
        try:
            if c.read_state().get("name") == name:
                out.append(c)
        except ResultsError:
            continue
    return out


def find_campaign(root: Path, ref: str) -> CampaignDir | None:
    """A campaign by its folder (a path), its id or a unique prefix of it."""
    p = Path(ref)
    if (p / STATE_FILE).is_file() and not p.is_symlink():
        return CampaignDir(p)
    if not is_run_name(ref):
        return None
    every = campaigns(root)
    exact = [c for c in every if c.id == ref]
    if exact:
        return exact[0]
    matches = [c for c in every if c.id.startswith(ref)]
    return matches[0] if len(matches) == 1 else None


# -- the state, replayed from the log -----------------------------------------------------


@dataclass
class Attempt:
    """One attempt at one repetition of a unit."""

    unit: str
    rep: int
    attempt: int
    started: str
    command: str = ""
    hosts: tuple[str, ...] = ()
    pid: int | None = None
    create_time: float | None = None
    ended: str | None = None
    exit: int | None = None
    outcome: str | None = None  # passed failed error timeout interrupted killed
    run: str | None = None
    reasons: tuple[str, ...] = ()
    superseded: bool = False  # re-run after a resumption from suspension

    @property
    def name(self) -> str:
        return attempt_name(self.unit, self.rep, self.attempt)

    @property
    def done(self) -> bool:
        return self.outcome in DONE and not self.superseded

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "rep": self.rep,
            "attempt": self.attempt,
            "name": self.name,
            "started": self.started,
            "ended": self.ended,
            "command": self.command,
            "hosts": list(self.hosts),
            "exit": self.exit,
            "outcome": self.outcome,
            "run": self.run,
            "reasons": list(self.reasons),
            "superseded": self.superseded,
        }


@dataclass
class State:
    """What the log says: every attempt, the suspensions in force, the sessions."""

    attempts: list[Attempt] = field(default_factory=list)
    #: component id (or "*" for the whole campaign) -> the unit whose outcome suspended it
    suspended: dict[str, str] = field(default_factory=dict)
    #: (unit, rep) -> the unit that kept it from running (an ``after:`` that did not pass)
    blocked: dict[tuple[str, int], str] = field(default_factory=dict)
    sessions: list[dict[str, Any]] = field(default_factory=list)
    finished: dict[str, Any] | None = None
    suspensions: list[dict[str, Any]] = field(default_factory=list)

    def of(self, unit: str, rep: int) -> list[Attempt]:
        return [a for a in self.attempts if a.unit == unit and a.rep == rep]

    def final(self, unit: str, rep: int) -> Attempt | None:
        """The attempt that counts for a repetition: its last done one, else its last."""
        mine = self.of(unit, rep)
        done = [a for a in mine if a.done]
        return done[-1] if done else (mine[-1] if mine else None)

    def is_done(self, unit: str, rep: int) -> bool:
        return any(a.done for a in self.of(unit, rep))

    def open_attempts(self) -> list[Attempt]:
        """Attempts started and never ended (the campaign was killed during them)."""
        return [a for a in self.attempts if a.ended is None]

    def next_attempt(self, unit: str, rep: int) -> int:
        return max((a.attempt for a in self.of(unit, rep)), default=0) + 1


#: the most items and characters of a list of texts kept from a log line
MAX_TEXTS, MAX_TEXT = 100, 2000


def _texts(value: Any) -> tuple[str, ...]:
    """A list of words from the log as strings, each and their number bounded (anything
    else: none)."""
    if not isinstance(value, list):
        return ()
    return tuple(str(x)[:MAX_TEXT] for x in value[:MAX_TEXTS])


def _ident(ev: Mapping[str, Any]) -> tuple[str, int, int] | None:
    """(unit, repetition, attempt) of an event, or None when the log line does not name
    them as the campaign writes them (a unit's name becomes a file's: no ``../``)."""
    unit, rep, attempt = ev.get("unit"), ev.get("rep", 0), ev.get("attempt", 0)
    if ev.get("event") in ("begin", "suspend", "resume", "finish"):
        return ("", 0, 0)
    if not isinstance(unit, str) or not UNIT_KEY.fullmatch(unit):
        return None
    if not all(type(x) is int and 0 <= x < 1_000_000 for x in (rep, attempt)):
        return None
    return (unit, rep, attempt)


def replay(events: Iterable[Mapping[str, Any]]) -> State:
    """The state the log's events leave. The log is foreign input: a line that does not
    name its unit, repetition and attempt as the campaign writes them is skipped, a run
    that is no folder's name at the store's root is dropped, a field of the wrong type is
    left out."""
    st = State()
    index: dict[tuple[str, int, int], Attempt] = {}
    for ev in events:
        kind = ev.get("event")
        ident = _ident(ev)
        if ident is None:
            continue
        at = str(ev.get("at", ""))
        if kind == "begin":
            st.sessions.append(dict(ev))
            st.finished = None
        elif kind == "start":
            a = Attempt(
                unit=ident[0],
                rep=ident[1],
                attempt=ident[2],
                started=at,
                command=str(ev.get("command", "")),
                hosts=_texts(ev.get("hosts")),
                pid=ev.get("pid") if type(ev.get("pid")) is int else None,
                create_time=ev.get("create_time")
                if isinstance(ev.get("create_time"), int | float)
                else None,
            )
            index[ident] = a
            st.attempts.append(a)
            st.blocked.pop((ident[0], ident[1]), None)
        elif kind in ("run", "end", "killed") and ident in index:
            a = index[ident]
            if isinstance(ev.get("run"), str) and is_run_name(ev["run"]):
                a.run = ev["run"]
            if kind == "end":
                a.ended = at
                a.exit = ev.get("exit") if type(ev.get("exit")) is int else None
                a.outcome = str(ev.get("outcome"))
                a.reasons = _texts(ev.get("reasons"))
            elif kind == "killed":
                a.ended = at
                a.outcome = "killed"
                a.reasons = _texts(ev.get("reasons"))
        elif kind == "blocked":
            st.blocked[(ident[0], ident[1])] = str(ev.get("by"))
        elif kind == "suspend":
            st.suspended[str(ev.get("scope_id"))] = str(ev.get("by"))
            st.suspensions.append(dict(ev))
        elif kind == "resume":
            st.suspended.clear()
            st.blocked.clear()
            rerun = set(_texts(ev.get("rerun")))
            for a in st.attempts:
                if a.unit in rerun:
                    a.superseded = True
        elif kind == "finish":
            st.finished = dict(ev)
    return st
