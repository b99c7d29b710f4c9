"""EDGI XML monitoring reports, written by each tier of the reference grid.

The format is the seed's (EDGI report, Figure 11)::

    <report timestamp="<ms since epoch>" timezone="GMT" version="1.1">
      <metric_data>
        <dt>YYYY-MM-DD HH:MM:SS</dt>
        <event>job_entry</event>
        <job_id>...</job_id>
        ...
      </metric_data>
    </report>

With ``dt_precision="ms"`` the ``<dt>`` gets a ``.mmm`` suffix (a documented extension).
Events are appended and flushed as they happen; a file is closed (made a complete XML
document) ``rotate_s`` after it was opened, and *published* ``publication_delay_s`` after
it was closed, like the real sites whose reports appeared with a delay.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO
from xml.sax.saxutils import escape

EVENT_ENTRY = "job_entry"
EVENT_SUBMISSION = "job_submission"
EVENT_STATUS = "job_status"

STATUS_SUBMITTED = "Submitted"
STATUS_RUNNING = "Running"
STATUS_FINISHED = "Finished"
STATUS_FAILED = "Failed"
STATUS_CANCELLED = "Cancelled"

_FOOTER = "</report>\n"
_NAME_RE = re.compile(r"^(?P<tier>[a-z][a-z0-9_]{0,31})-(?P<seq>[0-9]{6})\.xml$")


def _header(timestamp_ms: int) -> str:
    return f'<report timestamp="{timestamp_ms}" timezone="GMT" version="1.1">\n'


def report_name(tier: str, seq: int) -> str:
    """The file name of report number ``seq`` of ``tier`` (``ce-000001.xml``)."""
    return f"{tier}-{seq:06d}.xml"


def is_report_name(tier: str, name: str) -> bool:
    """True when ``name`` is a well-formed report file name of ``tier`` (guards paths)."""
    m = _NAME_RE.match(name)
    return m is not None and m.group("tier") == tier


@dataclass(frozen=True, slots=True)
class ReportFile:
    """A closed report file."""

    name: str
    size: int
    closed_ns: int


class ReportWriter:
    """Writes one tier's monitoring reports into ``directory/<tier>/``."""

    def __init__(
        self,
        tier: str,
        directory: Path,
        *,
        rotate_s: float,
        publication_delay_s: float,
        dt_precision: str = "s",
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]{0,31}", tier):
            raise ValueError(f"bad tier name {tier!r}")
        self.tier = tier
        self.dir = directory / tier
        self.dir.mkdir(parents=True, exist_ok=True)
        self._rotate_ns = int(rotate_s * 1e9)
        self._delay_ns = int(publication_delay_s * 1e9)
        self._ms = dt_precision == "ms"
        self._clock = clock
        self._closed: dict[str, ReportFile] = {}
        self._fh: TextIO | None = None
        self._current: str | None = None
        self._opened_ns = 0
        self._seq = self._adopt_existing()
        self._dt_cache: tuple[int, str] = (-1, "")

    # -- existing files ---------------------------------------------------------------
    def _adopt_existing(self) -> int:
        """Adopt reports left by an earlier run: terminate cut files, continue numbering."""
        last = 0
        for path in sorted(self.dir.iterdir()):
            m = _NAME_RE.match(path.name)
            if m is None or m.group("tier") != self.tier or not path.is_file():
                continue
            last = max(last, int(m.group("seq")))
            data = path.read_bytes()
            if not data.rstrip().endswith(b"</report>"):
                # A run was killed mid-file: keep the complete elements, close the document.
                end = data.rfind(b"</metric_data>\n")
                head = data.find(b">\n")
                if end >= 0:
                    kept = data[: end + len(b"</metric_data>\n")]
                elif data.startswith(b"<report ") and head >= 0:
                    kept = data[: head + 2]
                else:  # not even the header reached the disk
                    ms = path.stat().st_mtime_ns // 1_000_000
                    kept = _header(ms).encode()
                path.write_bytes(kept + _FOOTER.encode())
            st = path.stat()
            self._closed[path.name] = ReportFile(path.name, st.st_size, st.st_mtime_ns)
        return last

    # -- writing ----------------------------------------------------------------------
    def _dt(self, t_ns: int) -> str:
        sec = t_ns // 1_000_000_000
        if self._dt_cache[0] != sec:
            self._dt_cache = (sec, time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(sec)))
        base = self._dt_cache[1]
        if self._ms:
            return f"{base}.{(t_ns // 1_000_000) % 1000:03d}"
        return base

    def _open(self, now_ns: int) -> TextIO:
        self._seq += 1
        name = report_name(self.tier, self._seq)
        fh = (self.dir / name).open("w", encoding="utf-8")
        fh.write(_header(now_ns // 1_000_000))
        self._fh, self._current, self._opened_ns = fh, name, now_ns
        return fh

    def write(self, t_ns: int, event: str, job_id: str, fields: Iterable[tuple[str, str]]) -> None:
        """Append one ``<metric_data>`` element and flush it to the OS."""
        fh = self._fh if self._fh is not None else self._open(self._clock())
        parts = [
            "  <metric_data>\n",
            f"    <dt>{self._dt(t_ns)}</dt>\n",
            f"    <event>{event}</event>\n",
            f"    <job_id>{escape(job_id)}</job_id>\n",
        ]
        parts.extend(f"    <{tag}>{escape(value)}</{tag}>\n" for tag, value in fields)
        parts.append("  </metric_data>\n")
        fh.write("".join(parts))
        fh.flush()

    def entry(self, t_ns: int, job_id: str, application: str, input_grid_name: str) -> None:
        """A ``job_entry`` event (the job entered this tier)."""
        self.write(
            t_ns,
            EVENT_ENTRY,
            job_id,
            (("application", application), ("input_grid_name", input_grid_name)),
        )

    def submission(self, t_ns: int, job_id: str, job_id_bridge: str, output_grid_name: str) -> None:
        """A ``job_submission`` event: the job left; the next tier knows it as ``job_id_bridge``."""
        self.write(
            t_ns,
            EVENT_SUBMISSION,
            job_id,
            (
                ("job_id_bridge", job_id_bridge),
                ("status", STATUS_SUBMITTED),
                ("output_grid_name", output_grid_name),
            ),
        )

    def status(self, t_ns: int, job_id: str, status: str) -> None:
        """A ``job_status`` event."""
        self.write(t_ns, EVENT_STATUS, job_id, (("status", status),))

    # -- rotation and publication -----------------------------------------------------
    def tick(self, now_ns: int | None = None) -> None:
        """Close the current file when it has been open ``rotate_s``."""
        now = self._clock() if now_ns is None else now_ns
        if self._fh is not None and now - self._opened_ns >= self._rotate_ns:
            self._close_current(now)

    def _close_current(self, now_ns: int) -> None:
        fh, name = self._fh, self._current
        if fh is None or name is None:
            return
        fh.write(_FOOTER)
        fh.flush()
        fh.close()
        size = (self.dir / name).stat().st_size
        self._closed[name] = ReportFile(name, size, now_ns)
        self._fh, self._current = None, None

    def close(self) -> None:
        """Close the current file (at shutdown)."""
        self._close_current(self._clock())

    def published(self, now_ns: int | None = None) -> list[ReportFile]:
        """Files closed at least ``publication_delay_s`` ago, by name."""
        now = self._clock() if now_ns is None else now_ns
        cut = now - self._delay_ns
        return sorted(
            (f for f in self._closed.values() if f.closed_ns <= cut), key=lambda f: f.name
        )

    def published_path(self, name: str, now_ns: int | None = None) -> Path | None:
        """The path of a published file, or None (unknown, unsafe, still open or embargoed)."""
        if not is_report_name(self.tier, name):
            return None
        f = self._closed.get(name)
        now = self._clock() if now_ns is None else now_ns
        if f is None or f.closed_ns > now - self._delay_ns:
            return None
        return self.dir / f.name
