"""What the command backend stages and its timed transfers: the ``{input_size}`` ...
placeholders of a job's staging, the spec fields its templates honour, the ``upload``
before each submit call (:mod:`.upload`) and the ``download`` of each job first seen done
(:mod:`.download`), whose stamps ``server_events`` hands over."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gridbench.jobflow.backends.base import STAGING_FIELDS, JobRequest, JobState, JobStatus
from gridbench.jobflow.backends.command import upload
from gridbench.jobflow.backends.command.calls import TemplateCalls
from gridbench.jobflow.backends.command.download import Downloads
from gridbench.jobflow.backends.command.options import OpConfig
from gridbench.jobflow.backends.command.process import PendingCall
from gridbench.jobflow.backends.command.transfer import (
    STAGE_UPLOAD_START,
    STAGE_UPLOADED,
    job_dir,
    transfer_events,
)
from gridbench.jobflow.events.model import Event


def staging_names(job: JobRequest) -> dict[str, str]:
    """The submit placeholders of what a job stages (``0`` when the spec names none)."""
    st = job.staging
    values = (
        (st.input_bytes, st.input_files, st.output_bytes, st.output_files) if st else (None,) * 4
    )
    return {n: str(v or 0) for n, v in zip(STAGING_FIELDS, values, strict=True)}


def staged_fields(ops: Mapping[str, OpConfig]) -> frozenset[str]:
    """Inputs with an ``upload`` template, outputs with a ``download`` one, and any field
    whose placeholder (``{output_size}`` ...) a template uses."""
    used = set().union(*(op.names for op in ops.values()))
    got = {f for f in STAGING_FIELDS if f in used}
    if "upload" in ops:
        got |= {f for f in STAGING_FIELDS if f.startswith("input")}
    if "download" in ops:
        got |= {f for f in STAGING_FIELDS if f.startswith("output")}
    return frozenset(got)


class Transfers:
    """The timed uploads and downloads of one backend instance."""

    def __init__(self, calls: TemplateCalls) -> None:
        self.calls = calls
        dl = calls.cfg.ops.get("download")
        self._downloads = Downloads(dl.parallel if dl is not None else 1)
        self._uploaded: list[Event] = []  # the stamps of uploads before submit calls

    async def upload(
        self, job: JobRequest, extra: dict[str, str]
    ) -> tuple[int, int, dict[str, Any]] | None:
        """The job's input written and uploaded by the ``upload`` template, timed (None
        without one); a failure is the job's SubmitError."""
        op = self.calls.cfg.ops.get("upload")
        if op is None:
            return None
        calls = self.calls

        def call(root: Path) -> PendingCall:
            argv = calls.argv(op, {**extra, "upload_dir": str(root)})
            return calls.run(op, argv, calls.stdin(op, extra))

        root = job_dir(calls.values["rdir"], "upload", job.name)
        sizes = upload.input_layout(job.staging)
        return await upload.timed_upload(root, job.name, sizes, call, op.ok_codes)

    def uploaded(self, backend_id: str, timed: tuple[int, int, dict[str, Any]]) -> None:
        """Keep the stamps of the upload before the submit call that named ``backend_id``."""
        t0, t1, attrs = timed
        stages = (STAGE_UPLOAD_START, STAGE_UPLOADED)
        self._uploaded += transfer_events(backend_id, stages, t0, t1, attrs)

    def download_done(self, found: Mapping[str, JobStatus]) -> None:
        """Start downloading each job first seen done (``download``)."""
        op = self.calls.cfg.ops.get("download")
        if op is None:
            return
        calls = self.calls
        done = [i for i, st in found.items() if st.state is JobState.DONE]
        for bid in self._downloads.new(done):
            root = job_dir(calls.values["rdir"], "download", calls.names.get(bid, "") or bid)
            argv = calls.argv(op, {**calls.job_values(bid), "download_dir": str(root)})
            self._downloads.start(bid, root, calls.run(op, argv, None), op.ok_codes)

    async def take(self) -> list[Event]:
        """The stamps of the downloads started so far (waited for) and of the uploads."""
        out = await self._downloads.take()
        out += self._uploaded
        self._uploaded = []
        return out

    async def wait(self) -> None:
        await self._downloads.wait()
