"""The io spec's storage-in-depth sections: POSIX conformance (pjdfstest), trace replay
(fio's I/O logs) and identities (access as named local users). One section each, all
off by default; :class:`gridbench.io.model.IoSpec` holds them."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gridbench.units import Duration, Size

#: The syscall categories of pjdfstest 0.2.2 (its test modules); the seed's Table 4.7 rows.
Syscall = Literal[
    "chflags",
    "chmod",
    "chown",
    "ftruncate",
    "link",
    "mkdir",
    "mkfifo",
    "mknod",
    "open",
    "posix_fallocate",
    "rename",
    "rmdir",
    "symlink",
    "truncate",
    "unlink",
    "utimensat",
]
SYSCALLS: tuple[str, ...] = get_args(Syscall)
#: pjdfstest's opt-in features (``pjdfstest -l``); Linux has these two.
Feature = Literal[
    "chflags",
    "nfsv4acls",
    "posix_fallocate",
    "rename_ctime",
    "stat_st_birthtime",
    "chflags_sf_snapshot",
    "utime_now",
    "utimensat",
]


def _all_syscalls() -> list[Syscall]:
    return list(get_args(Syscall))


def _linux_features() -> list[Feature]:
    return ["posix_fallocate", "utimensat"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Exclusion(_Strict):
    """Tests left out of the pass rate, with the reason (the seed left out mkfifo: its
    file system had no FIFOs)."""

    match: str = Field(min_length=1, description="a syscall, or the start of a test name")
    reason: str = Field(min_length=1)


class ConformanceSpec(_Strict):
    """POSIX conformance per target: pjdfstest (the Rust rewrite) run inside each target,
    reported per syscall as passed, failed and skipped, with the difference to the
    baseline."""

    enabled: bool = False
    syscalls: list[Syscall] = Field(default_factory=lambda: _all_syscalls(), min_length=1)
    exclude: list[Exclusion] = Field(default_factory=list)
    features: list[Feature] = Field(
        default_factory=lambda: _linux_features(),
        description="pjdfstest features the targets support (tests needing others are skipped)",
    )
    users: list[Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_.-]{0,31}$")]] = Field(
        default_factory=lambda: ["nobody", "daemon"],
        min_length=2,
        max_length=2,
        description="two local users pjdfstest switches to (its dummy_auth entries)",
    )
    naptime: float = Field(default=0.01, gt=0, le=2, description="above the mtime granularity")
    pjdfstest: str = Field(default="pjdfstest", min_length=1, description="the binary")
    timeout: Duration = Field(default=900.0, gt=0, description="one target's whole run")


class ReplaySpec(_Strict):
    """Trace replay (the XtreemFS MaxDB trace test): a trace recorded once from a fio
    workload (or given), replayed on every target with 1..N parallel streams, with and
    without O_SYNC, against the baseline."""

    enabled: bool = False
    trace: str | None = Field(
        default=None,
        description="a fio I/O log (version 2 or 3) or a blktrace file; default: record one",
    )
    workload: Literal["randrw", "randwrite", "randread", "readwrite"] = "randrw"
    size: Size = Field(default=16 * 1024**2, gt=0, description="the recorded workload's file")
    block_size: Size = Field(default=4096, gt=0)
    read_pct: int = Field(default=70, ge=0, le=100, description="rwmixread of the workload")
    streams: list[Annotated[int, Field(ge=1, le=64)]] = Field(
        default_factory=lambda: [1, 2], min_length=1
    )
    sync: list[bool] = Field(
        default_factory=lambda: [False, True],
        min_length=1,
        description="replay without (false) and with (true) O_SYNC",
    )
    stripe_widths: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=list,
        description="labels only: stripe widths set on the targets by the operator",
    )
    start_spread: Duration = Field(
        default=0.0,
        ge=0,
        le=3600,
        description="each stream starts at a random time within this many seconds, as the "
        "seed's concurrent IO streams did (000 §4.9.6); 0: all streams start at once",
    )
    seed: int = Field(default=0, ge=0, description="the random start times' seed")

    @model_validator(mode="after")
    def _sizes(self) -> ReplaySpec:
        if self.block_size > self.size:
            raise ValueError("replay.block_size is larger than replay.size")
        return self


IdentityOp = Literal["read", "write", "list", "traverse"]


class IdentitySpec(_Strict):
    """Access as named local users: who can read, write, list and traverse what, whether
    ownership survives copy and backup/restore, and the seed's "invisible until root
    visits" case. Needs root (the checks switch users)."""

    enabled: bool = False
    users: list[Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_.-]{0,31}$")]] = Field(
        min_length=2, max_length=8, description="existing local users, not root"
    )
