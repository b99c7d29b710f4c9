"""How a family's run ended, in the words every family uses: the status handed to the
runner's own ``finish`` whatever happens (:func:`recorded_end`), the exit code of a run
that records a status (:func:`status_exit_code`) and the catalogue's verdict
(:func:`status_verdict`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from gridbench.errors import EXIT_BACKEND, EXIT_INTERRUPTED, EXIT_OK, EXIT_THRESHOLD, GridbenchError
from gridbench.states import ABORTED, COMPLETE, FAIL, FAILED, PASS, VOID, run_state


@contextmanager
def recorded_end(finish: Callable[[str, str | None], object]) -> Iterator[None]:
    """How a family's run ended, handed to ``finish(status, error)`` whatever happens:
    complete; aborted by Ctrl-C ("interrupted"); failed, with a GridbenchError's own text
    or another error's type and text. The error goes on after ``finish``."""
    status, error = COMPLETE, None
    try:
        yield
    except KeyboardInterrupt:
        status, error = ABORTED, "interrupted"
        raise
    except GridbenchError as exc:
        status, error = FAILED, str(exc)
        raise
    except BaseException as exc:
        status, error = FAILED, f"{type(exc).__name__}: {exc}"
        raise
    finally:
        finish(status, error)


def status_exit_code(metrics: Mapping[str, Any], *, passed: bool) -> int:
    """The exit code of a run that records a ``status``: 3 when it failed, 130 when it was
    aborted, else 0 when ``passed`` (its thresholds and checks) and 1 when not."""
    status = metrics.get("status")
    if status == "failed":
        return EXIT_BACKEND
    if status == "aborted":
        return EXIT_INTERRUPTED
    return EXIT_OK if passed else EXIT_THRESHOLD


def status_verdict(
    metrics: Mapping[str, Any], code: int, *, flagged: str, also: str = "", void: str = ""
) -> str:
    """pass or fail by ``code`` (else the run's status), then ``also`` (a family's own
    remark) in parentheses, then ``flagged`` when the metrics' validity says some figure
    is not to be trusted. ``void``: what voids the comparison (a figure better than its
    floor): the verdict is then "void", never "pass", and says why first."""
    word = {EXIT_OK: PASS, EXIT_THRESHOLD: FAIL}.get(code, run_state(metrics.get("status")))
    if void:
        word = f"{VOID if word == PASS else word} ({void})"
    if also:
        word += f" ({also})"
    validity = metrics.get("validity")
    if isinstance(validity, Mapping) and not validity.get("valid", True):
        word += f" ({flagged})"
    return word
