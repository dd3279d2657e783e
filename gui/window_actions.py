"""The window's actions as a table of records, and the chrome around them: toolbar, menus, status bar.

Each :class:`Action` names a module-level callback that receives the window (as napari's
actions do), so this module needs nothing from the window's module: it sees the window only
through the small :class:`ActionWindow` protocol.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QLabel,
    QMainWindow,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QToolBar,
    QWidget,
)

from fixport.core.exporters.profiles import PROFILES, profile_for
from fixport.core.fixing.fix_script import write_fix_script
from fixport.core.onnx_io.cuda_precision import PRECISION_HELP, PRECISION_MODES
from fixport.core.onnx_io.runtime_check import cuda_unavailable_reason
from fixport.core.project.dynamic_shapes import dynamic_axes_from_shapes, shapes_argument
from fixport.core.project.export_options import EXPORT_TYPES
from fixport.core.project.model_files import MODEL_FILE_SUFFIXES
from fixport.core.project.project import PROJECT_SUFFIX
from fixport.core.records.results import AnalysisResult
from fixport.core.words.runtimes import OPENVINO_PRECISION_HELP, openvino_unavailable_reason
from fixport.core.words.vocabulary import DEFAULT_EXPORTER, DEFAULT_OPSET, EXPORTERS
from fixport.gui.dynamic_shapes_dialog import ask_dynamic_shapes
from fixport.gui.example_gallery import ExampleGallery
from fixport.gui.shapes_dialog import ask_shapes_to_check
from fixport.gui.sweep_results import open_sweep_results
from fixport.gui.tolerance_dialog import ToleranceDialog

# The Provider box: its text, lower-cased, is the provider value the compare jobs take.
PROVIDER_CHOICES = ("CPU", "CUDA", "OpenVINO")
CUDA_CHOICE, OPENVINO_CHOICE = 1, 2

if TYPE_CHECKING:
    from fixport.core.session.session import Session
    from fixport.core.session.workbench import Workbench
    from fixport.gui.graph_panes import SideBySideGraphs
    from fixport.gui.job_runner import JobRunner
    from fixport.gui.log_dock import LogDock

MAX_RECENT_FILES = 10
MODEL_FILTER = "Model files (" + " ".join(f"*{s}" for s in MODEL_FILE_SUFFIXES) + f" *{PROJECT_SUFFIX})"
PROJECT_FILTER = f"Fixport projects (*{PROJECT_SUFFIX})"
BANNER_STYLE = "background: #ffebee; color: #b71c1c; padding: 4px 8px; border-top: 1px solid #ef9a9a;"
STATUS_MESSAGE_MS = 5000
# A job shorter than this (a re-export after Apply) never flashes the progress bar and Cancel:
# showing them re-lays out the status bar while the worker runs.
PROGRESS_DELAY_MS = 150
PROGRESS_WIDTH = 360  # px: room for a stage name ("exporting the whole model with the fixes")


class ActionWindow(Protocol):
    """What the actions use of the main window."""

    workbench: Workbench
    session: Session  # every edit goes through it: a ProjectEdited event, one autosave
    runner: JobRunner
    settings: QSettings
    log: LogDock
    graphs: SideBySideGraphs
    actions: WindowActions
    selected: tuple[str, str] | None
    compare_tolerances: dict[str, float | None]

    def open_path(self, path: str | Path, export_options: dict[str, Any] | None = None) -> None: ...
    def show_error(self, error: Exception) -> None: ...
    def reexport(self, keep_view: bool = True, output: str | None = None) -> Any: ...
    def start_compare(self, provider: str = "cpu", precision: str = "strict") -> Any: ...
    def start_compare_exporters(self, provider: str = "cpu") -> Any: ...
    def start_fix_all(self) -> Any: ...
    def start_suggest_dynamic(self) -> Any: ...
    def ask_for_inputs(self) -> None: ...
    def close(self) -> bool: ...
    def statusBar(self) -> Any: ...  # Qt's QMainWindow.statusBar


@dataclass(frozen=True)
class Action:
    """One user command: shown in menus and the toolbar, run with the window."""

    id: str
    title: str
    callback: Callable[[ActionWindow], object]
    shortcut: QKeySequence.StandardKey | str | None = None
    tip: str = ""


# ---- callbacks ----
def _dialog_parent(window: ActionWindow) -> QWidget:
    return cast(QWidget, window)  # the window is a QMainWindow


def open_model(window: ActionWindow) -> None:
    path, _ = QFileDialog.getOpenFileName(_dialog_parent(window), "Open model", "", MODEL_FILTER + ";;All files (*)")
    if path:
        window.open_path(path)


def open_checkpoint(window: ActionWindow) -> None:
    """File > Open checkpoint folder…: a save_pretrained folder or a hub-cache snapshot (config.json and weights)."""
    path = QFileDialog.getExistingDirectory(_dialog_parent(window), "Open checkpoint folder (with config.json)")
    if path:
        window.open_path(path)


def open_example(window: ActionWindow) -> None:
    gallery = ExampleGallery(_dialog_parent(window))
    if gallery.exec() and gallery.chosen_path:
        window.open_path(gallery.chosen_path)


def open_project(window: ActionWindow) -> None:
    path, _ = QFileDialog.getOpenFileName(_dialog_parent(window), "Open project", "", PROJECT_FILTER)
    if path:
        window.open_path(path)


def save_project(window: ActionWindow, ask: bool = False) -> None:
    workbench = window.workbench
    if workbench.project is None:
        return
    target = workbench.project_path
    if ask or target is None:
        suggestion = str(Path(workbench.project.model_path).with_suffix("").name) + PROJECT_SUFFIX
        chosen, _ = QFileDialog.getSaveFileName(_dialog_parent(window), "Save project", suggestion, PROJECT_FILTER)
        if not chosen:
            return
        target = Path(chosen)
    saved = window.session.save(target)
    window.actions.add_recent_file(str(saved))
    window.statusBar().showMessage(f"Saved {saved}", STATUS_MESSAGE_MS)


def save_project_as(window: ActionWindow) -> None:
    save_project(window, ask=True)


def export_onnx(window: ActionWindow) -> None:
    if window.workbench.project is None:
        return
    suggestion = Path(window.workbench.project.model_path).with_suffix(".onnx").name
    path, _ = QFileDialog.getSaveFileName(_dialog_parent(window), "Export ONNX", suggestion, "ONNX models (*.onnx)")
    if path:
        window.reexport(keep_view=True, output=path)


def export_script(window: ActionWindow) -> None:
    workbench = window.workbench
    if workbench.project is None:
        return
    path, _ = QFileDialog.getSaveFileName(_dialog_parent(window), "Export fix script", "fix_export.py",
                                          "Python (*.py)")
    if path:
        write_fix_script(workbench.project, path, output_onnx=str(Path(path).with_suffix(".onnx")))
        window.log.log(f"Wrote fix script {path}")
        window.statusBar().showMessage(f"Wrote fix script {path}", STATUS_MESSAGE_MS)


def quit_window(window: ActionWindow) -> None:
    window.close()


def reexport(window: ActionWindow) -> None:
    window.reexport(keep_view=True)


def compare(window: ActionWindow) -> None:
    actions = window.actions
    window.start_compare(actions.provider.currentText().lower(), precision=actions.precision.currentText())


def compare_exporters(window: ActionWindow) -> None:
    window.start_compare_exporters(window.actions.provider.currentText().lower())


def fix_all(window: ActionWindow) -> None:
    window.start_fix_all()


def suggest_dynamic(window: ActionWindow) -> None:
    window.start_suggest_dynamic()


def cancel(window: ActionWindow) -> None:
    window.runner.cancel()


def edit_tolerances(window: ActionWindow) -> None:
    dialog = ToleranceDialog(window.compare_tolerances, _dialog_parent(window))
    if dialog.exec():
        window.compare_tolerances = dialog.values()


def edit_inputs(window: ActionWindow) -> None:
    window.ask_for_inputs()


def edit_shapes(window: ActionWindow) -> None:
    """Run > Shapes to check…: ask for the shape sets, then set them and analyse again."""
    project, analysis = window.workbench.project, window.workbench.analysis
    if project is None:
        return
    lines = ask_shapes_to_check(_dialog_parent(window), project.shapes_to_check,
                                analysis.input_names if analysis else [], analysis.input_shapes if analysis else [])
    if lines is not None:
        set_shapes_to_check(window, lines)


def set_shapes_to_check(window: ActionWindow, lines: list[str]) -> None:
    """The project's shapes to check (one input set a line; none: the derived sizes), then a re-analysis."""
    window.session.set_project_field("shapes_to_check", list(lines))
    checked = "; ".join(lines) if lines else "the sizes derived from the dynamic axes"
    window.log.log(f"Shapes to check: {checked}; analysing again.")
    window.reexport(keep_view=True)


def edit_dynamic_shapes(window: ActionWindow) -> None:
    """Run > Dynamic shapes…: ask which dims stay dynamic, then set them and analyse again."""
    project, analysis = window.workbench.project, window.workbench.analysis
    if project is None:
        return
    if analysis is None or not analysis.input_names:
        window.statusBar().showMessage("Dynamic shapes: open a model and let it analyse first; its inputs are "
                                       "named then.", STATUS_MESSAGE_MS)
        return
    proposed = analysis.proposed_dynamic_shapes
    axes = ask_dynamic_shapes(_dialog_parent(window), dict(project.export_options.get("dynamic_axes") or {}),
                              analysis.input_names, analysis.input_shapes,
                              dynamic_axes_from_shapes(proposed) if proposed is not None else None)
    if axes is not None:
        set_dynamic_shapes(window, axes)


def set_dynamic_shapes(window: ActionWindow, axes: dict[str, dict[int, str]]) -> None:
    """The project's dynamic dims by input name (none: every input keeps its traced shape), then a re-analysis."""
    assert window.workbench.project is not None
    options = dict(window.workbench.project.export_options)
    if axes:
        options["dynamic_axes"] = {name: dict(dims) for name, dims in axes.items()}
    else:
        options.pop("dynamic_axes", None)
    window.session.set_project_field("export_options", options, "dynamic shapes")
    declared = shapes_argument(axes) if axes else "none (traced shapes)"
    window.log.log(f"Dynamic shapes: {declared}; exporting again.")
    window.reexport(keep_view=True)


def find_node(window: ActionWindow) -> None:
    on_onnx = window.selected is not None and window.selected[0] == "onnx"
    window.graphs.pane("onnx" if on_onnx else "source").focus_search()


def fit_graphs(window: ActionWindow) -> None:
    for kind in ("source", "onnx"):
        window.graphs.pane(kind).fit_view()


ACTIONS: tuple[Action, ...] = (
    Action("open_model", "&Open model…", open_model, QKeySequence.StandardKey.Open),
    Action("open_checkpoint", "Open &checkpoint folder…", open_checkpoint,
           tip="A transformers checkpoint folder (save_pretrained, or a snapshot in the hub cache)"),
    Action("open_example", "Open &example…", open_example, "Ctrl+E"),
    Action("open_project", "Open &project…", open_project, "Ctrl+Shift+O"),
    Action("open_sweep", "Open s&weep results…", open_sweep_results,
           tip="A sweep's rows (python main.py sweep ... --json FILE); double-click one to open its model"),
    Action("save_project", "&Save project", save_project, QKeySequence.StandardKey.Save),
    Action("save_project_as", "Save project &as…", save_project_as, "Ctrl+Shift+S"),
    Action("export_onnx", "Export &ONNX…", export_onnx, "Ctrl+Shift+E"),
    Action("export_script", "Export fix &script…", export_script),
    Action("quit", "&Quit", quit_window, QKeySequence.StandardKey.Quit),
    Action("reexport", "Re-export", reexport, "F5", "Export again with the current fixes (F5)"),
    Action("compare", "Compare", compare, "F6", "Compare torch and ONNX Runtime outputs (F6)"),
    Action("compare_exporters", "Compare exporters", compare_exporters, "Shift+F6",
           f"Export with both exporters ({', '.join(EXPORTERS)}), each with what it needs, and compare them with "
           "torch and with each other (Shift+F6)"),
    Action("fix_all", "Fix all", fix_all, "Ctrl+Shift+F",
           "Search a fix for every problem, as `fix --auto` does, and apply what works"),
    Action("suggest_dynamic", "Suggest dynamic dims", suggest_dynamic,
           tip="Export with each input dim dynamic in turn, check it at other sizes, and say which dims "
               "can be declared dynamic and what blocks the others"),
    Action("cancel", "Cancel", cancel, "Esc", "Stop the running export or comparison"),
    Action("tolerances", "Tolerances…", edit_tolerances, tip="Comparison tolerances per dtype"),
    Action("inputs", "Example inputs…", edit_inputs, tip="Random example inputs: NAME=DIMS[:DTYPE]"),
    Action("shapes", "Shapes to check…", edit_shapes,
           tip="Input shapes to also run torch and ONNX Runtime at, one set a line: NAME=DIMS[,NAME=DIMS]"),
    Action("dynamic_shapes", "Dynamic shapes…", edit_dynamic_shapes,
           tip="Which dims of each input the export keeps dynamic (torch.export's dynamic_shapes)"),
    Action("find", "Find node…", find_node, QKeySequence.StandardKey.Find),
    Action("fit", "Fit graphs to view", fit_graphs, "Ctrl+0"),
)
TOOLBAR_ACTIONS = ("open_model", "open_example", "save_project")
RUN_TOOLBAR_ACTIONS = ("reexport", "fix_all", "compare", "cancel", "tolerances")
MENUS: tuple[tuple[str, tuple[str | None, ...]], ...] = (  # None: a separator; "recent": the recent-files menu
    ("&File", ("open_model", "open_checkpoint", "open_example", "open_project", "open_sweep", "recent", None,
               "save_project", "save_project_as", "export_onnx", "export_script", None, "quit")),
    ("&View", ("find", "fit")),
    ("&Run", ("reexport", "fix_all", "compare", "compare_exporters", "cancel", "tolerances", "inputs", "dynamic_shapes",
              "shapes", None,
              "suggest_dynamic")),
)


class WindowActions:
    """Builds the window's QActions from :data:`ACTIONS`, its toolbar, menus and status bar,
    and keeps the toolbar in step with the project. ``actions["compare"]`` is one QAction."""

    def __init__(self, window: ActionWindow, docks: list[Any]) -> None:
        self.window = window
        self._qt_window = cast(QMainWindow, window)
        self._actions = {action.id: self._make_action(action) for action in ACTIONS}
        self._actions["cancel"].setEnabled(False)
        self._build_toolbar()
        self._build_menus(docks)
        self._build_status_bar()

    def __getitem__(self, action_id: str) -> QAction:
        return self._actions[action_id]

    # ---- construction ----
    def _make_action(self, action: Action) -> QAction:
        qt_action = QAction(action.title, self._qt_window)
        if action.shortcut is not None:
            qt_action.setShortcut(QKeySequence(action.shortcut))
        qt_action.setStatusTip(action.tip or action.title.replace("&", ""))
        qt_action.triggered.connect(lambda _checked=False, callback=action.callback: callback(self.window))
        return qt_action

    def _build_toolbar(self) -> None:
        bar = QToolBar("Main")
        bar.setObjectName("MainToolBar")
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self._qt_window.addToolBar(bar)
        for action_id in TOOLBAR_ACTIONS:
            bar.addAction(self[action_id])
        bar.addSeparator()
        bar.addWidget(QLabel(" Exporter "))
        self.exporter = QComboBox()
        self.exporter.addItems(EXPORTERS)
        self.exporter.setToolTip("\n".join(f"{profile.name}: {profile.title}" for profile in PROFILES.values()))
        self.exporter.currentTextChanged.connect(self._on_exporter_changed)
        bar.addWidget(self.exporter)
        bar.addWidget(QLabel(" Opset "))
        self.opset = QSpinBox()
        self.opset.setRange(*profile_for(DEFAULT_EXPORTER).opsets)
        self.opset.setValue(DEFAULT_OPSET)
        self.opset.setToolTip("ONNX opset to export at")
        self.opset.valueChanged.connect(self._on_opset_changed)
        bar.addWidget(self.opset)
        bar.addWidget(QLabel(" Mode "))
        self.export_type = QComboBox()
        self.export_type.addItems(EXPORT_TYPES)
        self.export_type.setToolTip("operator_export_type: ONNX, or fall back to ATen / pass through")
        self.export_type.currentTextChanged.connect(self._on_export_type_changed)
        bar.addWidget(self.export_type)
        bar.addWidget(QLabel(" Provider "))
        self.provider = QComboBox()
        self.provider.addItems(PROVIDER_CHOICES)  # CPU and CUDA in ONNX Runtime; OpenVINO, a second runtime
        self.set_available_providers(None)  # known once the worker reports (the window loads no onnxruntime)
        bar.addWidget(self.provider)
        self.precision = QComboBox()  # strict / deployed: what the CUDA provider may trade (cuda_precision.py)
        self.precision.addItems(PRECISION_MODES)
        for index, mode in enumerate(PRECISION_MODES):
            self.precision.setItemData(index, PRECISION_HELP[mode], Qt.ItemDataRole.ToolTipRole)
        self.precision.setToolTip("Precision on CUDA: " + "; ".join(f"{m}: {t}" for m, t in PRECISION_HELP.items())
                                  + f"; {OPENVINO_PRECISION_HELP}")
        bar.addWidget(self.precision)
        bar.addSeparator()
        for action_id in RUN_TOOLBAR_ACTIONS:
            bar.addAction(self[action_id])

    def set_available_providers(self, providers: list[str] | None) -> None:
        """Enable CUDA in the provider choice when ONNX Runtime (in the worker) has it, OpenVINO when it
        is installed; say why not."""
        why = "Checking ONNX Runtime's providers…" if providers is None else cuda_unavailable_reason(providers)
        self.provider.model().item(CUDA_CHOICE).setEnabled(not why)
        self.provider.setItemData(CUDA_CHOICE, why or None, Qt.ItemDataRole.ToolTipRole)
        self.provider.setToolTip(why or "Where Compare runs the export: ONNX Runtime's CPU or CUDA provider, or "
                                        "OpenVINO (CPU)")
        no_openvino = openvino_unavailable_reason()  # the window's environment is the worker's
        self.provider.model().item(OPENVINO_CHOICE).setEnabled(not no_openvino)
        self.provider.setItemData(OPENVINO_CHOICE, no_openvino or OPENVINO_PRECISION_HELP, Qt.ItemDataRole.ToolTipRole)

    def _build_menus(self, docks: list[Any]) -> None:
        menus = self._qt_window.menuBar()
        for title, entries in MENUS:
            menu = menus.addMenu(title)
            for entry in entries:
                if entry is None:
                    menu.addSeparator()
                elif entry == "recent":
                    self.recent_menu = menu.addMenu("Open &recent")
                else:
                    menu.addAction(self[entry])
            if title == "&View":
                menu.addSeparator()
                for dock in docks:
                    menu.addAction(dock.toggleViewAction())
        self._refresh_recent_menu()

    def _build_status_bar(self) -> None:
        status = self._qt_window.statusBar()
        self.banner = QLabel()
        self.banner.setStyleSheet(BANNER_STYLE)
        self.banner.setWordWrap(True)
        self.banner.hide()
        self.progress = QProgressBar()
        self.progress.setRange(0, 100)
        self.progress.setFixedWidth(PROGRESS_WIDTH)
        self.progress.setTextVisible(True)
        self.progress.hide()
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(lambda: cancel(self.window))
        self.cancel_button.hide()
        status.addPermanentWidget(self.progress)
        status.addPermanentWidget(self.cancel_button)
        self._latest_progress: tuple[float, str] = (0.0, "")
        self._reveal_timer = QTimer(self._qt_window)
        self._reveal_timer.setSingleShot(True)
        self._reveal_timer.timeout.connect(self._reveal_progress)
        self._qt_window.centralWidget().layout().addWidget(self.banner)

    # ---- state sync ----
    def set_busy(self, busy: bool) -> None:
        self["cancel"].setEnabled(busy)
        if not busy:
            self._reveal_timer.stop()
            self.cancel_button.hide()
        elif not self.cancel_button.isVisible() and not self._reveal_timer.isActive():
            self._reveal_timer.start(PROGRESS_DELAY_MS)

    def show_progress(self, fraction: float, message: str) -> None:
        """The job's progress; the bar and Cancel appear once the job has run PROGRESS_DELAY_MS."""
        self._latest_progress = (fraction, message)
        if not self.progress.isVisible():
            if not self._reveal_timer.isActive():
                self._reveal_timer.start(PROGRESS_DELAY_MS)
            return
        text = self._progress_text(message)
        value = int(fraction * 100)
        if value == self.progress.value() and text == self.progress.format():
            return  # each repaint of the status bar costs the UI thread about a millisecond
        self.progress.setValue(value)
        self.progress.setFormat(text)
        self.progress.setToolTip(message)

    def _progress_text(self, message: str) -> str:
        """The stage's name, shortened with an ellipsis to fit the bar beside its percentage."""
        if not message:
            return "%p%"
        metrics = self.progress.fontMetrics()
        room = PROGRESS_WIDTH - metrics.horizontalAdvance(" 100%") - 16
        return metrics.elidedText(message, Qt.TextElideMode.ElideRight, room) + " %p%"

    def _reveal_progress(self) -> None:
        if not self.window.runner.busy:
            return
        fraction, message = self._latest_progress
        self.progress.setValue(int(fraction * 100))
        self.progress.setFormat(self._progress_text(message))
        self.progress.setToolTip(message)
        self.progress.show()
        self.cancel_button.show()

    def hide_progress(self) -> None:
        self.progress.hide()
        self.cancel_button.setVisible(self.window.runner.busy)

    def show_error_banner(self, text: str) -> None:
        self.banner.setText("⚠ " + text)
        self.banner.show()

    def sync_from_project(self) -> None:
        project = self.window.workbench.project
        if project is None:
            return
        self._set_exporter_quietly(self.window.workbench.exporter_name or DEFAULT_EXPORTER)  # the file's own too
        self._set_quietly(self.opset, self.window.workbench.opset)
        self._set_quietly(self.export_type, project.export_options.get("operator_export_type", "ONNX"))

    def sync_from_analysis(self, result: AnalysisResult) -> None:
        self.banner.hide()
        self._set_exporter_quietly(result.options.exporter)
        self._set_quietly(self.opset, result.options.opset)
        self._set_quietly(self.export_type, result.options.operator_export_type)

    def _set_exporter_quietly(self, name: str) -> None:
        """The exporter box and the opset range it takes (before the opset is set in it)."""
        self._set_quietly(self.exporter, name)
        self.opset.blockSignals(True)
        self.opset.setRange(*profile_for(self.exporter.currentText()).opsets)
        self.opset.blockSignals(False)

    @staticmethod
    def _set_quietly(widget: QWidget, value: Any) -> None:
        if value is None:
            return
        widget.blockSignals(True)
        try:
            widget.setValue(int(value)) if isinstance(widget, QSpinBox) else widget.setCurrentText(str(value))
        finally:
            widget.blockSignals(False)

    # ---- slots ----
    def _on_opset_changed(self, value: int) -> None:
        if self.window.workbench.project is not None:
            self.window.session.set_export_option("opset", value)
            self.window.reexport(keep_view=True)

    def _on_exporter_changed(self, value: str) -> None:
        self.opset.setRange(*profile_for(value).opsets)  # the opset kept if it is in the new range
        if self.window.workbench.project is not None:
            self.window.session.set_export_option("exporter", value)
            self.window.reexport(keep_view=True)

    def _on_export_type_changed(self, value: str) -> None:
        if self.window.workbench.project is not None:
            self.window.session.set_export_option("operator_export_type", value)
            self.window.reexport(keep_view=True)

    # ---- recent files ----
    def add_recent_file(self, path: str) -> None:
        recent = [p for p in self.recent_files() if p != path]
        recent.insert(0, path)
        self.window.settings.setValue("recent_files", recent[:MAX_RECENT_FILES])
        self._refresh_recent_menu()

    def recent_files(self) -> list[str]:
        value = self.window.settings.value("recent_files", [])
        return [value] if isinstance(value, str) else list(value or [])

    def _refresh_recent_menu(self) -> None:
        self.recent_menu.clear()
        for path in self.recent_files():
            action = self.recent_menu.addAction(path)
            action.triggered.connect(lambda _checked=False, p=path: self.window.open_path(p))
        self.recent_menu.setEnabled(bool(self.recent_files()))
