"""Two jobs' results shown in the window: Compare's (its dock, the ONNX pane's marks, the Log) and
Suggest dynamic dims' (the Log and the status bar)."""
from __future__ import annotations

from typing import Any

from fixport.core.records.compare_result import CompareResult
from fixport.core.records.results import DimVerdict

STATUS_TIMEOUT_MS = 8000
_DIM_WORDS = {True: "can be dynamic", False: "blocked", None: "cannot tell"}


def show_compare(window: Any, result: CompareResult) -> None:
    """The result in the Compare dock, its errors and first divergent node marked in the ONNX pane."""
    window.compare.show_result(result)
    window.compare.raise_()
    window.make_room_for(window.compare)
    analysis = result.node_analysis
    first = analysis.first_divergent.onnx_node if analysis and analysis.first_divergent else None
    onnx_graph = window.workbench.analysis.onnx_graph if window.workbench.analysis else None
    unsupported = {n.id for n in onnx_graph.nodes if n.unsupported} if onnx_graph else set()
    window.graphs.pane("onnx").set_marks(unsupported=unsupported, errors=window.compare.node_errors_for_marks(),
                                         first_divergent=first)
    verdict = "pass" if result.passed else "FAIL"
    worst = max((o.max_abs for o in result.outputs), default=float("nan"))
    window.log.log(f"Compare ({', '.join(result.providers_used)}): {verdict}, max abs {worst:.3g}"
                   + (f", first divergent node {first}" if first else ""),
                   "\n".join([*result.baked_inputs, *result.messages]))
    for error in result.internal_errors:  # a bug of ours: said as one, its traceback in the Log
        window.log.log(error.sentence(), error.details)
    window.statusBar().showMessage(f"Compare: {verdict}", STATUS_TIMEOUT_MS)


def report_dims_suggested(window: Any, verdicts: list[DimVerdict]) -> None:
    """One Log line per dim; the status bar names the ones that can be dynamic."""
    details = "\n".join(f"{v.label}: {_DIM_WORDS[v.generalises]}" + (f" at {v.source}" if v.source else "")
                        + (f" — {v.why}" if v.why else "") for v in verdicts)
    dynamic = [v.label for v in verdicts if v.generalises]
    summary = (f"Can be declared dynamic: {', '.join(dynamic)}." if dynamic
               else "No input dim can be declared dynamic as the model stands.")
    window.log.log(f"Suggest dynamic dims: {summary}", details)
    window.log.show()
    window.log.raise_()  # the Log shares its place with the Compare dock
    window.statusBar().showMessage(f"{summary} Details in the Log.", STATUS_TIMEOUT_MS)
