"""Arrow IPC messages checked before pyarrow decodes them: a log is foreign input.

gridbench writes its columnar logs uncompressed (:mod:`gridbench.jobflow.events.columnar`),
so a log's size bounds what reading it costs, and a batch is mapped from the file rather
than copied. An Arrow record batch may declare body compression (LZ4 or ZSTD), and
pyarrow then inflates it whole when the batch is read: 13 KB of a planted log once
unpacked to 8 M events (2.3 GB) in ``analyze``. Each message's metadata (a flatbuffer) is
read here first, and a compressed batch or dictionary is refused before any of it is
inflated. A string dictionary is bounded too (:data:`MAX_DICTIONARY_VALUE`): a dictionary
column repeats its values in every row once cast to strings, the other way to make a
small log large.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from gridbench.errors import ResultsError

#: bytes as pyarrow hands them over, or a mapped log
Buffer = bytes | bytearray | memoryview | mmap.mmap

#: the message kinds of Arrow's ``MessageHeader`` union that hold a record batch
_DICTIONARY_BATCH, _RECORD_BATCH = 2, 3
_CONTINUATION = 0xFFFFFFFF

#: the longest value of a dictionary column (stage, source, agent) a log may hold, in
#: bytes: gridbench's are names (a host name is at most 253)
MAX_DICTIONARY_VALUE = 4096

FIX = (
    "gridbench writes its event logs uncompressed: this file was not written by "
    "gridbench; move it aside"
)


@dataclass(frozen=True, slots=True)
class MessageInfo:
    """What a message's metadata says: its kind, its body's length, and whether that body
    is compressed."""

    header_type: int
    body_length: int
    compressed: bool


class _Flat:
    """Bounds-checked reading of one flatbuffer (every offset is foreign input)."""

    def __init__(self, data: Buffer) -> None:
        self.data = memoryview(data).cast("B")

    def _u(self, fmt: str, at: int) -> int:
        if at < 0:
            raise ValueError("an offset before the metadata")
        return int(struct.unpack_from(fmt, self.data, at)[0])

    def root(self) -> int:
        return self._u("<I", 0)

    def field(self, table: int, slot: int) -> int | None:
        """Where field ``slot`` of the table at ``table`` lies, or None when absent."""
        vtable = table - self._u("<i", table)
        size = self._u("<H", vtable)
        at = 4 + 2 * slot
        off = self._u("<H", vtable + at) if at + 2 <= size else 0
        return table + off if off else None

    def table(self, table: int, slot: int) -> int | None:
        """The table field ``slot`` points to (an offset relative to the field)."""
        at = self.field(table, slot)
        return None if at is None else at + self._u("<I", at)

    def scalar(self, table: int, slot: int, fmt: str, default: int = 0) -> int:
        at = self.field(table, slot)
        return default if at is None else self._u(fmt, at)


def message_info(metadata: Buffer) -> MessageInfo:
    """The kind, body length and compression of one message, from its flatbuffer metadata
    (``Message``: version, header_type, header, bodyLength; ``RecordBatch``: length, nodes,
    buffers, compression; ``DictionaryBatch``: id, data). ValueError (or struct.error)
    when the metadata is no such flatbuffer."""
    flat = _Flat(metadata)
    message = flat.root()
    kind = flat.scalar(message, 1, "<B")
    body = flat.scalar(message, 3, "<q")
    if body < 0:
        raise ValueError("a negative body length")
    batch = flat.table(message, 2) if kind in (_DICTIONARY_BATCH, _RECORD_BATCH) else None
    if batch is not None and kind == _DICTIONARY_BATCH:
        batch = flat.table(batch, 1)
    compressed = batch is not None and flat.field(batch, 3) is not None
    return MessageInfo(kind, body, compressed)


def check_stream(data: Buffer, where: str) -> None:
    """Refuse an Arrow IPC stream (a log's segment, or a pulled piece of one) holding a
    compressed record batch or dictionary, before pyarrow reads any of it: one
    :class:`ResultsError` naming ``where``. A message cut short at the end (a writer
    killed mid-batch, a piece still being written), or bytes that are no message, end the
    check: the reader counts, waits for or refuses them as before (pyarrow verifies each
    flatbuffer it reads, and any it accepts is read here the same way)."""
    buf = memoryview(data).cast("B")
    n, pos = len(buf), 0
    while pos + 8 <= n:
        word = int.from_bytes(buf[pos : pos + 4], "little")
        if word == _CONTINUATION:
            length = int.from_bytes(buf[pos + 4 : pos + 8], "little", signed=True)
            start = pos + 8
        else:  # the format before the continuation marker: a bare length
            length = int.from_bytes(buf[pos : pos + 4], "little", signed=True)
            start = pos + 4
        if length == 0:  # the end-of-stream marker
            return
        if length < 0 or start + length > n:
            return  # garbage or a torn message: the reader names it
        try:
            info = message_info(buf[start : start + length])
        except (ValueError, struct.error):
            return  # no flatbuffer at all: pyarrow, which verifies it, refuses it in its words
        if info.compressed:
            raise ResultsError(
                f"compressed Arrow record batch at byte {pos}; gridbench does not inflate "
                "compressed logs (a few KB can unpack to gigabytes)",
                where=where,
                fix=FIX,
            )
        pos = start + length + info.body_length


def check_dictionaries(table: pa.Table | pa.RecordBatch, where: str) -> None:
    """Refuse a dictionary column whose values are longer than
    :data:`MAX_DICTIONARY_VALUE` bytes (cast to strings, each row would repeat one)."""
    for name, col in zip(table.schema.names, table.columns, strict=True):
        if not pa.types.is_dictionary(col.type):
            continue
        chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
        seen: set[tuple[int, int]] = set()  # a live log's batches share their dictionaries
        for chunk in chunks:
            values = chunk.dictionary
            offsets = values.buffers()[1]
            key = (offsets.address if offsets is not None else 0, len(values))
            if not len(values) or key in seen:
                continue
            seen.add(key)
            if pc.max(pc.binary_length(values)).as_py() > MAX_DICTIONARY_VALUE:
                raise ResultsError(
                    f"a value of the {name} column is longer than {MAX_DICTIONARY_VALUE} bytes",
                    where=where,
                    fix="gridbench's stage, source and agent names are short: this file was "
                    "not written by gridbench; move it aside",
                )
