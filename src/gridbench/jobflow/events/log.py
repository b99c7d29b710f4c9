"""The append-only per-trial event log.

Format: UTF-8 CSV with a header row (columns :data:`EVENT_COLUMNS`), ``attrs`` holding a
JSON object or nothing. Events are buffered as rows and written a chunk at a time, every
chunk flushed to the kernel (:mod:`gridbench.jobflow.events.buffer`: a ``kill -9`` loses at
most the trial's last 0.1 s). A torn last line (the process died mid-write) is ignored on
reading.
"""

from __future__ import annotations

import contextlib
import csv
import io
import operator
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from gridbench.errors import ResultsError
from gridbench.jobflow.events.buffer import CLIENT as CLIENT
from gridbench.jobflow.events.buffer import EventWriter, Row, opened_dir
from gridbench.jobflow.events.buffer import Origin as Origin
from gridbench.jobflow.events.model import EVENT_COLUMNS, EVENT_SCHEMA
from gridbench.store.records import drop_torn_tail
from gridbench.store.safe_open import open_append, opened_store_file, refuse_compressed

EVENTS_FILE = "events.csv"


def _special(text: str) -> bool:
    """Whether ``text`` holds a character that makes the csv module quote a field (its
    minimal quoting); four substring searches, faster than one regex over a chunk."""
    return "," in text or '"' in text or "\n" in text or "\r" in text


class EventLog(EventWriter):
    """Buffered, append-only writer of events for one trial, as CSV."""

    def __init__(self, path: str | os.PathLike[str], *, batch_size: int = 256) -> None:
        p = opened_dir(path)
        drop_torn_tail(p)
        new = not p.exists() or p.stat().st_size == 0
        super().__init__(p, p, batch_size=batch_size)
        self._fh = open_append(p, binary=False)  # never through a planted link
        if new:
            csv.writer(self._fh, lineterminator="\n").writerow(EVENT_COLUMNS)
            self._fh.flush()

    def _write_rows(self, rows: list[Row]) -> None:
        if rows:
            self._fh.write(_csv_lines(rows, self.origins))
        self._fh.flush()

    @property
    def closed(self) -> bool:
        return self._fh.closed

    def _close_file(self) -> None:
        with contextlib.suppress(OSError):  # the buffer is gone: nothing to lose
            self._fh.close()


def _csv_lines(rows: list[Row], origins: list[Origin]) -> str:
    """``rows`` as CSV lines, as the csv module writes them (minimal quoting), formatted
    directly when no job, stage or origin needs quoting (~0.25 us an event, against ~1 us
    through csv.writer); attrs (JSON) always hold quotes: quoted, inner quotes doubled."""
    keys = set(map(_KEY, rows))
    if (
        _special("".join(map(_JOB, rows)))
        or _special("".join(set(map(_STAGE, rows))))
        or any(_special(origins[k].source + origins[k].agent) for k in keys)
    ):
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(
            (j, s, t, origins[k].source, p, origins[k].agent, origins[k].clock_offset_ns, a)
            for j, s, t, p, k, a in rows
        )
        return out.getvalue()
    if len(keys) > 1:  # the lines' origin columns, by key
        mid = [f"{o.source}," for o in origins]
        end = [f",{o.agent},{o.clock_offset_ns}," for o in origins]
        return "".join(
            [
                f'{j},{s},{t},{mid[k]}{p}{end[k]}"{a.replace(_Q, _QQ)}"\n'
                if a
                else f"{j},{s},{t},{mid[k]}{p}{end[k]}\n"
                for j, s, t, p, k, a in rows
            ]
        )
    one = origins[keys.pop()]  # the common case: one recorder, the same on every line
    src, tail = one.source, f",{one.agent},{one.clock_offset_ns},"
    return "".join(
        [
            f'{j},{s},{t},{src},{p}{tail}"{a.replace(_Q, _QQ)}"\n'
            if a
            else f"{j},{s},{t},{src},{p}{tail}\n"
            for j, s, t, p, _, a in rows
        ]
    )


_JOB, _STAGE, _KEY = operator.itemgetter(0), operator.itemgetter(1), operator.itemgetter(4)
_Q, _QQ = '"', '""'


def empty_events() -> pl.DataFrame:
    return pl.DataFrame(schema=EVENT_SCHEMA)


def read_events(
    path: str | os.PathLike[str],
    *,
    columns: Sequence[str] | None = None,
    store: bool = True,
) -> pl.DataFrame:
    """Read one event log into a DataFrame with :data:`EVENT_SCHEMA`.

    Tolerates a torn final line and a missing file body (header only). ``columns`` reads
    only those (memory: the job and stage strings dominate a large log). A log in the
    results store (``store``) is opened without following a link (the store is foreign
    input); a user's own file given to ``ingest`` may be a link.
    """
    p = Path(path)
    try:
        if store:
            with opened_store_file(p) as (source, size):
                return _read_csv(source, size, p, columns)
        return _read_csv(str(p), p.stat().st_size, p, columns)
    except FileNotFoundError:
        raise ResultsError(
            "event log not found", where=str(p), fix="check the results directory path"
        ) from None


def _read_csv(source: str, size: int, p: Path, columns: Sequence[str] | None) -> pl.DataFrame:
    if size == 0:
        return empty_events().select(columns) if columns is not None else empty_events()
    with open(source, "rb") as fh:
        refuse_compressed(fh.read(4), p)  # polars would inflate it, unbounded
        fh.seek(max(0, size - 1))
        complete = fh.read(1) == b"\n"
    data: Any = source
    if not complete:
        with open(source, "rb") as fh:
            raw = fh.read()
        data = io.BytesIO(raw[: raw.rfind(b"\n") + 1])
    try:
        return pl.read_csv(
            data,
            schema=EVENT_SCHEMA,
            has_header=True,
            columns=list(columns) if columns is not None else None,
        )
    except pl.exceptions.PolarsError as exc:
        raise csv_error(exc, p) from None


def csv_error(exc: Exception, path: Path) -> ResultsError:
    """A CSV event log polars could not read (bad bytes, another header, a torn middle)
    as one error naming the file, polars' reason cut to its first 200 characters."""
    reason = (str(exc).splitlines() or [type(exc).__name__])[0]
    return ResultsError(
        f"event log is not valid CSV: {reason[:200]}",
        where=str(path),
        fix="the file is damaged or not a gridbench event log (its header: "
        f"{','.join(EVENT_COLUMNS)}); re-run the trial, or move the file aside",
    )


def concat_events(frames: Iterable[pl.DataFrame]) -> pl.DataFrame:
    frames = [f for f in frames if f.height]
    return pl.concat(frames, how="vertical") if frames else empty_events()
