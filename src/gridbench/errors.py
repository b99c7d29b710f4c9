"""User-facing errors: each names the place, what was wrong, and the fix."""

from __future__ import annotations


class GridbenchError(Exception):
    """An error the CLI prints as one clear message (never a traceback).

    ``where`` names the place (file:line, field, URL, backend), ``fix`` says what to do.
    """

    def __init__(self, message: str, *, where: str | None = None, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.fix = fix

    def __str__(self) -> str:
        parts = [f"{self.where}: {self.message}" if self.where else self.message]
        if self.fix:
            parts.append(f"fix: {self.fix}")
        return "\n  ".join(parts)


class SpecError(GridbenchError):
    """The experiment spec is malformed or inconsistent."""


class BackendError(GridbenchError):
    """The backend could not be reached or answered something unusable."""


class IngestError(GridbenchError):
    """A foreign event source (monitoring report, JSON lines) could not be read at all."""


class ResultsError(GridbenchError):
    """A results directory is missing, incomplete or unreadable."""


class ResourceError(ResultsError):
    """The machine refused to store results: a full disk or quota, a read-only file system,
    too many open files. What was written before is kept and can be analysed."""


#: errno values that are the machine's resources, not a bug of ours.
RESOURCE_ERRNOS = frozenset({28, 122, 30, 24, 23, 12})  # ENOSPC EDQUOT EROFS EMFILE ENFILE ENOMEM


def resource_error(exc: OSError, path: object | None = None) -> ResourceError | None:
    """``exc`` as one clear error naming the file and the free space left there, when it
    is a resource error (:data:`RESOURCE_ERRNOS`); else None."""
    import shutil
    from pathlib import Path

    if exc.errno not in RESOURCE_ERRNOS:
        return None
    where = str(path if path is not None else exc.filename or "the results folder")
    free = ""
    folder = Path(where).parent if path is not None or exc.filename else None
    if folder is not None:
        try:
            left = shutil.disk_usage(folder).free
            free = f"; {left / 2**20:.1f} MiB free there"
        except OSError:
            pass
    return ResourceError(
        f"cannot write: {exc.strerror or exc}{free}",
        where=where,
        fix="free space (or raise the quota, or the open-files limit) and re-run; what was "
        "written so far is kept: 'gridbench analyze RUN' reads it",
    )


#: Exit codes shared by every command of every family (docs/cli.md).
EXIT_OK = 0  # success
EXIT_THRESHOLD = 1  # a threshold or check failed
EXIT_INPUT = 2  # bad input: spec, results, usage
EXIT_BACKEND = 3  # the system under test (or its tool) failed or could not be reached
EXIT_INVALID = 4  # the measurement is invalid (with --fail-invalid)
EXIT_INTERRUPTED = 130
