"""The workbench window: graphs side by side, docks around them, every action off the UI thread."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QDockWidget, QMainWindow, QVBoxLayout, QWidget

from fixport.core.exporters.profiles import profile_for, profile_for_graph
from fixport.core.model.capture_changes import write_changed_copy
from fixport.core.model.compare_result import CompareResult
from fixport.core.model.errors import (
    FixportError,
    MissingInputsError,
    ModelLoadError,
    ShapeNamesError,
    TemplateValidationError,
)
from fixport.core.model.graph import Graph, Node
from fixport.core.model.model_files import MODEL_FILE_SUFFIXES, is_checkpoint_folder
from fixport.core.model.problems import UnsupportedNode
from fixport.core.model.project import PROJECT_SUFFIX, FixMapping
from fixport.core.model.requests import (
    AnalyzeRequest,
    AutoFixRequest,
    CompareExportersRequest,
    CompareRequest,
    OpInfoRequest,
    PingRequest,
    StubRequest,
    SuggestDynamicRequest,
    SynthesizeRequest,
)
from fixport.core.model.results import AnalysisResult, AutoFixResult, DimVerdict, ExportedGraph, TracedGraph, WorkerInfo
from fixport.core.model.runtime_cost import DEFAULT_LATENCY_RUNS
from fixport.core.model.shape_sets import for_the_window
from fixport.core.model.trace_warnings import baked_here
from fixport.core.model.traced_sizes import pinned_dims_note
from fixport.core.model.vocabulary import (
    AFTER_EXPORT_REASONS,
    DEFAULT_OPSET,
    IN_THE_MODELS_CODE_REASONS,
    PYTHON_OP_KIND,
    ProblemReason,
)
from fixport.core.model.workbench import Workbench
from fixport.core.onnx_io.op_docs import OpInfo
from fixport.gui.checkpoint_bar import CheckpointBar
from fixport.gui.compare_dock import CompareDock
from fixport.gui.compare_exporters import select_aligned_node, show_exporter_comparison, start_compare_exporters
from fixport.gui.exporter_comparison_dock import ExporterComparisonDock
from fixport.gui.fix_all import opset_that_works, plan_from
from fixport.gui.graph_panes import ONNX_FILE_NO_SOURCE, SideBySideGraphs
from fixport.gui.inspector_dock import InspectorDock
from fixport.gui.job_runner import JobRunner, SubmittedJob
from fixport.gui.log_dock import LogDock
from fixport.gui.model_questions import ask_input_specs, ask_trust
from fixport.gui.onnx_preview import OnnxPreview
from fixport.gui.plots_dock import PlotsDock
from fixport.gui.problems_dock import FixedKind, ProblemsDock
from fixport.gui.restore_bar import RestoreBar
from fixport.gui.template_dock import TemplateDock, TemplateTarget
from fixport.gui.window_actions import WindowActions
from fixport.symbolics.library import TemplateLibrary

WINDOW_TITLE = "Fixport"
DEFAULT_SIZE = (1500, 920)
STATUS_TIMEOUT_MS = 8000
DOCKS_AFTER_PAINT_MS = 15
PROBLEMS_WIDTH, TEMPLATE_WIDTH, COMPARE_HEIGHT = 260, 520, 230
TEMPLATE_HEIGHT, INSPECTOR_HEIGHT = 560, 260
PROBLEMS_MIN_WIDTH = 220
COMPARE_RESULT_HEIGHT = 420
COMPARE_MAX_SHARE = 0.36  # of the window's height, for the Compare, Plots and Log tabs
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
        self.onnx_preview = OnnxPreview(self)
        self._previewed_onnx: str | None = None  # the .onnx file drawn before its analysis arrived
        self.selected: tuple[str, str] | None = None  # (graph kind, node id)
        self._keep_view = False  # the running export keeps the current view
        self._traced: Graph | None = None  # the running export's traced graph, drawn before it ends
        self._exported: Graph | None = None  # its ONNX graph, drawn while ONNX Runtime checks it
        self._closed = False
        self.compare_tolerances: dict[str, float | None] = {"rtol": None, "atol": None}
        self.highlight_after_export: set[str] = set()
        self.fix_outcomes: list[FixedKind] | None = None  # what the last Fix all chose per kind
        # What the worker said about an op kind depends on torch only: asked once per kind (and
        # opset), not again after every re-export that re-selects the node.
        self._op_infos: dict[str, OpInfo] = {}
        self._synthesized: dict[tuple[str, int, str], list] = {}  # (kind, opset, exporter) -> offers
        self._synthesizing: tuple[str, int, str] | None = None
        self._analyzed_request: AnalyzeRequest | None = None
        # The docks follow a new analysis once its graphs have painted; a job started before then
        # brings them up to date first, so its own outcome (a template's error) is not cleared after.
        self._reselect_timer = QTimer(self, singleShot=True, interval=DOCKS_AFTER_PAINT_MS)
        self._reselect_timer.timeout.connect(self._reselect_after_analysis)

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
        self.plots = PlotsDock(self)
        self.compare = CompareDock(self, self.plots)
        self.log = LogDock(self)
        # Side docks run the full height; Compare and Log sit under the graphs only.
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.problems)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.template)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.compare)
        # Only one tabified group: Qt 6.11 leaves a stale tab bar on screen with two.
        self.splitDockWidget(self.template, self.inspector, Qt.Orientation.Vertical)
        self.tabifyDockWidget(self.compare, self.plots)
        self.tabifyDockWidget(self.plots, self.log)
        self.exporter_comparison = ExporterComparisonDock(self)  # shown by Run > Compare exporters
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.exporter_comparison)
        self.tabifyDockWidget(self.log, self.exporter_comparison)
        self.exporter_comparison.hide()
        self.compare.raise_()
        self.resizeDocks([self.problems, self.template], [PROBLEMS_WIDTH, TEMPLATE_WIDTH], Qt.Orientation.Horizontal)
        self.resizeDocks([self.template, self.inspector], [TEMPLATE_HEIGHT, INSPECTOR_HEIGHT], Qt.Orientation.Vertical)
        self.resizeDocks([self.compare], [COMPARE_HEIGHT], Qt.Orientation.Vertical)
        self.actions = WindowActions(self, [self.problems, self.inspector, self.template, self.compare, self.plots,
                                            self.log, self.exporter_comparison])

        self.checkpoint_bar = CheckpointBar(self._on_checkpoint_choice, self)
        self.addToolBarBreak()  # a row of its own: the main toolbar fills a laptop screen's width
        self.addToolBar(self.checkpoint_bar)
        self._connect()
        self._restore_window_state()
        self.runner.warm_up()

    # ---- wiring ----
    def _connect(self) -> None:
        self.onnx_preview.ready.connect(self._on_onnx_preview_ready)
        self.runner.started.connect(self._on_job_started)
        self.runner.progress.connect(self._on_job_progress)
        self.runner.partial.connect(self._on_job_partial)
        self.runner.finished.connect(self._on_job_finished)
        self.runner.on_finished(PingRequest, self._on_worker_ready)
        self.runner.on_finished(AnalyzeRequest, self._on_analysis_finished)
        self.runner.on_finished(CompareRequest, self._on_compare_finished)
        self.runner.on_finished(CompareExportersRequest, lambda result: show_exporter_comparison(self, result))
        self.runner.on_finished(OpInfoRequest, self._on_op_info_finished)
        self.runner.on_finished(StubRequest, self._on_stub_finished)
        self.runner.on_finished(SynthesizeRequest, self._on_synthesized)
        self.runner.on_finished(AutoFixRequest, self._on_fix_all_finished)
        self.runner.on_finished(SuggestDynamicRequest, self._on_dims_suggested)
        self.runner.failed.connect(self._on_job_failed)
        self.runner.cancelled.connect(self._on_job_cancelled)
        self.runner.busy_changed.connect(self.actions.set_busy)
        self.graphs.node_selected.connect(self._on_node_selected)
        self.problems.problem_activated.connect(self._on_problem_activated)
        self.problems.fix_activated.connect(self._on_fix_activated)
        self.template.opset_requested.connect(self._on_opset_requested)
        self.template.apply_requested.connect(self.apply_mapping)
        self.template.remove_requested.connect(self._on_remove_mapping)
        self.template.stub_requested.connect(self._on_stub_requested)
        self.compare.node_picked.connect(lambda node_id: self.select_node("onnx", node_id))
        self.exporter_comparison.node_picked.connect(lambda node: select_aligned_node(self, node))
        self.restore_bar.restore_clicked.connect(self._on_restore_autosave)
        self.inspector.changed_copy_requested.connect(self.open_changed_copy)
        self.restore_bar.discard_clicked.connect(self._on_discard_autosave)

    # ---- opening ----
    def open_path(self, path: str | Path, export_options: dict[str, Any] | None = None) -> None:
        """Open a model file or a project file and export it right away (a model with
        ``export_options``, when given: the options the user had set, e.g. the exporter)."""
        path = Path(path)
        try:
            if path.name.endswith(PROJECT_SUFFIX) or path.suffix == ".json":
                self.workbench.open_project(path)
            else:
                self.workbench.open_model(path)
                if export_options:
                    self.workbench.set_project_field("export_options", dict(export_options))
        except FixportError as exc:
            self.show_error(exc)
            return
        self.actions.add_recent_file(str(path.resolve()))
        self.setWindowTitle(f"{path.name} — {WINDOW_TITLE}")
        self.log.log(f"Opened {path}")
        model_path = Path(self.workbench.project.model_path)
        self.graphs.show_opening(onnx_file=model_path.suffix == ".onnx",
                                 exporter=profile_for(self.workbench.exporter_name))
        self._previewed_onnx = None
        if model_path.suffix == ".onnx":
            self.onnx_preview.read(model_path)  # drawn before the worker's check arrives
        self.problems.set_problems([])
        self.fix_outcomes = None
        self.compare.clear()
        self.template.set_target(None)
        self.inspector.clear()
        self.selected = None
        self.restore_bar.offer(self.workbench.autosave_file() if self.workbench.has_newer_autosave() else None)
        self.actions.sync_from_project()
        self.reexport(keep_view=False)

    def open_changed_copy(self) -> None:
        """Write a copy of the model file with the changes proposed for its capture failures beside
        it, and open that copy with the same options (the original is never changed)."""
        project, analysis = self.workbench.project, self.workbench.analysis
        if project is None or analysis is None:
            return
        try:
            written = write_changed_copy(Path(project.model_path), analysis.unsupported)
        except OSError as error:
            self.show_error(FixportError(f"Could not write the changed copy: {error}",
                                         "Check that the model's folder is writable."))
            return
        if written is None:
            return
        self.log.log(f"Wrote {written} with the proposed changes; opening it.")
        self.open_path(written, export_options=project.export_options)

    def make_room_for(self, dock: QDockWidget, share: float = COMPARE_MAX_SHARE) -> None:
        """A bottom dock with a result grows to be read, never at the cost of the graphs: at most
        ``share`` of the window's height (they keep the rest)."""
        wanted = min(COMPARE_RESULT_HEIGHT, int(share * self.height()))
        if dock.height() < wanted:
            self.resizeDocks([dock], [wanted], Qt.Orientation.Vertical)

    def _on_checkpoint_choice(self, task: str, component: str) -> None:
        """The Checkpoint bar's task or component changed: export that one (a new task: its first component)."""
        if self.workbench.project is None:
            return
        self.workbench.set_project_field("task", task)
        self.workbench.set_project_field("component", component or None)
        self.log.log(f"Checkpoint: task {task}, component {component or '(the first)'}; exporting again.")
        self.reexport(keep_view=False)

    def reexport(self, keep_view: bool = True, output: str | None = None) -> SubmittedJob | None:
        if self.workbench.project is None:
            return None
        try:
            request = self.workbench.analyze_request(output)
        except FixportError as error:  # a hand-edited project's inputs or shapes to check
            self.show_error(error)
            return None
        self._keep_view = keep_view
        self._traced = self._exported = None
        return self.runner.submit(request)

    # ---- job results ----
    def _on_job_started(self, submitted: SubmittedJob) -> None:
        if self._reselect_timer.isActive():
            self._reselect_after_analysis()
        if not isinstance(submitted.request, PingRequest):
            self.actions.show_progress(0.0, f"{submitted.job.name}…")

    def _on_job_progress(self, submitted: SubmittedJob, fraction: float, message: str) -> None:
        self.actions.show_progress(fraction, message)

    def _on_job_finished(self, submitted: SubmittedJob, result: Any) -> None:
        self.actions.hide_progress()  # the runner calls the job's own handler next
        if isinstance(submitted.request, AnalyzeRequest):
            self._analyzed_request = submitted.request  # what the held analysis answers (Fix all reuses it)

    def _on_job_failed(self, submitted: SubmittedJob, error: FixportError) -> None:
        self.actions.hide_progress()
        if isinstance(error, ShapeNamesError):  # the project and its fixes stay: the message says where to fix
            error = for_the_window(error)
        if isinstance(error, TemplateValidationError):
            self.template.show_error(error.message, error.line)
        self.show_error(error)
        project = self.workbench.project
        if not isinstance(submitted.request, AnalyzeRequest) or project is None:
            return
        self.graphs.stop_waiting()
        if isinstance(error, MissingInputsError):
            self.ask_for_inputs(error.message)
        elif isinstance(error, ModelLoadError) and "--trust" in error.hint and not project.trust:
            if ask_trust(self, Path(project.model_path).name):
                self.workbench.set_project_field("trust", True)
                self.reexport(keep_view=False)

    def ask_for_inputs(self, why: str = "") -> None:
        """Let the user give (or change) the random example inputs, then export again."""
        project = self.workbench.project
        if project is None:
            return
        specs = ask_input_specs(self, project.input_specs, why=why)
        if specs is not None:
            self.workbench.set_project_field("input_specs", specs)
            self.reexport(keep_view=False)

    def _on_job_cancelled(self, submitted: SubmittedJob) -> None:
        self.actions.hide_progress()
        self.statusBar().showMessage(f"Cancelled {submitted.job.name}.", STATUS_TIMEOUT_MS)
        self.log.log(f"Cancelled {submitted.job.name}.")

    def _on_worker_ready(self, info: WorkerInfo) -> None:
        self.log.log(f"Worker ready (torch {info.torch}, onnx {info.onnx}, onnxruntime {info.onnxruntime}).")
        self.actions.set_available_providers(info.providers)

    def _on_job_partial(self, submitted: SubmittedJob, piece: object) -> None:
        """The traced graph arrives before the export ends, the ONNX graph before ONNX Runtime's
        check and the comparison with torch: draw each at once."""
        if isinstance(piece, ExportedGraph) and isinstance(submitted.request, AnalyzeRequest):
            self._exported = piece.graph
            traced = self._traced or self.graphs.graphs["source"]
            self.graphs.set_graphs(traced, piece.graph, keep_view=self._keep_view,
                                   onnx_title="ONNX (exported; checking it in ONNX Runtime…)")
            self.graphs.pane("source").set_marks(unsupported=set())
            created = {n.id for n in piece.graph.nodes if self.highlight_after_export & set(n.origin)}
            self.graphs.pane("onnx").set_marks(unsupported=set(), highlighted=created)
        if isinstance(piece, TracedGraph) and isinstance(submitted.request, AnalyzeRequest):
            shown = self.graphs.graphs["source"]
            if _same_nodes(shown, piece.graph):  # a re-export traced the same graph: keep the drawing
                self._traced = shown
                return
            self._traced = piece.graph
            self.graphs.show_traced(piece.graph, keep_view=self._keep_view)

    def _on_onnx_preview_ready(self, path: str, graph: Graph) -> None:
        """An .onnx file's graph, read in this process: draw it while the worker checks the file."""
        project, analysis = self.workbench.project, self.workbench.analysis
        if project is None or Path(project.model_path) != Path(path) or (
                analysis is not None and Path(analysis.model_path) == Path(path)):
            return  # another file was opened meanwhile, or the worker was faster
        self._previewed_onnx = path
        self.graphs.set_graphs(None, graph, keep_view=False, onnx_title="ONNX (file)", no_source=ONNX_FILE_NO_SOURCE)
        self.statusBar().showMessage(f"{Path(path).name}: {len(graph.nodes):,} nodes; checking every node "
                                     "in ONNX Runtime…", STATUS_TIMEOUT_MS)

    def _on_analysis_finished(self, result: AnalysisResult) -> None:
        self.workbench.analysis = result
        keep_view = self._keep_view
        onnx_nodes = result.onnx_graph.nodes if result.onnx_graph is not None else []
        placeholders = result.source_kind != "onnx" and any(node.unsupported for node in onnx_nodes)
        title = "ONNX (placeholders where export fails)" if placeholders else "ONNX (exported)"
        previewed = self._previewed_onnx is not None and Path(self._previewed_onnx) == Path(result.model_path)
        if result.source_kind == "onnx" and previewed:
            self.graphs.adopt_graphs(None, result.onnx_graph, onnx_title="ONNX (file)")
        else:
            traced = self._traced if _same_nodes(self._traced, result.source_graph) else result.source_graph
            exported = self._exported if _same_drawing(self._exported, result.onnx_graph) else result.onnx_graph
            self.graphs.set_graphs(traced, exported, keep_view=keep_view, onnx_title=title)
        self._mark_problems(result)
        fixed = [m.label for m in self.workbench.project.mappings] if self.workbench.project else []
        self.problems.set_problems(result.unsupported, fixed, self.fix_outcomes)
        self.actions.sync_from_analysis(result)
        self.checkpoint_bar.show_analysis(result)
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
        # The selection's docks (templates, inspector) follow once the panes have painted the new
        # graphs (a zero timer would run before the paint events).
        self._reselect_timer.start()

    def _reselect_after_analysis(self) -> None:
        self._reselect_timer.stop()
        result = self.workbench.analysis
        if result is None or self._closed:
            return
        if self.selected is not None and self._graph(self.selected[0]) is not None \
                and self.selected[1] not in self._graph(self.selected[0]).node_by_id:
            # the fix replaced the node (a decomposition): its docks would describe what is gone
            self.selected = None
            self.inspector.clear()
            self.template.set_target(None)
        if self.selected is not None:
            self.select_node(*self.selected)
        elif result.unsupported:  # start where the work is: the first problem, with its templates
            self._on_problem_activated(result.unsupported[0])

    def _mark_problems(self, result: AnalysisResult) -> None:
        unsupported_ts = {p.instance for p in result.unsupported}
        self.graphs.pane("source").set_marks(unsupported=unsupported_ts)
        if result.onnx_graph is not None:
            bad = {n.id for n in result.onnx_graph.nodes if n.unsupported}
            created = {n.id for n in result.onnx_graph.nodes if self.highlight_after_export & set(n.origin)}
            self.graphs.pane("onnx").set_marks(unsupported=bad, highlighted=created)
            self.highlight_after_export = set()

    # ---- Fix all ----
    def start_fix_all(self) -> SubmittedJob | None:
        """The `fix --auto` search for every problem, off the UI thread (progress and Cancel as for any job)."""
        project = self.workbench.project
        if project is None:
            return None
        try:
            request = self.workbench.analyze_request()
        except FixportError as error:  # a hand-edited project's inputs or shapes to check
            self.show_error(error)
            return None
        self.log.log("Fix all: searching a fix for every problem…")
        held = self.workbench.analysis if request == self._analyzed_request else None  # the search starts there
        return self.runner.submit(AutoFixRequest(request.model, request.options, request.mappings, analysis=held,
                                                 other_shapes=request.other_shapes, latency_runs=DEFAULT_LATENCY_RUNS))

    def start_suggest_dynamic(self) -> SubmittedJob | None:
        """Which input dims could be declared dynamic (one export per dim, off the UI thread)."""
        project = self.workbench.project
        if project is None:
            return None
        self.log.log("Suggest dynamic dims: exporting with each input dim dynamic in turn…")
        return self.runner.submit(SuggestDynamicRequest(self.workbench.model_request(), dict(project.export_options),
                                                        list(project.mappings)))

    def _on_dims_suggested(self, verdicts: list[DimVerdict]) -> None:
        """One Log line per dim; the status bar names the ones that can be dynamic."""
        words = {True: "can be dynamic", False: "blocked", None: "cannot tell"}
        details = "\n".join(f"{v.label}: {words[v.generalises]}" + (f" at {v.source}" if v.source else "")
                            + (f" — {v.why}" if v.why else "") for v in verdicts)
        dynamic = [v.label for v in verdicts if v.generalises]
        summary = (f"Can be declared dynamic: {', '.join(dynamic)}." if dynamic
                   else "No input dim can be declared dynamic as the model stands.")
        self.log.log(f"Suggest dynamic dims: {summary}", details)
        self.log.show()
        self.log.raise_()  # the Log shares its place with the Compare dock
        self.statusBar().showMessage(f"{summary} Details in the Log.", STATUS_TIMEOUT_MS)

    def _on_fix_all_finished(self, result: AutoFixResult) -> None:
        """Only now does the project change: the chosen mappings (autosaved), the opset, then re-export."""
        if self.workbench.project is None:
            return
        plan = plan_from(result, self.workbench.project.mappings)
        for mapping in plan.new_mappings:
            self.workbench.apply_mapping(mapping)
        if plan.opset is not None:
            self.workbench.set_export_option("opset", plan.opset)
        if plan.capture_settings:
            self.workbench.set_export_option("capture_settings", plan.capture_settings)
        self.fix_outcomes = plan.outcomes
        tried = [*(r.line() for r in result.rejected),
                 *(f"tried on the whole model: {why}" for why in result.whole_model_why)]
        self.log.log(plan.summary(), "\n".join([*plan.notes, *tried]))
        self.actions.sync_from_project()
        # The search's last analysis is the export of the project as it now stands: no re-export.
        self._keep_view = True
        self._analyzed_request = self.workbench.analyze_request()
        self._on_analysis_finished(result.after)
        self.statusBar().showMessage(plan.summary(), STATUS_TIMEOUT_MS)

    def _on_fix_activated(self, mapping: object) -> None:
        """A fixed kind's row: select one of its nodes, so the Template dock shows the fix's source."""
        ts_graph = self._graph("source")
        if ts_graph is None or not isinstance(mapping, FixMapping):
            return
        node = ts_graph.node_by_id.get(mapping.instance or "") or next(
            (n for n in ts_graph.nodes if n.kind == mapping.target_kind and (mapping.python_op_name or None)
             in (None, n.attributes.get("name"))), None)
        if node is not None:
            self.select_node("source", node.id)

    def _on_opset_requested(self, opset: int) -> None:
        """"Raise the opset to N" from the Template dock: one click sets it and exports again."""
        if self.workbench.project is None:
            return
        self.workbench.set_export_option("opset", opset)
        self.log.log(f"Raised the opset to {opset}; re-exporting.")
        self.actions.sync_from_project()
        self.reexport(keep_view=True)

    def _on_op_info_finished(self, info: OpInfo) -> None:
        self._op_infos[info.kind] = info
        if self.selected is not None:
            self._show_in_inspector(*self.selected, op_info=info)

    def _on_synthesized(self, offers: list) -> None:
        if self._synthesizing is not None:
            self._synthesized[self._synthesizing] = offers
            self._synthesizing = None
        self._show_synthesized(offers)

    def _show_synthesized(self, offers: list) -> None:
        if offers:
            self.template.add_synthesized(offers[0].template.fits[0], offers)

    def _on_stub_finished(self, source: str) -> None:
        self.template.show_stub(source)

    def start_compare(self, provider: str = "cpu", runs: int = COMPARE_RUNS,
                      precision: str = "strict") -> SubmittedJob | None:
        """Compare torch and ONNX Runtime with the current fixes (off the UI thread)."""
        if self.workbench.project is None:
            return None
        analysis = self.workbench.analysis
        # Nodes ONNX Runtime cannot run (custom domains) still compare, through reference kernels.
        # A mismatch is what Compare explains: it never blocks it.
        blocking = [p for p in analysis.unsupported if p.reason not in AFTER_EXPORT_REASONS] if analysis else []
        if blocking and analysis.source_kind != "onnx":
            count = len(blocking)
            self.show_error(FixportError(f"Nothing to compare yet: {count} node(s) are still unsupported.",
                                         "Fix them first (pick a node in Problems, then a template)."))
            return None
        project = self.workbench.project
        try:
            other_shapes = project.other_shapes()
        except FixportError as error:
            self.show_error(error)
            return None
        return self.runner.submit(CompareRequest(
            self.workbench.model_request(), dict(project.export_options), list(project.mappings), provider=provider,
            runs=runs, rtol=self.compare_tolerances.get("rtol"), atol=self.compare_tolerances.get("atol"),
            precision=precision, other_shapes=other_shapes))

    def start_compare_exporters(self, provider: str = "cpu") -> SubmittedJob | None:
        """Both exporters' exports compared with torch and with each other (off the UI thread)."""
        return start_compare_exporters(self, provider)

    def _on_compare_finished(self, result: CompareResult) -> None:
        self.workbench.comparison = result
        self.compare.show_result(result)
        self.compare.raise_()
        self.make_room_for(self.compare)
        analysis = result.node_analysis
        first = analysis.first_divergent.onnx_node if analysis and analysis.first_divergent else None
        onnx_graph = self.workbench.analysis.onnx_graph if self.workbench.analysis else None
        unsupported = {n.id for n in onnx_graph.nodes if n.unsupported} if onnx_graph else set()
        self.graphs.pane("onnx").set_marks(unsupported=unsupported, errors=self.compare.node_errors_for_marks(),
                                           first_divergent=first)
        verdict = "pass" if result.passed else "FAIL"
        worst = max((o.max_abs for o in result.outputs), default=float("nan"))
        self.log.log(f"Compare ({', '.join(result.providers_used)}): {verdict}, max abs {worst:.3g}"
                     + (f", first divergent node {first}" if first else ""),
                     "\n".join([*result.baked_inputs, *result.messages]))
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
        ts_node = node if kind == "source" else self._origin_node(node)
        if ts_node is not None:
            self.problems.select_instance(ts_node.id)
            self._offer_templates(ts_node)
            if ts_node.kind not in self._op_infos:
                self.runner.submit(OpInfoRequest(ts_node.kind))
        else:
            self.template.set_target(None)
        self._show_in_inspector(kind, node_id)

    def _origin_node(self, onnx_node: Node) -> Node | None:
        ts_graph = self._graph("source")
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
        ts_node = node if kind == "source" else self._origin_node(node)
        problem = self._problem_for(ts_node.id) if ts_node else None
        if problem is None and kind == "onnx":
            problem = next((p for p in self.workbench.analysis.unsupported if p.onnx_node == node_id), None)
        from fixport.core.onnx_io.op_docs import onnx_ops_in_source

        targets = onnx_ops_in_source(self.template.editor.source()) if ts_node else []
        op_info = op_info or (self._op_infos.get(ts_node.kind) if ts_node else None)
        analysis = self.workbench.analysis
        baked = baked_here(analysis.warnings, self._graph("source"), ts_node) if analysis and ts_node else None
        source = self._graph("source")  # the exporter whose graphs are shown names them
        exporter = (profile_for_graph(source.kind) if source else None) or profile_for(self.workbench.exporter_name)
        self.inspector.show_node(graph, node, problem, op_info, targets, self.workbench.opset or DEFAULT_OPSET,
                                 baked=baked, exporter=exporter)

    def _offer_templates(self, ts_node: Node) -> None:
        python_op = ts_node.attributes.get("name") if ts_node.kind == PYTHON_OP_KIND else None
        ts_graph = self._graph("source")
        input_types = [ts_graph.value(v).describe() for v in ts_node.inputs] if ts_graph else []
        opset = self.workbench.opset or DEFAULT_OPSET
        problem = self._problem_for(ts_node.id)
        exporter = profile_for(self.workbench.exporter_name)
        in_model_code = problem is not None and problem.reason in IN_THE_MODELS_CODE_REASONS
        target = TemplateTarget(ts_node.kind, ts_node.id, python_op or None, opset, input_types,
                                suggested_opset=opset_that_works(problem, opset) if problem else None,
                                exporter=exporter, not_for_templates=(
                                    f"No template fixes this ({problem.reason.description}): it comes from the "
                                    "model's own code. The Inspector says what to change." if in_model_code else ""),
                                pinned_dims=pinned_dims_note(self.workbench.analysis))
        project = self.workbench.project
        self.template.set_target(target, project.mapping_for(ts_node) if project is not None else None)
        if python_op:
            return
        key = (ts_node.kind, opset, exporter.name)
        if key in self._synthesized:
            self._show_synthesized(self._synthesized[key])
        else:  # generated fixes need torch: the worker makes them, the dock shows them first
            self._synthesizing = key
            self.runner.submit(SynthesizeRequest(ts_node.kind, opset, exporter.name), topic="synthesize")

    def _on_problem_activated(self, problem: UnsupportedNode) -> None:
        graph = self._graph("source")
        if problem.reason == ProblemReason.RUNTIME_ERROR and problem.onnx_node:
            self.select_node("onnx", problem.onnx_node)
        elif problem.instance and graph is not None and problem.instance in graph.node_by_id:
            self.select_node("source", problem.instance)
        else:  # a capture failure or the export's own: no node to select, the problem itself is shown
            self.inspector.show_problem(problem)

    # ---- fixes ----
    def apply_mapping(self, mapping: FixMapping) -> None:
        if self.workbench.project is None:
            return
        self.workbench.apply_mapping(mapping)
        self.fix_outcomes = None  # the project's fixes are the user's own from here on
        self.highlight_after_export = {mapping.instance} if mapping.instance else {
            p.instance for p in (self.workbench.analysis.unsupported if self.workbench.analysis else [])
            if p.kind == mapping.target_kind}
        self.log.log(f"Applied {mapping.template_id} to {mapping.label}; re-exporting.")
        self.reexport(keep_view=True)

    def _on_remove_mapping(self, mapping: FixMapping) -> None:
        self.workbench.remove_mapping(mapping.target_kind, mapping.python_op_name, mapping.instance)
        self.fix_outcomes = None
        self.log.log(f"Removed the fix for {mapping.label}; re-exporting.")
        self.reexport(keep_view=True)

    def _on_stub_requested(self, target: TemplateTarget) -> None:
        self.runner.submit(StubRequest(target.kind, target.opset, list(target.input_types), target.python_op_name,
                                       self.workbench.model_request() if self.workbench.project else None,
                                       target.exporter.name))

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
        text = error.user_text(in_window=True) if isinstance(error, FixportError) else str(error)
        details = getattr(error, "details", "")
        self.statusBar().showMessage(text.splitlines()[0], STATUS_TIMEOUT_MS * 2)
        self.log.log(f"Error: {text}", details)
        self.actions.show_error_banner(text)

    # ---- drag and drop, close ----
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        urls = event.mimeData().urls()
        if urls and any(url.toLocalFile().endswith(MODEL_FILE_SUFFIXES + (".json",))
                        or is_checkpoint_folder(Path(url.toLocalFile())) for url in urls if url.toLocalFile()):
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
        self._closed = True  # nothing deferred starts new jobs from here on
        self.runner.shutdown()
        super().closeEvent(event)


def _same_drawing(drawn: Graph | None, analysed: Graph | None) -> bool:
    """Whether the ONNX graph drawn early is the analysed one, flags included (a runtime error marks a node)."""
    return drawn is not None and analysed is not None and (
        [(n.id, n.kind, n.unsupported) for n in drawn.nodes] == [(n.id, n.kind, n.unsupported) for n in analysed.nodes])


def _same_nodes(drawn: Graph | None, analysed: Graph | None) -> bool:
    """Whether the graph already drawn is the analysed one (same nodes), so it needs no new layout."""
    return drawn is not None and analysed is not None and [n.id for n in drawn.nodes] == [n.id for n in analysed.nodes]
