"""`compare --runtimes ort,openvino`: the request, and each runtime against torch plus where the two
runtimes first differ from each other, node by node (no torch; the job is core/comparison/runtime_pair.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fixport.core.project.project import FixMapping
from fixport.core.records.compare_result import DEFAULT_RUNS, CompareResult
from fixport.core.records.results import ModelRequest
from fixport.core.statistics.output_stats import json_number
from fixport.core.words.runtimes import RUNTIME_TITLES


@dataclass
class RuntimesCompareRequest:
    """Compare the export with torch in each of ``runtimes`` (a compare each), then the runtimes'
    values with each other, node by node, on the example inputs."""

    model: ModelRequest
    runtimes: list[str]
    options: dict[str, Any] = field(default_factory=dict)
    mappings: list[FixMapping] = field(default_factory=list)
    provider: str = "cpu"  # ONNX Runtime's provider
    runs: int = DEFAULT_RUNS
    rtol: float | None = None
    atol: float | None = None
    precision: str = "strict"
    analyze_nodes: bool = True  # each runtime against torch node by node (the two runtimes always are)
    from_project: bool = False


@dataclass
class RuntimeDifference:
    """The first ONNX node (in graph order) whose output differs between the two runtimes beyond
    tolerance while every input it reads still agrees, with the torch node it came from."""

    onnx_node: str
    onnx_kind: str
    output: str
    torch_kind: str
    scope: str
    source: str
    max_abs: float
    rtol: float
    atol: float

    def line(self, runtimes: list[str]) -> str:
        first, second = (RUNTIME_TITLES.get(name, name) for name in runtimes)
        origin = f" from {self.torch_kind}" + (f" in {self.scope}" if self.scope else "") + \
            (f" at {self.source}" if self.source else "") if self.torch_kind else ""
        return (f"{first} and {second} first differ at {self.onnx_node} ({self.onnx_kind}){origin}: "
                f"max abs {self.max_abs:.3g} (rtol {self.rtol:g}, atol {self.atol:g})")

    def to_json(self) -> dict[str, Any]:
        return {"onnx_node": self.onnx_node, "onnx_kind": self.onnx_kind, "output": self.output,
                "torch_kind": self.torch_kind, "scope": self.scope, "source": self.source,
                "max_abs": json_number(self.max_abs), "rtol": self.rtol, "atol": self.atol}


@dataclass
class RuntimesComparison:
    """Each runtime against torch (None with its error where it could not run the export), and the
    runtimes against each other."""

    runtimes: list[str]
    results: list[CompareResult | None]
    errors: list[str]  # per runtime: "" or why it could not compare (an op it refuses, on its node)
    first_difference: RuntimeDifference | None = None
    nodes_compared: int = 0  # node outputs compared between the runtimes
    messages: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(result is not None and result.passed for result in self.results)

    def between_line(self) -> str:
        """One sentence: where the runtimes first differ from each other, or that they agree."""
        if self.first_difference is not None:
            return self.first_difference.line(self.runtimes)
        if not self.nodes_compared:
            return "The runtimes were not compared with each other node by node."
        names = " and ".join(RUNTIME_TITLES.get(name, name) for name in self.runtimes)
        return f"{names} agree at every one of {self.nodes_compared} node outputs compared."

    def to_json(self) -> dict[str, Any]:
        return {"runtimes": list(self.runtimes), "pass": self.passed,
                "results": {name: result.to_json() if result is not None else {"error": error}
                            for name, result, error in zip(self.runtimes, self.results, self.errors)},
                "first_difference": None if self.first_difference is None else self.first_difference.to_json(),
                "nodes_compared": self.nodes_compared, "between": self.between_line(), "messages": self.messages}

