"""An agent's columnar log pulled a piece at a time (issue 26): the agent hands over only
whole IPC messages up to its last complete batch, and the controller decodes each piece
against the schema and dictionaries of the pieces before it, into the trial's log."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from gridbench.errors import ResultsError
from gridbench.jobflow.events.columnar import ArrowEventLog
from gridbench.jobflow.events.ipc_pull import StreamPulls, complete_messages
from gridbench.jobflow.events.log import Origin
from gridbench.jobflow.events.trial_log import read_event_log, read_trial_log
from gridbench.jobflow.run.agent_merge import LogMerger
from gridbench.jobflow.run.agent_worker import read_log

AGENT = Origin("client", 1_000, "agent-1", -5)


def _messages(raw: bytes) -> list[tuple[int, int, str]]:
    """(start, end, type) of every message of a whole stream (end-of-stream excluded)."""
    reader = pa.BufferReader(pa.py_buffer(raw))
    out = []
    while True:
        start = reader.tell()
        try:
            message = pa.ipc.read_message(reader)
        except EOFError:
            return out
        out.append((start, reader.tell(), message.type))


def _write(path: Path, stages: list[str], *, batch: int = 4) -> None:
    with ArrowEventLog(path, batch_size=batch) as log:
        for i, stage in enumerate(stages):
            log.append(f"j{i}", stage, 1_000 + i, AGENT, attrs={"k": i} if i % 3 else None)


def test_a_pull_hands_over_only_whole_messages_up_to_the_last_complete_batch(
    tmp_path: Path,
) -> None:
    path = tmp_path / "p00-t00.events.arrows"
    # the last batch brings a new stage: its dictionary message comes right before it
    _write(path, ["submit"] * 8 + ["client_done"] * 3)
    raw = path.read_bytes()
    messages = _messages(raw)
    assert [m[2] for m in messages[-2:]] == ["dictionary", "record batch"]
    dict_start, last_end = messages[-2][0], messages[-1][1]
    before = max(e for s, e, t in messages[:-2] if t == "record batch")
    assert before == dict_start  # the new dictionary waits with its batch
    for cut in range(dict_start, last_end):
        assert complete_messages(raw[:cut]) == before, cut
    assert complete_messages(raw[:last_end]) == last_end
    assert complete_messages(raw) == len(raw)  # with the end-of-stream marker
    # read_log on the file cut inside its last batch: the same bytes and offset
    path.write_bytes(raw[: last_end - 1])
    data, offset, live = read_log(str(path), 0)
    assert (data, offset, live) == (raw[:before], before, None)
    data, offset, _ = read_log(str(path), before)  # nothing whole beyond it yet
    assert (data, offset) == (b"", before)


def test_pieces_decode_against_the_dictionaries_pulled_before(tmp_path: Path) -> None:
    """A live agent log pulled after each flush: a later pull whose batches use values
    first sent in an earlier pull, and one where a dictionary grew, decode to the log's
    events; merged into a trial log after the controller's own event."""
    agent = tmp_path / "agents" / "agent-1" / "p00-t00.events.arrows"
    trial = tmp_path / "trial"
    pulls: list[bytes] = []
    offset = 0
    with ArrowEventLog(agent, batch_size=10_000) as log:
        for k, stages in enumerate((["intended", "submit"], ["submit"], ["client_done"])):
            for i in range(5):
                for stage in stages:
                    log.append(f"j{k}-{i}", stage, 10 * k + i, AGENT, attrs={"b": f"x,{i}"})
            log.flush()
            data, offset, _ = read_log(str(agent), offset)
            pulls.append(data)
    data, offset, _ = read_log(str(agent), offset)  # the end-of-stream marker
    assert data == b"\xff\xff\xff\xff\x00\x00\x00\x00" and offset == agent.stat().st_size
    pulls.append(data)
    decoder = StreamPulls("agent-1's log")
    frames = [decoder.decode(p) for p in pulls]
    assert [f.height for f in frames] == [10, 5, 5, 0]
    assert frames[1]["stage"].unique().to_list() == ["submit"]  # sent in the first pull
    assert frames[2]["stage"].unique().to_list() == ["client_done"]  # the grown dictionary
    assert pl.concat(frames).equals(read_event_log(agent))
    with ArrowEventLog(trial / "events.arrows") as elog:
        elog.append("j9", "intended", 7)  # the controller's own pending event
        merger = LogMerger(elog, "agent-1's log", columnar=True)
        for k, p in enumerate(pulls):
            merger.add(p, k == 0)
        assert merger.events == 20 and elog.count == 21
    merged = read_trial_log(trial)
    assert merged.row(0)[:3] == ("j9", "intended", 7)
    assert merged.slice(1).equals(read_event_log(agent))
    assert set(merged["agent"].unique()) == {"local", "agent-1"}


@pytest.mark.parametrize(
    "garbage",
    [b"garbage, not an Arrow stream\n", b"\xff\xff\xff\xff\x10\x00\x00\x00" + b"x" * 16],
)
def test_bytes_that_do_not_decode_are_one_error_naming_the_agents_log(
    tmp_path: Path, garbage: bytes
) -> None:
    agent = tmp_path / "p00-t00.events.arrows"
    _write(agent, ["submit"] * 6)
    raw = agent.read_bytes()
    first = [e for _, e, t in _messages(raw) if t == "record batch"][1]  # empty, then 4
    decoder = StreamPulls("agent-1's log /x/p00-t00.events.arrows")
    assert decoder.decode(raw[:first]).height == 4
    # garbage is handed over whole, so that the decode names it rather than pulls waiting
    assert complete_messages(garbage) == len(garbage)
    with pytest.raises(ResultsError, match="not a readable Arrow stream") as err:
        decoder.decode(garbage)
    assert err.value.where == "agent-1's log /x/p00-t00.events.arrows"
    assert "gridbench collect" in (err.value.fix or "")
    # the failed pull left the state as it was: the rest still decodes
    assert decoder.decode(raw[first:])["job"].to_list() == ["j4", "j5"]
    with pytest.raises(ResultsError, match="does not start with its schema"):
        StreamPulls("agent-1's log").decode(raw[first:])


def test_a_batch_longer_than_one_pull_is_read_whole(tmp_path: Path) -> None:
    """A batch past the pull's limit (8 MiB: a long run of events with large attributes)
    comes in one pull, whole, rather than never."""
    from gridbench.jobflow.run.agent_worker import READ_LIMIT

    path = tmp_path / "agent.events.arrows"
    pad = "x" * 4096
    n = READ_LIMIT // len(pad) + 64  # one batch: more bytes than a pull reads
    with ArrowEventLog(path, batch_size=n + 1) as log:
        for i in range(n):
            log.append(f"j{i}", "submit", i, AGENT, attrs={"pad": pad})
    size = path.stat().st_size
    assert size > READ_LIMIT
    pulls = StreamPulls(str(path))
    head, offset, _ = read_log(str(path), 0)  # the schema and the writer's empty batch
    assert offset == len(head) < 4096 and pulls.decode(head).height == 0
    data, end, _ = read_log(str(path), offset)
    assert end - offset == len(data) > READ_LIMIT
    got = pulls.decode(data)
    assert got.height == n and got["job"].to_list() == [f"j{i}" for i in range(n)]
    assert read_log(str(path), end)[0] in (b"", b"\xff\xff\xff\xff\x00\x00\x00\x00")
