"""The workbench window: graphs side by side, docks around them, every action off the UI thread."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QMainWindow, QVBoxLayout, QWidget

from fixport.core.model.errors import (
    FixportError,
    InputSpecError,
    ModelLoadError,
    TemplateValidationError,
)
from fixport.core.model.graph import Graph, Node
from fixport.core.model.model_files import MODEL_FILE_SUFFIXES
from fixport.core.model.problems import UnsupportedNode
from fixport.core.model.project import PROJECT_SUFFIX, FixMapping
from fixport.core.model.results import AnalysisResult
from fixport.core.model.workbench import Workbench
from fixport.gui.compare_dock import CompareDock
from fixport.gui.graph_panes import SideBySideGraphs
from fixport.gui.inspector_dock import InspectorDock
from fixport.gui.job_runner import JobRequest, JobRunner
from fixport.gui.log_dock import LogDock
from fixport.gui.model_questions import ask_input_specs, ask_trust
from fixport.gui.problems_dock import ProblemsDock
from fixport.gui.restore_bar import RestoreBar
from fixport.gui.template_dock import TemplateDock, TemplateTarget
from fixport.gui.window_actions import WindowActions
from fixport.symbolics.library import TemplateLibrary

WINDOW_TITLE = "Fixport"
DEFAULT_SIZE = (1500, 920)
STATUS_TIMEOUT_MS = 8000
PROBLEMS_WIDTH, TEMPLATE_WIDTH, COMPARE_HEIGHT = 260, 520, 230
TEMPLATE_HEIGHT, INSPECTOR_HEIGHT = 560, 260
PROBLEMS_MIN_WIDTH = 220
COMPARE_RESULT_HEIGHT = 420
COMPARE_RUNS = 2  # the example inputs plus one random set: input-dependent bugs show up


class MainWindow(QMainWindow):
    """One open model or project at a time; all long work goes through ``self.runner``."""

    def __init__(self, settings: QSettings | None = None, runner: JobRunner | None = None,
                 library: TemplateLibrary | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(WINDOW_TITLE)
        self.resize(*DEFAULT_SIZE)
        self.setAcceptDrops(True)
        self.settings = settings or QSettings("Fixport", "Fixport")
        self.workbench = Workbench()
        self.library = library or TemplateLibrary()
        self.runner = runner or JobRunner(parent=self)
        self.selected: tuple[str, str] | None = None  # (graph kind, node id)
        self.compare_tolerances: dict[str, float | None] = {"rtol": None, "atol": None}
        self.highlight_after_export: set[str] = set()

        self.graphs = SideBySideGraphs()
        self.restore_bar = RestoreBar()
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.restore_bar)
        layout.addWidget(self.graphs, 1)
        self.setCentralWidget(central)

        self.problems = ProblemsDock(self)
        self.problems.setMinimumWidth(PROBLEMS_MIN_WIDTH)
        self.inspector = InspectorDock(self)
        self.template = TemplateDock(self.library, self)
        self.compare = CompareDock(self)
        self.log = LogDock(self)
        # Side docks run the full height; Compare and Log sit under the graphs only.
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.problems)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.template)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.compare)
        # Only one tabified group: Qt 6.11 leaves a stale tab bar on screen with two.
        self.splitDockWidget(self.template, self.inspector, Qt.Orientation.Vertical)
        self.tabifyDockWidget(self.compare, self.log)
        self.compare.raise_()
        self.resizeDocks([self.problems, self.template], [PROBLEMS_WIDTH, TEMPLATE_WIDTH], Qt.Orientation.Horizontal)
        self.resizeDocks([self.template, self.inspector], [TEMPLATE_HEIGHT, INSPECTOR_HEIGHT], Qt.Orientation.Vertical)
        self.resizeDocks([self.compare], [COMPARE_HEIGHT], Qt.Orientation.Vertical)
        self.actions = WindowActions(self)

        self._connect()
        self._restore_window_state()
        self.runner.warm_up()

    # ---- wiring ----
    def _connect(self) -> None:
        self.runner.started.connect(self._on_job_started)
        self.runner.progress.connect(self._on_job_progress)
        self.runner.finished.connect(self._on_job_finished)
        self.runner.failed.connect(self._on_job_failed)
        self.runner.cancelled.connect(self._on_job_cancelled)
        self.runner.busy_changed.connect(self.actions.set_busy)
        self.graphs.node_selected.connect(self._on_node_selected)
        self.problems.problem_activated.connect(self._on_problem_activated)
        self.template.apply_requested.connect(self.apply_mapping)
        self.template.remove_requested.connect(self._on_remove_mapping)
        self.template.stub_requested.connect(self._on_stub_requested)
        self.compare.node_picked.connect(lambda node_id: self.select_node("onnx", node_id))
        self.restore_bar.restore_clicked.connect(self._on_restore_autosave)
        self.restore_bar.discard_clicked.connect(self._on_discard_autosave)

    # ---- opening ----
    def open_path(self, path: str | Path) -> None:
        """Open a model file or a project file and export it right away."""
        path = Path(path)
        try:
            if path.name.endswith(PROJECT_SUFFIX) or path.suffix == ".json":
                self.workbench.open_project(path)
            else:
                self.workbench.open_model(path)
        except FixportError as exc:
            self.show_error(exc)
            return
        self.actions.add_recent_file(str(path.resolve()))
        self.setWindowTitle(f"{path.name} — {WINDOW_TITLE}")
        self.log.log(f"Opened {path}")
        self.graphs.set_graphs(None, None, keep_view=False)
        self.problems.set_problems([])
        self.compare.clear()
        self.template.set_target(None)
        self.inspector.clear()
        self.selected = None
        self.restore_bar.offer(self.workbench.autosave_file() if self.workbench.has_newer_autosave() else None)
        self.actions.sync_from_project()
        self.reexport(keep_view=False)

    def reexport(self, keep_view: bool = True, output: str | None = None) -> JobRequest | None:
        if self.workbench.project is None:
            return None
        self._keep_view = keep_view
        return self.runner.submit("analyze", topic="analyze", **self.workbench.analyze_arguments(output))

    # ---- job results ----
    def _on_job_started(self, request: JobRequest) -> None:
        if request.job != "ping":
            self.actions.show_progress(0.0, f"{request.job}…")

    def _on_job_progress(self, request: JobRequest, fraction: float, message: str) -> None:
        self.actions.show_progress(fraction, message)

    def _on_job_finished(self, request: JobRequest, result: Any) -> None:
        self.actions.hide_progress()
        handler = getattr(self, f"_on_{request.job}_finished", None)
        if handler is not None:
            handler(request, result)

    def _on_job_failed(self, request: JobRequest, error: FixportError) -> None:
        self.actions.hide_progress()
        if isinstance(error, TemplateValidationError):
            self.template.show_error(error.message, error.line)
        self.show_error(error)
        project = self.workbench.project
        if request.job != "analyze" or project is None:
            return
        if isinstance(error, InputSpecError) and "no example inputs" in error.message:
            self.ask_for_inputs()
        elif isinstance(error, ModelLoadError) and "--trust" in error.hint and not project.trust:
            if ask_trust(self, Path(project.model_path).name):
                self.workbench.set_project_field("trust", True)
                self.reexport(keep_view=False)

    def ask_for_inputs(self) -> None:
        """Let the user give (or change) the random example inputs, then export again."""
        project = self.workbench.project
        if project is None:
            return
        specs = ask_input_specs(self, project.input_specs)
        if specs is not None:
            self.workbench.set_project_field("input_specs", specs)
            self.reexport(keep_view=False)

    def _on_job_cancelled(self, request: JobRequest) -> None:
        self.actions.hide_progress()
        self.statusBar().showMessage(f"Cancelled {request.job}.", STATUS_TIMEOUT_MS)
        self.log.log(f"Cancelled {request.job}; the worker was stopped and will restart on the next job.")

    def _on_ping_finished(self, _request: JobRequest, info: dict[str, Any]) -> None:
        self.log.log(f"Worker ready (torch {info['torch']}, onnx {info['onnx']}, onnxruntime {info['onnxruntime']}).")

    def _on_analyze_finished(self, request: JobRequest, result: AnalysisResult) -> None:
        self.workbench.analysis = result
        keep_view = getattr(self, "_keep_view", False)
        onnx_nodes = result.onnx_graph.nodes if result.onnx_graph is not None else []
        placeholders = result.source_kind != "onnx" and any(node.unsupported for node in onnx_nodes)
        title = "ONNX (placeholders where export fails)" if placeholders else "ONNX (exported)"
        self.graphs.set_graphs(result.torchscript_graph, result.onnx_graph, keep_view=keep_view, onnx_title=title)
        self._mark_problems(result)
        fixed = [m.label for m in self.workbench.project.mappings] if self.workbench.project else []
        self.problems.set_problems(result.unsupported, fixed)
        self.actions.sync_from_analysis(result)
        summary = (f"{len(result.unsupported)} unsupported node(s)" if result.unsupported
                   else "exports cleanly and runs in ONNX Runtime")
        seconds = ", ".join(f"{k} {v:.2f}s" for k, v in result.seconds.items())
        self.statusBar().showMessage(f"{Path(result.model_path).name}: opset {result.options.opset}, {summary}.",
                                     STATUS_TIMEOUT_MS)
        self.log.log(f"Export at opset {result.options.opset}: {summary} ({seconds}).",
                     "\n".join(result.warnings + result.notes))
        for path in result.saved_files:
            self.log.log(f"Wrote {path}")
            self.statusBar().showMessage(f"Wrote {path}", STATUS_TIMEOUT_MS)
        if self.selected is not None:
            self.select_node(*self.selected)
        elif result.unsupported:  # start where the work is: the first problem, with its templates
            self._on_problem_activated(result.unsupported[0])

    def _mark_problems(self, result: AnalysisResult) -> None:
        unsupported_ts = {p.instance for p in result.unsupported}
        self.graphs.pane("torchscript").set_marks(unsupported=unsupported_ts)
        if result.onnx_graph is not None:
            bad = {n.id for n in result.onnx_graph.nodes if n.unsupported}
            created = {n.id for n in result.onnx_graph.nodes if self.highlight_after_export & set(n.origin)}
            self.graphs.pane("onnx").set_marks(unsupported=bad, highlighted=created)
            self.highlight_after_export = set()

    def _on_op_info_finished(self, request: JobRequest, info) -> None:
        if self.selected is not None:
            self._show_in_inspector(*self.selected, op_info=info)

    def _on_stub_finished(self, request: JobRequest, source: str) -> None:
        self.template.show_stub(source)

    def start_compare(self, provider: str = "cpu", runs: int = COMPARE_RUNS) -> JobRequest | None:
        """Compare torch and ONNX Runtime with the current fixes (off the UI thread)."""
        if self.workbench.project is None:
            return None
        analysis = self.workbench.analysis
        # Nodes ONNX Runtime cannot run (custom domains) still compare, through reference kernels.
        blocking = [p for p in analysis.unsupported if p.reason != "runtime_error"] if analysis else []
        if blocking and analysis.source_kind != "onnx":
            count = len(blocking)
            self.show_error(FixportError(f"Nothing to compare yet: {count} node(s) are still unsupported.",
                                         "Fix them first (pick a node in Problems, then a template)."))
            return None
        arguments = self.workbench.analyze_arguments()
        arguments.pop("output")
        return self.runner.submit("compare", topic="compare", provider=provider, runs=runs,
                                  rtol=self.compare_tolerances.get("rtol"),
                                  atol=self.compare_tolerances.get("atol"), **arguments)

    def _on_compare_finished(self, request: JobRequest, result) -> None:
        self.workbench.comparison = result
        self.compare.show_result(result)
        self.compare.raise_()
        if self.compare.height() < COMPARE_RESULT_HEIGHT:  # room for the plots to be read
            self.resizeDocks([self.compare], [COMPARE_RESULT_HEIGHT], Qt.Orientation.Vertical)
        analysis = result.node_analysis
        first = analysis.first_divergent.onnx_node if analysis and analysis.first_divergent else None
        onnx_graph = self.workbench.analysis.onnx_graph if self.workbench.analysis else None
        unsupported = {n.id for n in onnx_graph.nodes if n.unsupported} if onnx_graph else set()
        self.graphs.pane("onnx").set_marks(unsupported=unsupported, errors=self.compare.node_errors_for_marks(),
                                           first_divergent=first)
        verdict = "pass" if result.passed else "FAIL"
        worst = max((o.max_abs for o in result.outputs), default=float("nan"))
        self.log.log(f"Compare ({', '.join(result.providers_used)}): {verdict}, max abs {worst:.3g}"
                     + (f", first divergent node {first}" if first else ""), "\n".join(result.messages))
        self.statusBar().showMessage(f"Compare: {verdict}", STATUS_TIMEOUT_MS)

    # ---- selection ----
    def select_node(self, kind: str, node_id: str) -> None:
        self.graphs.select(kind, [node_id])  # type: ignore[arg-type]
        self._on_node_selected(kind, node_id)

    def _graph(self, kind: str) -> Graph | None:
        return self.graphs.graphs.get(kind)

    def _on_node_selected(self, kind: str, node_id: str) -> None:
        self.selected = (kind, node_id)
        graph = self._graph(kind)
        node = graph.node_by_id.get(node_id) if graph else None
        if node is None:
            return
        ts_node = node if kind == "torchscript" else self._origin_node(node)
        if ts_node is not None:
            self.problems.select_instance(ts_node.id)
            self._offer_templates(ts_node)
            self.runner.submit("op_info", topic="op_info", kind=ts_node.kind)
        else:
            self.template.set_target(None)
        self._show_in_inspector(kind, node_id)

    def _origin_node(self, onnx_node: Node) -> Node | None:
        ts_graph = self._graph("torchscript")
        if ts_graph is None or not onnx_node.origin:
            return None
        return ts_graph.node_by_id.get(onnx_node.origin[0])

    def _problem_for(self, instance: str) -> UnsupportedNode | None:
        analysis = self.workbench.analysis
        return next((p for p in analysis.unsupported if p.instance == instance), None) if analysis else None

    def _show_in_inspector(self, kind: str, node_id: str, op_info=None) -> None:
        graph = self._graph(kind)
        node = graph.node_by_id.get(node_id) if graph else None
        if graph is None or node is None:
            return
        ts_node = node if kind == "torchscript" else self._origin_node(node)
        problem = self._problem_for(ts_node.id) if ts_node else None
        if problem is None and kind == "onnx":
            problem = next((p for p in self.workbench.analysis.unsupported if p.onnx_node == node_id), None)
        from fixport.core.onnx_io.op_docs import onnx_ops_in_source

        targets = onnx_ops_in_source(self.template.editor.source()) if ts_node else []
        self.inspector.show_node(graph, node, problem, op_info, targets, self.workbench.opset or 17)

    def _offer_templates(self, ts_node: Node) -> None:
        python_op = ts_node.attributes.get("name") if ts_node.kind == "prim::PythonOp" else None
        ts_graph = self._graph("torchscript")
        input_types = [ts_graph.value(v).describe() for v in ts_node.inputs] if ts_graph else []
        target = TemplateTarget(ts_node.kind, ts_node.id, python_op or None, self.workbench.opset or 17, input_types)
        self.template.set_target(target, self._mapping_for(ts_node, python_op))

    def _mapping_for(self, ts_node: Node, python_op: str | None) -> FixMapping | None:
        project = self.workbench.project
        if project is None:
            return None
        candidates = [m for m in project.mappings if m.target_kind == ts_node.kind
                      and (m.python_op_name or None) == (python_op or None)]
        exact = [m for m in candidates if m.instance == ts_node.id]
        return (exact or [m for m in candidates if m.instance is None] or [None])[0]

    def _on_problem_activated(self, problem: UnsupportedNode) -> None:
        if problem.reason == "runtime_error" and problem.onnx_node:
            self.select_node("onnx", problem.onnx_node)
        elif problem.instance:
            self.select_node("torchscript", problem.instance)

    # ---- fixes ----
    def apply_mapping(self, mapping: FixMapping) -> None:
        if self.workbench.project is None:
            return
        self.workbench.apply_mapping(mapping)
        self.highlight_after_export = {mapping.instance} if mapping.instance else {
            p.instance for p in (self.workbench.analysis.unsupported if self.workbench.analysis else [])
            if p.kind == mapping.target_kind}
        self.log.log(f"Applied {mapping.template_id} to {mapping.label}; re-exporting.")
        self.reexport(keep_view=True)

    def _on_remove_mapping(self, mapping: FixMapping) -> None:
        self.workbench.remove_mapping(mapping.target_kind, mapping.python_op_name, mapping.instance)
        self.log.log(f"Removed the fix for {mapping.label}; re-exporting.")
        self.reexport(keep_view=True)

    def _on_stub_requested(self, target: TemplateTarget) -> None:
        self.runner.submit("stub", topic="stub", kind=target.kind, opset=target.opset,
                           input_types=target.input_types, python_op_name=target.python_op_name,
                           model_request=self.workbench.model_request() if self.workbench.project else None)

    # ---- autosave restore ----
    def _on_restore_autosave(self) -> None:
        if self.workbench.restore_autosave():
            self.log.log("Restored unsaved edits from the autosave.")
            self.actions.sync_from_project()
            self.reexport(keep_view=True)
        self.restore_bar.offer(None)

    def _on_discard_autosave(self) -> None:
        self.workbench.discard_autosave()
        self.restore_bar.offer(None)

    # ---- messages ----
    def show_error(self, error: FixportError | Exception) -> None:
        """A clear message in the window; details go to the Log."""
        text = error.user_text() if isinstance(error, FixportError) else str(error)
        details = getattr(error, "details", "")
        self.statusBar().showMessage(text.splitlines()[0], STATUS_TIMEOUT_MS * 2)
        self.log.log(f"Error: {text}", details)
        self.actions.show_error_banner(text)

    # ---- drag and drop, close ----
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        urls = event.mimeData().urls()
        if urls and any(url.toLocalFile().endswith(MODEL_FILE_SUFFIXES + (".json",)) for url in urls):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        for url in event.mimeData().urls():
            if url.toLocalFile():
                self.open_path(url.toLocalFile())
                break

    def _restore_window_state(self) -> None:
        geometry = self.settings.value("window/geometry")
        state = self.settings.value("window/state")
        if geometry is not None:
            self.restoreGeometry(geometry)
        if state is not None:
            self.restoreState(state)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        self.settings.sync()
        self.runner.shutdown()
        super().closeEvent(event)
