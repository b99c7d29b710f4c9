"""Pulling a growing columnar log (an Arrow IPC stream) a piece at a time.

An agent on Dask writes its own log as :class:`~gridbench.jobflow.events.columnar.ArrowEventLog`
writes the trial's, and the controller pulls the new bytes every few hundred ms. A piece
of a stream is not a stream: it has no schema, and its batches refer to dictionaries
sent in earlier pieces. So

- the agent's side (:func:`complete_messages`) ships only whole messages, and only up to
  the end of the last complete record batch (or the end-of-stream marker): a message
  being written, and a dictionary whose batch is not yet written, wait for the next pull;
- the controller's side (:class:`StreamPulls`) keeps the schema message and the latest
  dictionary message per dictionary id seen so far, and decodes each piece as the stream
  ``schema + current dictionaries + piece``.
"""

from __future__ import annotations

import re
import struct

import polars as pl
import pyarrow as pa

from gridbench.errors import ResultsError
from gridbench.jobflow.events.columnar import ARROW_SCHEMA, FORMAT, FORMAT_KEY
from gridbench.jobflow.events.ipc_guard import check_dictionaries, check_stream
from gridbench.jobflow.events.model import EVENT_SCHEMA

_CONTINUATION = b"\xff\xff\xff\xff"
_END = _CONTINUATION + b"\x00\x00\x00\x00"  # the end-of-stream marker
# a gridbench message's metadata is under 1 KiB: a longer claim is garbage, not a message
# still being written (which would otherwise wait for ever)
_METADATA_MAX = 1 << 16
# pyarrow's words for a message cut short (still being written), as against garbage
_TORN = re.compile(r"Expected to (be able to )?read|bytes available")
_FIX = (
    "the agent runs another gridbench version, or its log is damaged; "
    "check the agent's log, then 'gridbench collect' the run"
)


def complete_messages(data: bytes) -> int:
    """How many bytes of ``data`` (a piece of an Arrow IPC stream starting at a message)
    are whole messages up to the end of the last complete record batch or end-of-stream
    marker. Bytes that are no message at all count as complete, so that the reader's
    decode names them (:class:`StreamPulls`) rather than the pulls waiting for ever."""
    reader = pa.BufferReader(pa.py_buffer(data))
    pos = end = 0
    while pos < len(data):
        head = data[pos : pos + 8]
        if not _CONTINUATION.startswith(head[:4]):
            return len(data)
        if len(head) == 8:
            if head == _END:
                return pos + 8
            if not 0 < int.from_bytes(head[4:], "little", signed=True) <= _METADATA_MAX:
                return len(data)
        try:
            message = pa.ipc.read_message(reader)
        except (pa.ArrowException, OSError, EOFError) as exc:
            return end if _TORN.search(str(exc)) else len(data)
        pos = reader.tell()
        if message.type == "record batch":
            end = pos
    return end


def _dictionary_id(metadata: bytes) -> int:
    """The id of a dictionary message, from its flatbuffer metadata (Message.header is a
    DictionaryBatch whose first field is ``id``; absent means the default, 0)."""

    def field(table: int, slot: int) -> int | None:
        vtable = table - struct.unpack_from("<i", metadata, table)[0]
        size = struct.unpack_from("<H", metadata, vtable)[0]
        at = 4 + 2 * slot
        off = struct.unpack_from("<H", metadata, vtable + at)[0] if at < size else 0
        return table + off if off else None

    root = struct.unpack_from("<I", metadata, 0)[0]
    header = field(root, 2)  # Message: version, header_type, header, bodyLength, ...
    if header is None:
        raise ValueError("dictionary message without a header")
    table = header + struct.unpack_from("<I", metadata, header)[0]
    at = field(table, 0)
    return 0 if at is None else int(struct.unpack_from("<q", metadata, at)[0])


class StreamPulls:
    """The pieces of one growing log, each decoded against the schema and dictionaries
    of the pieces before it. A piece that does not decode is one :class:`ResultsError`
    naming the log (``where``), and leaves the state as it was (the pull is retried)."""

    def __init__(self, where: str) -> None:
        self.where = where
        self._schema: bytes | None = None
        self._dictionaries: dict[int, bytes] = {}  # id -> its latest message

    def decode(self, data: bytes) -> pl.DataFrame:
        """The events of ``data`` (whole messages, :func:`complete_messages`) as
        :data:`EVENT_SCHEMA`."""
        check_stream(data, self.where)  # a compressed batch is never inflated
        try:
            schema, dictionaries = self._scan(data)
            prefix = b"".join([self._schema or b"", *self._dictionaries.values()])
            reader = pa.ipc.open_stream(prefix + data)
            _check_schema(reader.schema)
            batches = list(reader)
            for batch in batches:
                batch.validate(full=True)  # offsets, UTF-8 and dictionary indices
        except (pa.ArrowException, OSError, EOFError, ValueError, struct.error) as exc:
            raise ResultsError(
                f"the agent's log is not a readable Arrow stream: {str(exc)[:200]}",
                where=self.where,
                fix=_FIX,
            ) from None
        table = pa.Table.from_batches(batches, schema=ARROW_SCHEMA)
        check_dictionaries(table, self.where)
        self._schema = schema or self._schema
        self._dictionaries.update(dictionaries)
        table = table.unify_dictionaries()
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        return frame.cast(EVENT_SCHEMA)

    def _scan(self, data: bytes) -> tuple[bytes | None, dict[int, bytes]]:
        """The schema message and the latest dictionary message per id in ``data``."""
        reader = pa.BufferReader(pa.py_buffer(data))
        schema: bytes | None = None
        dictionaries: dict[int, bytes] = {}
        pos = 0
        while pos < len(data):
            if data[pos : pos + 8] == _END:
                break
            message = pa.ipc.read_message(reader)
            end = reader.tell()
            if message.type == "schema":
                if self._schema is not None or pos:
                    raise ValueError(f"a second schema at byte {pos} of the pull")
                schema = data[pos:end]
            elif message.type == "dictionary":
                dictionaries[_dictionary_id(message.metadata.to_pybytes())] = data[pos:end]
            pos = end
        if self._schema is None and schema is None:
            raise ValueError("the log's first pull does not start with its schema")
        return schema, dictionaries


def _check_schema(schema: pa.Schema) -> None:
    meta = schema.metadata
    if meta is None or meta.get(FORMAT_KEY) != FORMAT:
        raise ValueError("an Arrow stream without the gridbench events/1 marker")
    if not schema.equals(ARROW_SCHEMA, check_metadata=False):
        raise ValueError("its columns differ from gridbench's events/1")
