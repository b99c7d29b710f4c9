"""``gridbench cleanup CAMPAIGN``: what a killed campaign left behind. A unit's process
that somehow lives on (by the pid and start time the log recorded) is stopped, and each
linked run that did not finish is cleaned up by its family (``Cleanable``), as
``gridbench cleanup RUN`` does."""

from __future__ import annotations

from pathlib import Path

from gridbench.campaign.folder import CampaignDir, find_campaign, replay
from gridbench.campaign.processes import is_unit, stop_group
from gridbench.errors import GridbenchError
from gridbench.family import Cleanable, CleanupOutcome, family_of
from gridbench.states import FINISHED
from gridbench.store.layout import RunDir


def campaign_named(ref: str, root: Path) -> CampaignDir | None:
    """The campaign folder ``ref`` names exactly (its path, or its whole id under
    ``root``), or None: a prefix is a run's (``gridbench cleanup RUN``)."""
    try:
        found = find_campaign(root, ref)
    except OSError:
        return None
    if found is None or (found.id != ref and found.path != Path(ref)):
        return None
    return found


def cleanup_campaign(folder: CampaignDir, *, dry_run: bool, force: bool) -> CleanupOutcome:
    """Stop the units' processes still alive, then each unfinished run's family cleanup."""
    state = replay(folder.events())
    lines: list[str] = [f"campaign {folder.id}: {len(state.attempts)} repetitions started"]
    errors: list[str] = []
    for a in state.attempts:
        if a.pid is not None and is_unit(a.pid, a.create_time, a.name):
            lines.append(
                f"{a.name}: its process {a.pid} still runs" + ("" if dry_run else ": stopped")
            )
            if not dry_run:
                stop_group(a.pid, a.create_time, a.name)
    seen: set[str] = set()
    for a in state.attempts:
        if not a.run or a.run in seen:
            continue
        seen.add(a.run)
        run = RunDir(folder.root / a.run)
        try:
            status = run.read_experiment().get("status")
            if status in FINISHED and a.outcome != "killed":
                continue
            fam = family_of(run)
        except GridbenchError as exc:
            errors.append(f"{a.name}: {exc.message}")
            continue
        if not isinstance(fam, Cleanable):
            lines.append(f"{a.name}: run {a.run} ({fam.name}) leaves nothing to cancel")
            continue
        try:
            out = fam.cleanup(run, dry_run=dry_run, force=force)
        except GridbenchError as exc:
            errors.append(f"{a.name}: {exc.message}")
            continue
        lines += [f"{a.name}: {line}" for line in out.lines]
        errors += [f"{a.name}: {e}" for e in out.errors]
    if len(lines) == 1:
        lines.append("nothing left behind")
    return CleanupOutcome(tuple(lines), tuple(errors))
