"""The iozone test matrix expressed as fio jobs (``iozone -s SIZE -r RECORD [-c] [-e]``).

Each iozone test maps to one fio job on the same file, run in iozone's order:

==============  ==========================================  ===================
iozone test     fio                                          direction
==============  ==========================================  ===================
write           rw=write on a new file                       write
rewrite         rw=write on the existing file                write
read            rw=read                                      read
reread          rw=read again (no cache drop before it)      read
random_read     rw=randread, file_size bytes                 read
random_write    rw=randwrite, file_size bytes                write
backward_read   rw=read:-2×bs (a negative skip steps back)   read
record_rewrite  rw=write:-bs (same record, file_size bytes)  write
stride_read     rw=read:(stride−1)×bs, file_size bytes       read
==============  ==========================================  ===================

``include_flush`` (iozone -e) adds ``end_fsync=1`` to the write tests: fio's ``do_io``
fsyncs the file before the job's run time is taken, so the flush is timed.
``include_close`` (iozone -c) needs no option: fio closes a file as soon as its I/O is
done, inside the timed region (its I/O log shows the close before the job ends), so fio's
figures always include close(). ``include_close: false`` therefore cannot be honoured;
the run says so in its notes.
"""

from __future__ import annotations

from typing import Literal

from gridbench.io.fio import JobOptions
from gridbench.io.model import IOZONE_TESTS, IozoneSpec

DATA_FILE = "gridbench-iozone.dat"

#: Which direction each test measures.
DIRECTION: dict[str, Literal["read", "write"]] = {
    "write": "write",
    "rewrite": "write",
    "read": "read",
    "reread": "read",
    "random_read": "read",
    "random_write": "write",
    "backward_read": "read",
    "record_rewrite": "write",
    "stride_read": "read",
}

#: iozone's column headers, for reports in the seed's layout.
LABEL: dict[str, str] = {
    "write": "Write",
    "rewrite": "Rewrite",
    "read": "Read",
    "reread": "Re-read",
    "random_read": "Random read",
    "random_write": "Random write",
    "backward_read": "Backward read",
    "record_rewrite": "Record rewrite",
    "stride_read": "Stride read",
}


def ordered_tests(spec: IozoneSpec) -> list[str]:
    """The spec's tests in iozone's column order (duplicates dropped)."""
    chosen = set(spec.tests)
    return [t for t in IOZONE_TESTS if t in chosen]


def iozone_options(test: str, spec: IozoneSpec) -> dict[str, str | int | bool]:
    """fio job options for one iozone test (file and cache options are added by the caller)."""
    bs, size = spec.record_size, spec.file_size
    opts: dict[str, str | int | bool] = {"bs": bs, "size": size}
    if test in ("write", "rewrite"):
        opts["rw"] = "write"
    elif test in ("read", "reread"):
        opts["rw"] = "read"
    elif test == "random_read":
        opts["rw"] = "randread"
        opts["randrepeat"] = 0
    elif test == "random_write":
        opts["rw"] = "randwrite"
        opts["randrepeat"] = 0
    elif test == "backward_read":
        opts["rw"] = f"read:-{2 * bs}"
    elif test == "record_rewrite":
        # skip -bs: each write lands on the record just written
        opts["rw"] = f"write:-{bs}"
        opts["number_ios"] = size // bs
    elif test == "stride_read":
        opts["rw"] = f"read:{(spec.stride - 1) * bs}"
        opts["io_size"] = size
    else:
        raise ValueError(f"unknown iozone test {test!r}")
    if DIRECTION[test] == "write" and spec.include_flush:
        opts["end_fsync"] = True
    return opts


def fio_path(value: str) -> str:
    """A path as a fio ``directory=``/``filename=`` value: fio splits those at ':' (a list
    of paths), so a ':' in the path is escaped as '\\:'."""
    return value.replace(":", "\\:")


def job_options(
    test: str,
    spec: IozoneSpec,
    *,
    directory: str,
    direct: bool,
    filename: str = DATA_FILE,
) -> JobOptions:
    """Complete fio options for one iozone test in ``directory``."""
    opts = iozone_options(test, spec)
    opts.update(
        directory=fio_path(directory),
        filename=fio_path(filename),
        ioengine=spec.ioengine,
        direct=direct,
        lat_percentiles=True,
        percentile_list="50:90:99:99.9",
        # fio must not create, extend or delete anything but its own file
        allow_file_create=test == "write",
        unlink=False,
    )
    return opts


def needs_cache_drop(test: str) -> bool:
    """Whether the page cache is dropped before this test in drop_caches mode (re-read
    deliberately measures the cache, as iozone's re-read does)."""
    return DIRECTION[test] == "read" and test != "reread"


CLOSE_NOTE = (
    "include_close: false cannot be honoured: fio always times close() (figures include it)"
)

__all__ = ["DATA_FILE", "DIRECTION", "LABEL", "iozone_options", "job_options", "ordered_tests"]
