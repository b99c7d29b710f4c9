"""The ``service:`` spec block: an HTTP/REST service's operations timed against payload
size, concurrent clients and connection reuse (the seeds' service-operation tables)."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gridbench.units import Duration, Size

ServiceOp = Literal["put", "get", "delete"]


def _every_op() -> list[ServiceOp]:
    return ["put", "get", "delete"]


class ServiceSpec(BaseModel):
    """Each of ``clients`` clients at once, for each payload size and each reuse mode,
    runs ``requests`` rounds of its operations (PUT an object, GET it back checked by
    sha256, DELETE it), each timed; with ``reuse`` false every request opens a new
    connection (no keep-alive)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(pattern=r"^https?://", description="a collection the service stores into")
    sizes: list[Annotated[Size, Field(ge=0, le=1024**3)]] = Field(
        default_factory=lambda: [1024, 65536, 1024**2], min_length=1, max_length=16
    )
    clients: list[Annotated[int, Field(ge=1, le=256)]] = Field(
        default_factory=lambda: [1, 4], min_length=1, max_length=16
    )
    requests: int = Field(default=20, ge=1, le=100_000, description="rounds per client")
    reuse: list[bool] = Field(
        default_factory=lambda: [True, False],
        min_length=1,
        max_length=2,
        description="true: one connection per client (keep-alive); false: one per request",
    )
    ops: list[ServiceOp] = Field(default_factory=_every_op, min_length=1, max_length=3)
    timeout: Duration = Field(default=30.0, gt=0, description="per request")
    auth_env: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="name of an environment variable holding USER:PASSWORD (HTTP basic auth)",
    )

    @model_validator(mode="after")
    def _checks(self) -> ServiceSpec:
        if "@" in urlsplit(self.url).netloc:
            raise ValueError(
                "service.url must not contain credentials (user:password@); put "
                "USER:PASSWORD in an environment variable and name it in auth_env"
            )
        if "get" in self.ops and "put" not in self.ops:
            raise ValueError("service.ops: get reads back what put stored; add put")
        for name, values in (("sizes", self.sizes), ("clients", self.clients)):
            if len(set(values)) != len(values):
                raise ValueError(f"service.{name} lists a value twice")
        if len(set(self.reuse)) != len(self.reuse):
            raise ValueError("service.reuse lists a value twice: give [true], [false] or both")
        return self
