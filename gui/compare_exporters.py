"""Run ▸ Compare exporters: the request from the window's project, and its report shown in the window."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fixport.core.foundation.errors import FixportError
from fixport.core.records.exporter_comparison import AlignedNode, ExporterComparison
from fixport.core.records.requests import CompareExportersRequest
from fixport.core.words.vocabulary import DEFAULT_EXPORTER, EXPORTERS

if TYPE_CHECKING:
    from fixport.core.session.workbench import Workbench
    from fixport.gui.job_runner import SubmittedJob

COMPARE_EXPORTERS_RUNS = 2  # as Compare: the example inputs and one random set
STATUS_TIMEOUT_MS = 8000
EXPORTER_REPORT_SHARE = 0.45  # of the window's height: the report's three tables under the graphs


def shown_exporter(workbench: Workbench) -> str:
    """The exporter whose export the graph panes show: the project's, else the one the model file
    chooses for itself (the workbench's one answer), else the default."""
    return workbench.exporter_name or DEFAULT_EXPORTER


def exporters_request(workbench: Workbench, provider: str, tolerances: dict[str, float | None]
                      ) -> CompareExportersRequest | None:
    """Both exporters, the shown one first, its fixes the project's; None without a model."""
    project = workbench.project
    if project is None:
        return None
    shown = shown_exporter(workbench)
    options = {name: value for name, value in project.export_options.items() if name != "exporter"}
    mappings = {shown: list(project.mappings)} if project.mappings else {}
    return CompareExportersRequest(
        workbench.model_request(), [shown, *(name for name in EXPORTERS if name != shown)], options, mappings,
        provider=provider, runs=COMPARE_EXPORTERS_RUNS, rtol=tolerances.get("rtol"), atol=tolerances.get("atol"),
        other_shapes=project.other_shapes())


def start_compare_exporters(window: Any, provider: str = "cpu") -> SubmittedJob | None:
    """Submit the comparison off the UI thread; a project whose shapes do not parse says so."""
    try:
        request = exporters_request(window.workbench, provider, window.compare_tolerances)
    except FixportError as error:
        window.show_error(error)
        return None
    return None if request is None else window.runner.submit(request)


def show_exporter_comparison(window: Any, result: ExporterComparison) -> None:
    """The report in its dock, the shown export's first difference marked in the ONNX pane, a line in the Log."""
    dock = window.exporter_comparison
    dock.show_result(result)
    dock.show()
    dock.raise_()
    window.make_room_for(dock, EXPORTER_REPORT_SHARE)
    first = result.first_difference
    if first is not None:
        select_aligned_node(window, first, quiet=True)
    window.log.log(f"Compare exporters: {result.verdict()}", "\n".join(result.messages))
    window.statusBar().showMessage("Compare exporters: " + ("they agree" if result.agree else "they disagree"),
                                   STATUS_TIMEOUT_MS)


def select_aligned_node(window: Any, node: AlignedNode, quiet: bool = False) -> bool:
    """Select the value's ONNX node in the ONNX pane, when the pane shows that export and has it."""
    exporter = shown_exporter(window.workbench)
    node_id = node.onnx_nodes.get(exporter)
    graph = window.graphs.graphs.get("onnx")
    if node_id is None or graph is None or node_id not in graph.node_by_id:
        if not quiet:
            window.statusBar().showMessage(f"{node.place}: not in the {exporter} export the graphs show "
                                           "(its node comes from the diagnosing export, without constant folding).",
                                           STATUS_TIMEOUT_MS)
        return False
    window.select_node("onnx", node_id)
    return True
