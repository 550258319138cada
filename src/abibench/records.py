"""The typed records that flow between stages: targets and samples."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .abi import Abi


@dataclass(frozen=True)
class Target:
    """The unit that is compared: one ABI from one provenance."""

    abi: Abi
    provenance: str = "source"

    @property
    def label(self) -> str:
        return self.abi.name if self.provenance == "source" else f"{self.abi.name}/{self.provenance}"


@dataclass(frozen=True)
class Sample:
    run_id: str
    workload: str
    target: str
    round: int  # 0 is the warm-up round
    position: int  # order within the round (interleaving is visible in the data)
    warmup: bool
    status: str  # ok | failed | timeout | interrupted
    exit_code: int
    wall_s: float
    user_s: float
    sys_s: float
    max_rss_kb: int
    stdout_digest: str
    check: str | None  # the validation value compared across targets
    metrics: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    started_at: str = ""
    env_pad: int = 0  # bytes of environment padding (stack alignment is randomised per sample)
    instructions: int | None = None
    kind: str = "timed"  # timed | counters (one run under valgrind: its times mean nothing)

    def value(self, metric: str) -> float | None:
        if metric == "wall":
            return self.wall_s
        if metric == "user":
            return self.user_s
        if metric == "sys":
            return self.sys_s
        if metric == "max_rss":
            return float(self.max_rss_kb)
        return self.metrics.get(metric)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
