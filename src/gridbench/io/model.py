"""The ``io`` spec: pydantic models with forbid-extra, so typos are caught with a fix.

Sizes are bytes (``128k``, ``2G`` accepted); durations are seconds (``10s`` accepted).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationInfo,
    field_validator,
    model_validator,
)

from gridbench.hosts.sampling.spec import SamplingSpec
from gridbench.io.clients_model import ClientsSpec
from gridbench.io.model_posix import ConformanceSpec, IdentitySpec, ReplaySpec
from gridbench.io.resilience_model import HttpClientsSpec, ResilienceSpec
from gridbench.io.service_model import ServiceSpec
from gridbench.specload import SpecName
from gridbench.testplan import TestPlan
from gridbench.thresholds import Op, ThresholdSpec
from gridbench.units import Duration, Size, parse_size

IozoneTest = Literal[
    "write",
    "rewrite",
    "read",
    "reread",
    "random_read",
    "random_write",
    "backward_read",
    "record_rewrite",
    "stride_read",
]
#: iozone's result columns, in its order (-i0 .. -i5); the matrix reports them in this order.
IOZONE_TESTS: tuple[str, ...] = get_args(IozoneTest)
BonnieColumn = Literal[
    "output_char",
    "output_block",
    "rewrite",
    "input_char",
    "input_block",
    "seq_create",
    "seq_stat",
    "seq_delete",
    "ran_create",
    "ran_stat",
    "ran_delete",
]


ConcurrencyTest = Literal["write", "read", "random_read", "random_write"]


def _all_tests() -> list[IozoneTest]:
    return list(get_args(IozoneTest))


def _write_read() -> list[ConcurrencyTest]:
    return ["write", "read"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TargetSpec(_Strict):
    """A directory or mount point to measure. gridbench writes only inside ``path``."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,40}$")
    path: str = Field(min_length=1)
    peer: str | None = Field(
        default=None,
        description="the same storage seen through another path or client (consistency checks)",
    )
    force: bool = Field(default=False, description="allow a directory that already holds data")


class IozoneSpec(_Strict):
    """The iozone matrix on fio (iozone -s FILE_SIZE -r RECORD_SIZE [-c] [-e])."""

    enabled: bool = True
    file_size: Size = Field(default=2 * 1024**3, gt=0)
    record_size: Size = Field(default=128 * 1024, gt=0)
    tests: list[IozoneTest] = Field(default_factory=lambda: _all_tests(), min_length=1)
    include_close: bool = Field(default=True, description="iozone -c: close() in the timing")
    include_flush: bool = Field(default=False, description="iozone -e: fsync in the timing")
    stride: int = Field(default=17, ge=2, description="stride read: records per stride")
    ioengine: str = "psync"
    latency_log: bool = Field(
        default=False, description="keep fio's per-I/O latency log; adds a per-second p99 series"
    )

    @model_validator(mode="after")
    def _sizes(self) -> IozoneSpec:
        if self.record_size > self.file_size:
            raise ValueError("record_size is larger than file_size")
        if self.file_size % self.record_size:
            raise ValueError("file_size must be a whole number of records (record_size)")
        return self


class BonnieSpec(_Strict):
    """bonnie++ (Bonnie -s SIZE): per-char and block output/input, rewrite, each with CPU%."""

    enabled: bool = False
    size: Size = Field(default=2047 * 1024**2, gt=0)
    ram: Size | None = Field(
        default=None, description="bonnie++ -r; default: half the file size so small runs work"
    )
    user: str = "root"
    files: int = Field(
        default=0,
        ge=0,
        le=1024,
        description="bonnie++ -n: thousands (x1024) of small files created, stat'ed and "
        "removed, in order and at random (files/s); 0 skips the file tests",
    )
    file_size: Size = Field(
        default=0, ge=0, le=2**20, description="each small file's size (bonnie++ -n N:SIZE:SIZE)"
    )
    dirs: int = Field(
        default=1,
        ge=1,
        le=1024,
        description="directories the small files are spread over (bonnie++ 2.00a dies of "
        "SIGFPE with 0)",
    )

    @model_validator(mode="after")
    def _ram(self) -> BonnieSpec:
        # bonnie++ itself refuses a file smaller than twice its RAM figure
        if self.ram is not None and self.size < 2 * self.ram:
            raise ValueError("bonnie.size must be at least twice bonnie.ram (bonnie++ -s >= 2 -r)")
        if self.files == 0 and (self.file_size or self.dirs != 1):
            raise ValueError(
                "bonnie.file_size and bonnie.dirs shape the file tests: set bonnie.files "
                "(thousands of files, e.g. files: 16) or drop them"
            )
        return self


# One definition for the spec and the metrics schema (they disagreed once).
FileSharing = Literal["same", "separate"]


class ConcurrencySpec(_Strict):
    """N simultaneous clients on the same file or on separate files."""

    enabled: bool = False
    clients: list[Annotated[int, Field(ge=1, le=256)]] = Field(
        default_factory=lambda: [1, 2], min_length=1
    )
    files: FileSharing = "separate"
    tests: list[ConcurrencyTest] = Field(default_factory=lambda: _write_read(), min_length=1)
    servers: list[str] = Field(
        default_factory=list,
        description="fio --server addresses (host or host,port); clients are spread over them",
    )


class ConsistencySpec(_Strict):
    """Functional checks (METHODS 2.5) with pass/fail results and timings."""

    enabled: bool = False
    timeout: Duration = Field(default=10.0, gt=0)
    file_size: Size = Field(default=1024 * 1024, gt=0)
    fill: bool = Field(
        default=False,
        description="fill the target until ENOSPC (only on small file systems, see max_fill)",
    )
    max_fill: Size = Field(default=256 * 1024**2, description="refuse to fill a larger free space")


class HttpSpec(_Strict):
    """Upload and download timing against a WebDAV/HTTP endpoint (PUT then GET)."""

    url: str = Field(pattern=r"^https?://")
    sizes: list[Annotated[int, BeforeValidator(parse_size), Field(gt=0)]] = Field(
        default_factory=lambda: [128 * 1024**2, 1536 * 1024**2], min_length=1
    )
    repetitions: int = Field(default=3, ge=1, le=1000)
    compare_target: str | None = Field(
        default=None, description="a target whose file-system copy times are shown beside"
    )
    auth_env: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="name of an environment variable holding USER:PASSWORD (HTTP basic auth)",
    )

    @model_validator(mode="after")
    def _no_credentials(self) -> HttpSpec:
        # a password in the URL would end up in messages, spec.yaml and experiment.json
        if "@" in urlsplit(self.url).netloc:
            raise ValueError(
                "http.url must not contain credentials (user:password@); put USER:PASSWORD "
                "in an environment variable and name it in http.auth_env"
            )
        return self


#: Paths of the old io threshold limits, below ``matrix.<target>.<test>.``; the operator.
LEGACY_LIMITS: dict[str, tuple[str, Op]] = {
    "min_kbps": ("kbps.mean", ">="),
    "min_speedup": ("speedup", ">="),
    "max_p99_ms": ("lat_ms.p99", "<="),
}


class LegacyThreshold(_Strict):
    """The first io threshold form, still accepted: limits on one iozone test's figures.
    Loading turns it into one :class:`ThresholdSpec` per limit and target."""

    test: IozoneTest = Field(description="an iozone matrix test; thresholds apply to the matrix")
    target: str | None = Field(default=None, description="default: every non-baseline target")
    min_kbps: float | None = None
    min_speedup: float | None = Field(
        default=None, description="signed fraction, e.g. -0.5 allows half the baseline"
    )
    max_p99_ms: float | None = None

    @model_validator(mode="after")
    def _some_limit(self) -> LegacyThreshold:
        if self.min_kbps is None and self.min_speedup is None and self.max_p99_ms is None:
            raise ValueError("a threshold needs at least one of min_kbps, min_speedup, max_p99_ms")
        return self

    def translate(self, targets: Sequence[str], baseline: str | None) -> list[ThresholdSpec]:
        """The same limits in the shared form (paths into the io metrics' matrix)."""
        names = [self.target] if self.target else [t for t in targets if t != baseline]
        return [
            ThresholdSpec(metric=f"matrix.{name}.{self.test}.{path}", op=op, value=limit)
            for name in names
            for key, (path, op) in LEGACY_LIMITS.items()
            if (limit := getattr(self, key)) is not None
        ]


_LEGACY = TypeAdapter(dict[int, LegacyThreshold])


def _translate_legacy(items: Any, data: Mapping[str, Any]) -> Any:
    """``thresholds`` with every old-form item replaced by its shared-form thresholds."""
    if not isinstance(items, list):
        return items
    legacy = {i: t for i, t in enumerate(items) if isinstance(t, Mapping) and "test" in t}
    if not legacy:
        return items
    # errors come back with the item's index, so they name thresholds.<i>.<field> and its line
    checked = _LEGACY.validate_python(legacy)
    targets = [t.name for t in data.get("targets") or []]
    baseline = data.get("baseline")
    out: list[Any] = []
    for i, item in enumerate(items):
        if i not in checked:
            out.append(item)
            continue
        old = checked[i]
        if targets and old.target is not None and old.target not in targets:
            raise ValueError(f"threshold target {old.target!r} is not a target")
        new = old.translate(targets, baseline)
        if targets and not new:
            # an old threshold without a target applies to every non-baseline target
            raise ValueError(
                f"threshold {i} has no target to apply to: the only target is the baseline "
                "(name a target, or write the threshold as {metric: matrix.<target>...})"
            )
        out.extend(t.model_dump() for t in new)
    return out


class IoSpec(_Strict):
    """A storage evaluation: targets, one baseline, and what to run against each."""

    name: SpecName
    description: str = ""
    targets: list[TargetSpec] = Field(min_length=1)
    baseline: str | None = Field(default=None, description="name of one target")
    repetitions: int = Field(default=3, ge=1, le=1000)
    cache: Literal["direct", "drop_caches", "none"] = Field(
        default="direct",
        description="direct: O_DIRECT; drop_caches: sync + drop page cache before reads; none",
    )
    iozone: IozoneSpec = Field(default_factory=IozoneSpec)
    bonnie: BonnieSpec = Field(default_factory=BonnieSpec)
    concurrency: ConcurrencySpec = Field(default_factory=ConcurrencySpec)
    consistency: ConsistencySpec = Field(default_factory=ConsistencySpec)
    http: HttpSpec | None = None
    resilience: ResilienceSpec | None = Field(
        default=None, description="faults on a replicated file system, recovery, integrity"
    )
    http_clients: HttpClientsSpec | None = Field(
        default=None, description="N concurrent HTTP/WebDAV clients, upload and download"
    )
    clients: ClientsSpec | None = Field(
        default=None,
        description="fio on several inventory hosts at once (fio --server/--client, docs/io.md)",
    )
    service: ServiceSpec | None = Field(
        default=None,
        description="an HTTP/REST service's operations against payload size, clients and "
        "connection reuse",
    )
    conformance: ConformanceSpec = Field(default_factory=ConformanceSpec)
    replay: ReplaySpec = Field(default_factory=ReplaySpec)
    identities: IdentitySpec | None = None
    thresholds: list[ThresholdSpec] = Field(
        default_factory=list,
        description="limits on paths of the io metrics (docs/io.md); the old "
        "{test, target, min_kbps, min_speedup, max_p99_ms} form is translated",
    )
    plan: TestPlan | None = Field(
        default=None, description="the IEEE 829 test plan: items, features, approach, criteria"
    )
    sampling: SamplingSpec | None = Field(
        default=None,
        description="hosts sampled during the run, each step a phase (docs/hosts.md)",
    )
    fio: str = Field(default="fio", min_length=1, description="the fio binary")
    fio_timeout: Duration | None = Field(
        default=None,
        gt=0,
        description="seconds one fio run may take; default: 120 s plus 1 s per MiB it moves",
    )
    keep_files: bool = False

    @field_validator("thresholds", mode="before")
    @classmethod
    def _old_thresholds(cls, v: Any, info: ValidationInfo) -> Any:
        # targets and baseline come first in the model, so they are validated by now
        return _translate_legacy(v, info.data)

    @model_validator(mode="after")
    def _names(self) -> IoSpec:
        names = [t.name for t in self.targets]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"target names must be unique: {', '.join(sorted(dup))}")
        paths = [t.path.rstrip("/") or "/" for t in self.targets]
        same = sorted({p for p in paths if paths.count(p) > 1})
        if same:  # their work directories would collide: one run refuses the other's
            raise ValueError(f"two targets measure the same path: {', '.join(same)}")
        if self.baseline is not None and self.baseline not in names:
            raise ValueError(f"baseline {self.baseline!r} is not a target ({', '.join(names)})")
        if self.http and self.http.compare_target and self.http.compare_target not in names:
            raise ValueError(f"http.compare_target {self.http.compare_target!r} is not a target")
        if self.resilience and self.resilience.target not in names:
            raise ValueError(f"resilience.target {self.resilience.target!r} is not a target")
        return self
