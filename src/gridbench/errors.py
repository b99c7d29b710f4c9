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


#: Exit codes shared by every command of every family (docs/cli.md).
EXIT_OK = 0  # success
EXIT_THRESHOLD = 1  # a threshold or check failed
EXIT_INPUT = 2  # bad input: spec, results, usage
EXIT_BACKEND = 3  # the system under test (or its tool) failed or could not be reached
EXIT_INVALID = 4  # the measurement is invalid (with --fail-invalid)
EXIT_INTERRUPTED = 130
