"""Records of the optimizer guard: each deployed variant of an export (an ONNX Runtime optimization
level, or a post-export optimizer) held to torch, and the passes to turn off where one fails (no torch)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

ORT_LEVELS = ("disabled", "basic", "extended", "all")
ORT_TOOL = "ort"
TOOLS = ("onnxscript", "onnxslim", "onnxsim")  # post-export optimizers, each an optional install
OPTIMIZE_ALL = "all"
INSTALL_HINT = {
    "onnxscript": "pip install onnxscript",
    "onnxslim": 'pip install onnxslim (or pip install -e ".[optimizers]")',
    "onnxsim": 'pip install onnxsim (or pip install -e ".[optimizers]")',
}
OPTIMIZE_HELP = (f"check the export as it will be deployed: 'ort' (ONNX Runtime at each graph optimization "
                 f"level: {', '.join(ORT_LEVELS)}), 'ort:LEVEL', {', '.join(TOOLS)} (each when installed), or "
                 f"'{OPTIMIZE_ALL}'; a variant that fails is bisected to the passes to turn off")

PASSED, CHANGED, REFUSED, UNAVAILABLE = "pass", "changes outputs", "fails to load", "not installed"


@dataclass(frozen=True)
class Variant:
    """One way the export is deployed: ``tool`` "ort" at ``level``, or an optimizer (then ONNX
    Runtime runs its result with graph optimizations disabled, so only the optimizer is judged)."""

    tool: str
    level: str = ""

    @property
    def name(self) -> str:
        return f"{self.tool}:{self.level}" if self.level else self.tool


@dataclass
class OptimizerFix:
    """The settings that avoid a failing pass: a fix saved in the project and written into the fix script.

    For ONNX Runtime, ``disabled`` are names for ``InferenceSession(..., disabled_optimizers=...)``
    at ``level``; for onnxscript, rewrite rules (or ``FoldConstants``) left out of its optimizer; for
    onnxslim, fusion patterns to skip; for onnxsim, switches to turn off.
    """

    tool: str
    level: str = ""
    disabled: list[str] = field(default_factory=list)

    @property
    def variant(self) -> str:
        return Variant(self.tool, self.level).name

    def summary(self) -> str:
        switch = {ORT_TOOL: "disabled_optimizers", "onnxscript": "rules off", "onnxslim": "skip_fusion_patterns",
                  "onnxsim": "switches off"}.get(self.tool, "off")
        return f"{self.variant} with {switch}={self.disabled}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OptimizerFix:
        """Read tolerantly: unknown keys are dropped (a newer file)."""
        return cls(tool=str(data["tool"]), level=str(data.get("level", "")),
                   disabled=[str(name) for name in data.get("disabled", [])])


@dataclass
class VariantOutcome:
    """One variant held to torch on the compare's input sets, its cost, and what to turn off where it fails."""

    variant: str
    status: str  # PASSED, CHANGED, REFUSED or UNAVAILABLE
    message: str = ""
    max_abs: float | None = None  # the largest difference from torch over every output and input set
    worst_output: str = ""
    file_bytes: int | None = None
    node_count: int | None = None
    latency_ms: float | None = None
    culprits: list[str] = field(default_factory=list)  # the smallest set of passes to turn off
    fix: OptimizerFix | None = None  # the settings that pass (verified), where the bisection found them
    first_divergent_node: str = ""  # in the optimized graph, where its values first leave the plain export's
    first_divergent_kind: str = ""
    bisect_tries: int = 0

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["fix"] = None if self.fix is None else self.fix.to_json()
        return data


@dataclass
class OptimizerReport:
    """Every variant the user asked for, in order; the table that answers "which one should I ship"."""

    outcomes: list[VariantOutcome] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(o.passed or o.status == UNAVAILABLE for o in self.outcomes)

    @property
    def fixes(self) -> list[OptimizerFix]:
        return [o.fix for o in self.outcomes if o.fix is not None]

    def to_json(self) -> dict[str, Any]:
        return {"passed": self.passed, "variants": [o.to_json() for o in self.outcomes], "notes": list(self.notes),
                "fixes": [fix.to_json() for fix in self.fixes]}


def parse_optimize(text: str) -> list[Variant]:
    """``--optimize`` as variants in order; a ValueError naming the unknown word and the choices."""
    variants: list[Variant] = []
    for word in (w.strip().lower() for w in text.split(",")):
        if not word:
            continue
        if word == OPTIMIZE_ALL:
            found = [Variant(ORT_TOOL, level) for level in ORT_LEVELS] + [Variant(tool) for tool in TOOLS]
        elif word == ORT_TOOL:
            found = [Variant(ORT_TOOL, level) for level in ORT_LEVELS]
        elif word.startswith(f"{ORT_TOOL}:") and word.split(":", 1)[1] in ORT_LEVELS:
            found = [Variant(ORT_TOOL, word.split(":", 1)[1])]
        elif word in TOOLS:
            found = [Variant(word)]
        else:
            raise ValueError(f"--optimize: unknown optimizer {word!r}; use ort, ort:LEVEL (LEVEL one of "
                             f"{', '.join(ORT_LEVELS)}), {', '.join(TOOLS)} or {OPTIMIZE_ALL}, separated by commas.")
        variants += [v for v in found if v not in variants]
    if not variants:
        raise ValueError("--optimize names no optimizer; use for example --optimize ort,onnxscript.")
    return variants
