"""One sweep row per model and exporter, and the settings every row of a sweep shares."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from fixport.core.records.baseline import BaselineResult
from fixport.core.words.runtimes import ORT


class RowStatus(StrEnum):
    """What check (and fix --auto) found; the values are part of the JSON format."""

    CLEAN = "clean"  # no problem found
    FIXED = "fixed"  # problems found, and fix --auto fixed every one
    PROBLEMS = "problems"  # problems left (not fixed, or --fix not asked)
    ERROR = "error"  # the model could not be loaded, exported or compared


class Verdict(StrEnum):
    """What compare said; only PASS makes a row pass."""

    PASS = "pass"
    FAIL = "fail"
    NOT_COMPARED = "not compared"  # problems left that keep the export from running
    ERROR = "error"


@dataclass(frozen=True)
class SweepSettings:
    """What every model of one sweep gets; with the model's content, the key of its cached rows."""

    exporters: tuple[str, ...] = ("torchscript",)
    fix: bool = False
    opset: int | None = None
    timeout_s: float = 120.0
    baseline: bool = False  # also plain torch.onnx.export with the same options, run at the same sizes
    # "openvino": compare in OpenVINO, f32 (check still finds the export's problems in ONNX Runtime)
    runtime: str = "ort"

    def cache_fields(self, exporter: str) -> dict[str, Any]:
        """What changes a row (the timeout does not: it only stops a stalled job)."""
        return {"exporter": exporter, "fix": self.fix, "opset": self.opset, **({"baseline": True} if self.baseline
                                                                               else {}),
                **({"runtime": self.runtime} if self.runtime != ORT else {})}


@dataclass
class SweepRow:
    """check, fix --auto and compare of one model with one exporter."""

    model: str  # the model file or checkpoint folder, resolved
    exporter: str
    status: str = RowStatus.ERROR.value
    problems: list[str] = field(default_factory=list)  # "aten::threshold (symbolic_rejected)", one per problem
    fixes: list[str] = field(default_factory=list)  # "aten::threshold: template_id [family]"
    left: list[str] = field(default_factory=list)  # problems fix --auto left
    opset: int | None = None
    verdict: str = Verdict.ERROR.value
    max_abs: float | None = None  # the largest error over the outputs and input sets
    first_divergent: str = ""  # the first ONNX node beyond tolerance, when compare failed
    message: str = ""  # why it errored, or was not compared
    seconds: dict[str, float] = field(default_factory=dict)  # per step: check, fix, compare
    cached: bool = False  # read back from the cache by this run, not computed
    label: str = ""  # how reports name the model: its path inside the folder swept
    retry: bool = False  # a failure of the sweep itself (a Ray task lost, a Fixport bug), not of the model: not cached
    baseline: BaselineResult | None = None  # plain torch.onnx.export of the same call (--baseline)
    fixport_worse: str = ""  # why Fixport does worse here than the plain export ('' when it does not)

    @property
    def name(self) -> str:
        return self.label or Path(self.model).name

    @property
    def passed(self) -> bool:
        return self.verdict == Verdict.PASS.value

    @property
    def total_seconds(self) -> float:
        return sum(self.seconds.values())

    @property
    def problem_kinds(self) -> list[str]:
        """Each kind of problem once, in order found."""
        return list(dict.fromkeys(self.problems))

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed, "total_seconds": round(self.total_seconds, 3),
                "baseline": self.baseline.to_json() if self.baseline else None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SweepRow:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        if isinstance(known.get("baseline"), dict):
            known["baseline"] = BaselineResult.from_json(known["baseline"])
        return cls(**known)
