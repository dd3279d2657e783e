"""Compare for the dynamo exporter: the export to compare, and per-node values on both sides.

Torch side: the ExportedProgram the exporter translated (after its decompositions) runs in an
FX interpreter that keeps every node's tensor outputs, keyed by FX node name, the name the
exporter writes into each ONNX node's metadata (its ``origin``). ONNX side and matching are the
TorchScript compare's own (:func:`fixport.core.comparison.intermediates.analyze_nodes`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import onnx
import torch

from fixport.core.comparison.custom_op_reference import plan_references
from fixport.core.comparison.intermediates import ValueKey, analyze_nodes
from fixport.core.exporters.dynamo import DynamoExporter
from fixport.core.loaders.loading import LoadedModel
from fixport.core.model.cancel import CancelCallback, Cancelled, check_cancelled
from fixport.core.model.compare_result import NodeAnalysis
from fixport.core.model.errors import ExportError
from fixport.core.model.graph import Graph
from fixport.core.model.output_stats import to_numpy
from fixport.core.model.tolerances import ToleranceTable

DYNAMO_DIAGNOSING_NOTE = ("Per-node analysis re-exported the model without ONNX optimization, and compared each "
                          "ONNX node group with the FX node it came from (the exporter's node metadata).")


@dataclass
class FxCapture:
    """The translated ExportedProgram as a function returning every FX node's tensor outputs."""

    program: torch.export.ExportedProgram

    def run(self, inputs: Sequence[torch.Tensor], device: str = "cpu") -> dict[ValueKey, np.ndarray]:
        values: dict[ValueKey, np.ndarray] = {}

        class Recorder(torch.fx.Interpreter):
            def run_node(self, node: torch.fx.Node) -> Any:
                result = super().run_node(node)
                if node.op == "call_function":
                    outputs = result if isinstance(result, (tuple, list)) else (result,)
                    for index, value in enumerate(outputs):
                        if isinstance(value, torch.Tensor):
                            values[(node.name, index)] = to_numpy(value)
                return result

        module = self.program.module()
        with torch.no_grad():
            Recorder(module).run(*[t.to(device) for t in inputs])
        return values


def dynamo_export_to_compare(loaded: LoadedModel, options: Any, cancelled: CancelCallback | None
                             ) -> tuple[onnx.ModelProto, Graph, Graph, torch.export.ExportedProgram]:
    """A complete dynamo export (with the fixes in effect), or an ExportError saying what to fix."""
    exporter = DynamoExporter()
    result = exporter.export(loaded, options, run_check=False, cancelled=cancelled)
    blocking = [p for p in result.unsupported if p.reason != "runtime_error"]
    if blocking or not result.model.graph.node:
        kinds = ", ".join(sorted({p.display_kind for p in blocking}))
        raise ExportError(f"{loaded.path.name} does not export with the dynamo exporter yet ({kinds}), so there is "
                          "no ONNX model to compare.",
                          f"Run `python main.py fix {loaded.path.name} --exporter dynamo --auto -o fixes.fixport.json`"
                          " (or `check --exporter dynamo` to list the problems), then compare with --project.")
    return result.model, result.onnx_graph, result.source_graph, exporter.last_program


def dynamo_analyze_nodes(loaded: LoadedModel, export_options: Any, inputs: tuple[torch.Tensor, ...], run: int,
                         provider: str, precision: str, tolerances: ToleranceTable, templates: dict[str, str],
                         messages: list[str], cancelled: CancelCallback | None) -> NodeAnalysis | None:
    """Export again without optimization (every FX node keeps its ONNX nodes), capture both sides,
    compare node by node."""
    check_cancelled(cancelled)
    try:
        model, onnx_graph, fx_graph, program = dynamo_export_to_compare(
            loaded, replace(export_options, do_constant_folding=False), cancelled)
    except ExportError as exc:
        messages.append(f"Per-node analysis skipped: the diagnosing export failed: {exc}")
        return None
    plan = plan_references(model, onnx_graph, None)
    if plan.missing:
        messages.append("Per-node analysis skipped: " + "; ".join(plan.missing))
        return None
    messages.append(DYNAMO_DIAGNOSING_NOTE)

    def session_factory(candidate: onnx.ModelProto) -> Any:
        check_cancelled(cancelled)
        return plan.create_session(candidate, provider, precision=precision).session

    try:
        analysis = analyze_nodes(plan.model, onnx_graph, fx_graph, FxCapture(program), inputs,
                                 [i.name for i in model.graph.input], session_factory, tolerances, templates, run,
                                 "cpu")
    except Cancelled:
        raise
    except Exception as exc:  # ORT or the FX interpreter on an unusual graph: report, keep the outputs
        messages.append(f"Per-node analysis failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
        return None
    messages += analysis.messages
    return analysis
