"""The workbench window: graphs side by side, docks around them, every action off the UI thread."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QDockWidget, QMainWindow, QVBoxLayout, QWidget

from fixport.core.exporters.profiles import profile_for
from fixport.core.foundation.errors import FixportError, MissingInputsError
from fixport.core.onnx_io.op_docs import onnx_ops_in_source
from fixport.core.project.model_files import MODEL_FILE_SUFFIXES, is_checkpoint_folder
from fixport.core.project.project import FixMapping
from fixport.core.project.shape_sets import for_the_window
from fixport.core.records.requests import AnalyzeRequest, CompareExportersRequest, PingRequest
from fixport.core.session import events
from fixport.core.session.session import COMPARE_RUNS, Session
from fixport.core.session.workbench import Workbench
from fixport.core.words.errors import ShapeNamesError, TemplateValidationError, UntrustedFileError
from fixport.gui.checkpoint_bar import CheckpointBar
from fixport.gui.compare_dock import CompareDock
from fixport.gui.compare_exporters import select_aligned_node, show_exporter_comparison, start_compare_exporters
from fixport.gui.export_drawing import ExportDrawing
from fixport.gui.exporter_comparison_dock import ExporterComparisonDock
from fixport.gui.graph_panes import SideBySideGraphs
from fixport.gui.inspector_dock import InspectorDock
from fixport.gui.job_reports import report_dims_suggested, show_compare
from fixport.gui.job_runner import JobRunner, SubmittedJob
from fixport.gui.log_dock import LogDock
from fixport.gui.model_questions import ask_input_specs, ask_trust
from fixport.gui.onnx_preview import OnnxPreview
from fixport.gui.plots_dock import PlotsDock
from fixport.gui.problems_dock import ProblemsDock
from fixport.gui.restore_bar import RestoreBar
from fixport.gui.template_dock import TemplateDock
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


class MainWindow(QMainWindow):
    """A view over one :class:`Session`: widgets and wiring; the session holds the project, its
    analysis and the workflows, and its events update the docks. Long work goes through ``self.runner``."""

    def __init__(self, settings: QSettings | None = None, runner: JobRunner | None = None,
                 library: TemplateLibrary | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(WINDOW_TITLE)
        self.resize(*DEFAULT_SIZE)
        self.setAcceptDrops(True)
        self.settings = settings or QSettings("Fixport", "Fixport")
        self.library = library or TemplateLibrary()
        self.runner = runner or JobRunner(parent=self)
        self.graphs = SideBySideGraphs()
        self.session = Session(self.runner, shown_graphs=lambda: self.graphs.graphs)
        self.onnx_preview = OnnxPreview(self)
        self.drawing = ExportDrawing(self.graphs, self.session,
                                     lambda text: self.statusBar().showMessage(text, STATUS_TIMEOUT_MS))
        self._closed = False
        # The docks follow a new analysis once its graphs have painted; a job started before then
        # brings them up to date first, so its own outcome (a template's error) is not cleared after.
        self._reselect_timer = QTimer(self, singleShot=True, interval=DOCKS_AFTER_PAINT_MS)
        self._reselect_timer.timeout.connect(self._reselect_after_analysis)

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

    # ---- the session's state, as the actions and tests read it ----
    @property
    def workbench(self) -> Workbench:
        return self.session.workbench

    @property
    def selected(self) -> tuple[str, str] | None:
        return self.session.selected

    @property
    def compare_tolerances(self) -> dict[str, float | None]:
        return self.session.compare_tolerances

    # ---- wiring ----
    def _connect(self) -> None:
        self.onnx_preview.ready.connect(self.drawing.preview_ready)
        self.runner.started.connect(self._on_job_started)
        self.runner.progress.connect(self._on_job_progress)
        self.runner.partial.connect(self.drawing.partial)
        self.runner.finished.connect(self._on_job_finished)
        self.runner.on_finished(CompareExportersRequest, lambda result: show_exporter_comparison(self, result))
        self.runner.failed.connect(self._on_job_failed)
        self.runner.cancelled.connect(self._on_job_cancelled)
        self.runner.busy_changed.connect(self.actions.set_busy)
        self.graphs.node_selected.connect(self._on_node_clicked)
        self.problems.problem_activated.connect(self.session.activate_problem)
        self.problems.fix_activated.connect(self._on_fix_activated)
        self.template.opset_requested.connect(self.session.raise_opset)
        self.template.setting_requested.connect(self.session.apply_capture_setting)
        self.template.apply_requested.connect(self.apply_mapping)
        self.template.remove_requested.connect(self.session.remove_mapping)
        self.template.stub_requested.connect(self.session.request_stub)
        self.compare.node_picked.connect(lambda node_id: self.select_node("onnx", node_id))
        self.compare.optimizers.optimize_changed.connect(self._on_optimize_changed)
        self.exporter_comparison.node_picked.connect(lambda node: select_aligned_node(self, node))
        self.restore_bar.restore_clicked.connect(self._on_restore_autosave)
        self.inspector.changed_copy_requested.connect(self.open_changed_copy)
        self.restore_bar.discard_clicked.connect(self._on_discard_autosave)
        on = self.session.events.subscribe
        on(events.Opened, self._on_opened)
        on(events.ExportStarted, lambda event: self.drawing.export_started())
        on(events.AnalysisArrived, self._on_analysis_arrived)
        on(events.NodeSelected, self._on_node_selected)
        on(events.SelectionCleared, self._on_selection_cleared)
        on(events.TargetChanged, lambda event: self.template.set_target(event.target, event.mapping))
        on(events.OffersSynthesized, lambda event: self.template.add_synthesized(event.kind, event.offers))
        on(events.FixOffersFound, lambda event: self.template.add_fix_offers(event.instance, event.offers))
        on(events.NodeShown, self._on_node_shown)
        on(events.ProblemShown, lambda event: self.inspector.show_problem(event.problem))
        on(events.ProjectEdited, lambda event: self.actions.sync_from_project())
        on(events.FixAllApplied, lambda event: self.statusBar().showMessage(event.plan.summary(), STATUS_TIMEOUT_MS))
        on(events.CompareArrived, lambda event: show_compare(self, event.result))
        on(events.StubReady, lambda event: self.template.show_stub(event.source))
        on(events.DimsSuggested, lambda event: report_dims_suggested(self, event.verdicts))
        on(events.WorkerReady, lambda event: self.actions.set_available_providers(event.info.providers))
        on(events.Logged, lambda event: self.log.log(event.text, event.details))
        on(events.ErrorRaised, lambda event: self.show_error(event.error))

    # ---- opening ----
    def open_path(self, path: str | Path, export_options: dict[str, Any] | None = None) -> None:
        """Open a model file or a project file and export it right away (a model with
        ``export_options``, when given: the options the user had set, e.g. the exporter)."""
        self.session.open(path, export_options)

    def _on_opened(self, event: events.Opened) -> None:
        self.actions.add_recent_file(str(event.path.resolve()))
        self.setWindowTitle(f"{event.path.name} — {WINDOW_TITLE}")
        onnx_file = event.model_path.suffix == ".onnx"
        self.graphs.show_opening(onnx_file=onnx_file, exporter=profile_for(self.session.workbench.exporter_name))
        self.drawing.previewed_onnx = None
        if onnx_file:
            self.onnx_preview.read(event.model_path)  # drawn before the worker's check arrives
        self.problems.set_problems([])
        self.compare.clear()
        self.template.set_target(None)
        self.inspector.clear()
        self.restore_bar.offer(event.newer_autosave)
        self.actions.sync_from_project()

    def open_changed_copy(self) -> None:
        """Write a copy of the model file with the changes proposed for its capture failures beside
        it, and open that copy with the same options (the original is never changed)."""
        self.session.open_changed_copy()

    def make_room_for(self, dock: QDockWidget, share: float = COMPARE_MAX_SHARE) -> None:
        """A bottom dock with a result grows to be read, never at the cost of the graphs: at most
        ``share`` of the window's height (they keep the rest)."""
        wanted = min(COMPARE_RESULT_HEIGHT, int(share * self.height()))
        if dock.height() < wanted:
            self.resizeDocks([dock], [wanted], Qt.Orientation.Vertical)

    def _on_checkpoint_choice(self, task: str, component: str, dtype: str) -> None:
        """The Checkpoint bar's task, component or dtype changed: export that one (a new task: its first component)."""
        self.session.choose_checkpoint(task, component, dtype)

    def reexport(self, keep_view: bool = True, output: str | None = None) -> SubmittedJob | None:
        return self.session.reexport(keep_view, output)

    # ---- job progress and failures ----
    def _on_job_started(self, submitted: SubmittedJob) -> None:
        if self._reselect_timer.isActive():
            self._reselect_after_analysis()
        if not isinstance(submitted.request, PingRequest):
            self.actions.show_progress(0.0, f"{submitted.job.name}…")

    def _on_job_progress(self, submitted: SubmittedJob, fraction: float, message: str) -> None:
        self.actions.show_progress(fraction, message)

    def _on_job_finished(self, submitted: SubmittedJob, result: Any) -> None:
        self.actions.hide_progress()  # the runner called the session's handler first

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
        elif isinstance(error, UntrustedFileError) and not project.trust:
            if ask_trust(self, Path(project.model_path).name):
                self.session.set_project_field("trust", True)
                self.reexport(keep_view=False)

    def ask_for_inputs(self, why: str = "") -> None:
        """Let the user give (or change) the random example inputs, then export again."""
        project = self.workbench.project
        if project is None:
            return
        specs = ask_input_specs(self, project.input_specs, why=why)
        if specs is not None:
            self.session.set_project_field("input_specs", specs)
            self.reexport(keep_view=False)

    def _on_job_cancelled(self, submitted: SubmittedJob) -> None:
        self.actions.hide_progress()
        self.statusBar().showMessage(f"Cancelled {submitted.job.name}.", STATUS_TIMEOUT_MS)
        self.log.log(f"Cancelled {submitted.job.name}.")

    # ---- an export's outcome ----
    def _on_analysis_arrived(self, event: events.AnalysisArrived) -> None:
        result = event.result
        self.drawing.analysis_arrived(event)
        self.problems.set_problems(result.unsupported, event.fixed, event.outcomes)
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
        if not self._closed:
            self.session.reselect()

    # ---- jobs the actions start ----
    def start_fix_all(self) -> SubmittedJob | None:
        """The `fix --auto` search for every problem, off the UI thread (progress and Cancel as for any job)."""
        return self.session.start_fix_all()

    def start_suggest_dynamic(self) -> SubmittedJob | None:
        """Which input dims could be declared dynamic (one export per dim, off the UI thread)."""
        return self.session.start_suggest_dynamic()

    def start_compare(self, provider: str = "cpu", runs: int = COMPARE_RUNS,
                      precision: str = "strict") -> SubmittedJob | None:
        """Compare torch and ONNX Runtime with the current fixes (off the UI thread)."""
        return self.session.start_compare(provider, runs, precision)

    def start_compare_exporters(self, provider: str = "cpu") -> SubmittedJob | None:
        """Both exporters' exports compared with torch and with each other (off the UI thread)."""
        return start_compare_exporters(self, provider)

    def _on_optimize_changed(self, text: str) -> None:
        self.session.compare_optimize = text

    # ---- selection ----
    def select_node(self, kind: str, node_id: str) -> None:
        self.session.select_node(kind, node_id)

    def _on_node_clicked(self, kind: str, node_id: str) -> None:
        self.session.select_node(kind, node_id, from_pane=True)

    def _on_node_selected(self, event: events.NodeSelected) -> None:
        if not event.from_pane:
            self.graphs.select(event.kind, [event.node_id])  # type: ignore[arg-type]
        if event.source_instance is not None:
            self.problems.select_instance(event.source_instance)

    def _on_selection_cleared(self, event: events.SelectionCleared) -> None:
        self.inspector.clear()
        self.template.set_target(None)

    def _on_node_shown(self, event: events.NodeShown) -> None:
        targets = onnx_ops_in_source(self.template.editor.source()) if event.has_source_node else []
        self.inspector.show_node(event.graph, event.node, event.problem, event.op_info, targets, event.opset,
                                 baked=event.baked, exporter=event.exporter)

    def _on_fix_activated(self, mapping: object) -> None:
        """A fixed kind's row: select one of its nodes, so the Template dock shows the fix's source."""
        node = self.session.node_for_mapping(mapping) if isinstance(mapping, FixMapping) else None
        if node is not None:
            self.select_node("source", node.id)
        elif isinstance(mapping, FixMapping):  # a code change for the capture: no node stands for it
            self.session.show_fix_without_node(mapping)

    # ---- fixes ----
    def apply_mapping(self, mapping: FixMapping) -> None:
        self.session.apply_mapping(mapping)

    # ---- autosave restore ----
    def _on_restore_autosave(self) -> None:
        self.session.restore_autosave()
        self.restore_bar.offer(None)

    def _on_discard_autosave(self) -> None:
        self.session.discard_autosave()
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

