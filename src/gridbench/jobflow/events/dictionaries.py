"""One growing dictionary per column for a columnar log's few-valued columns.

A live writer's batch holds what 0.1 s brought (a hundred events at 100 jobs/s), and a
batch built on its own carries its own small dictionary for ``stage``, ``source`` and
``agent``. Reading then pays a conversion per batch and column (measured: 1 M events in
200-event batches, 2.8 s against 1.0 s). So the writer codes every batch against one
dictionary per column that only grows (:class:`GrowingDictionaries`: rows as it builds
the batch, :meth:`~GrowingDictionaries.coded`; a frame's batch by re-coding it,
:meth:`~GrowingDictionaries.encode`; the stream
carries the dictionary again only when a value is new), and the reader joins a group of
batches whose dictionaries extend one another into one array
(:func:`combined_dictionary`). Logs written with a dictionary per batch stay readable
through the per-batch path.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc


class GrowingDictionaries:
    """Per dictionary column of a schema: every value seen so far, in first-seen order."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self._index: dict[int, dict[str, int]] = {
            i: {} for i, f in enumerate(schema) if pa.types.is_dictionary(f.type)
        }
        self._arrays: dict[int, pa.Array] = {i: strings_array([]) for i in self._index}

    def encode(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` with each dictionary column coded against the growing dictionary
        (a null value or index stays null)."""
        columns = batch.columns
        for i, index in self._index.items():
            col = columns[i]
            assert isinstance(col, pa.DictionaryArray)
            values = col.dictionary.to_pylist()
            # only the values the batch uses: a dictionary may hold others (the writer's
            # empty first batch, a frame's categories)
            used = pc.value_counts(col.indices).field("values").to_pylist()
            for k in sorted(u for u in used if u is not None):
                v = values[k]
                if v is not None and v not in index:
                    index[v] = len(index)
                    self._arrays[i] = strings_array(list(index))
            codes = np.array([index.get(v, -1) for v in values], dtype=np.int32)
            valid = codes >= 0
            remap = pa.Array.from_buffers(
                pa.int32(),
                len(codes),
                [None if valid.all() else _bitmap(valid), pa.py_buffer(codes)],
            )
            columns[i] = pa.DictionaryArray.from_arrays(
                pc.take(remap, col.indices), self._arrays[i]
            )
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def coded(self, column: int, values: Sequence[str]) -> pa.DictionaryArray:
        """``values`` (strings, none null) coded against the growing dictionary of
        ``column``: a live writer's rows, coded once (no per-batch dictionary to re-code)."""
        index = self._index[column]
        try:
            codes = np.fromiter(map(index.__getitem__, values), np.int32, len(values))
        except KeyError:  # a new value: grow the dictionary, in first-seen order
            self.grow(column, values)
            codes = np.fromiter(map(index.__getitem__, values), np.int32, len(values))
        return self.from_codes(column, codes)

    def from_codes(self, column: int, codes: npt.NDArray[np.int32]) -> pa.DictionaryArray:
        """``codes`` (into the growing dictionary of ``column``) as its column."""
        indices = pa.Array.from_buffers(pa.int32(), len(codes), [None, pa.py_buffer(codes)])
        return pa.DictionaryArray.from_arrays(indices, self._arrays[column])

    def codes_of(self, column: int, values: Sequence[str]) -> npt.NDArray[np.int32]:
        """The code of each of ``values`` (a few) in the growing dictionary of ``column``,
        -1 for one not in it."""
        index = self._index[column]
        return np.array([index.get(v, -1) for v in values], dtype=np.int32)

    def grow(self, column: int, values: Sequence[str]) -> None:
        """Add the ``values`` not yet in ``column``'s dictionary, in first-seen order."""
        index = self._index[column]
        new = [v for v in dict.fromkeys(values) if v not in index]
        if new:
            for v in new:
                index[v] = len(index)
            self._arrays[column] = strings_array(list(index))


def _bitmap(valid: npt.NDArray[np.bool_]) -> pa.Buffer:
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def combined_dictionary(chunks: Sequence[pa.Array]) -> pa.DictionaryArray | None:
    """The chunks of a dictionary column as one array when each chunk's dictionary is a
    prefix of the last one's (a growing dictionary: codes mean the same in all), else
    ``None`` (a log with a dictionary per batch: read chunk by chunk)."""
    if not chunks:
        return None
    last = chunks[-1]
    assert isinstance(last, pa.DictionaryArray)
    full = last.dictionary
    for chunk in chunks[:-1]:
        assert isinstance(chunk, pa.DictionaryArray)
        d = chunk.dictionary
        if d is not full and not (len(d) <= len(full) and d.equals(full.slice(0, len(d)))):
            return None
    indices = pa.concat_arrays([c.indices for c in chunks])
    return pa.DictionaryArray.from_arrays(indices, full)


def strings_array(values: Sequence[str], *, empty_is_null: bool = False) -> pa.Array:
    """A string array built from its buffers (``pa.array(list)`` would import pandas,
    ~0.5 s, whose objects then lengthen every collection of the dispatcher's process);
    ``empty_is_null``: empty strings become nulls."""
    n = len(values)
    lengths = np.fromiter(map(len, values), np.int32, n)
    data = "".join(values).encode("utf-8", "replace")
    if len(data) != int(lengths.sum()):  # not all ASCII: lengths in bytes, one by one
        lengths = np.fromiter((len(v.encode("utf-8", "replace")) for v in values), np.int32, n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    bitmap, nulls = None, 0
    if empty_is_null:
        valid = lengths > 0
        nulls = n - int(valid.sum())
        if nulls:
            bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data), bitmap, nulls)
