"""Menus, toolbar, status bar and file dialogs of the main window."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QToolBar,
    QWidget,
)

from fixport.core.fixing.fix_script import write_fix_script
from fixport.core.model.export_options import (
    DEFAULT_OPSET,
    EXPORT_TYPES,
    MAX_OPSET,
    MIN_OPSET,
)
from fixport.core.model.model_files import MODEL_FILE_SUFFIXES
from fixport.core.model.project import PROJECT_SUFFIX
from fixport.core.model.results import AnalysisResult
from fixport.core.onnx_io.ort_session import cuda_available
from fixport.gui.example_gallery import ExampleGallery
from fixport.gui.tolerance_dialog import ToleranceDialog

if TYPE_CHECKING:
    from fixport.gui.main_window import MainWindow

MAX_RECENT_FILES = 10
MODEL_FILTER = "Model files (" + " ".join(f"*{s}" for s in MODEL_FILE_SUFFIXES) + f" *{PROJECT_SUFFIX})"
BANNER_STYLE = "background: #ffebee; color: #b71c1c; padding: 4px 8px; border-top: 1px solid #ef9a9a;"


class WindowActions:
    """Creates and owns the window's actions; keeps the toolbar in step with the project."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        self._build_actions()
        self._build_toolbar()
        self._build_menus()
        self._build_status_bar()

    # ---- construction ----
    def _action(self, text: str, slot, shortcut: QKeySequence | str | None = None, tip: str = "") -> QAction:
        action = QAction(text, self.window)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.setStatusTip(tip or text)
        action.triggered.connect(slot)
        return action

    def _build_actions(self) -> None:
        w = self.window
        self.open_model = self._action("&Open model…", self._on_open_model, QKeySequence.StandardKey.Open)
        self.open_example = self._action("Open &example…", self._on_open_example, "Ctrl+E")
        self.open_project = self._action("Open &project…", self._on_open_project, "Ctrl+Shift+O")
        self.save_project = self._action("&Save project", self._on_save_project, QKeySequence.StandardKey.Save)
        self.save_project_as = self._action("Save project &as…", lambda: self._on_save_project(ask=True),
                                            "Ctrl+Shift+S")
        self.export_onnx = self._action("Export &ONNX…", self._on_export_onnx, "Ctrl+Shift+E")
        self.export_script = self._action("Export fix &script…", self._on_export_script)
        self.quit = self._action("&Quit", w.close, QKeySequence.StandardKey.Quit)
        self.reexport = self._action("Re-export", lambda: w.reexport(keep_view=True), "F5",
                                     "Export again with the current fixes (F5)")
        self.compare = self._action("Compare", self._on_compare, "F6", "Compare torch and ONNX Runtime outputs (F6)")
        self.cancel = self._action("Cancel", w.runner.cancel, "Esc", "Stop the running export or comparison")
        self.cancel.setEnabled(False)
        self.tolerances = self._action("Tolerances…", self._on_tolerances, tip="Comparison tolerances per dtype")
        self.inputs = self._action("Example inputs…", lambda: w.ask_for_inputs(),
                                   tip="Random example inputs: NAME=DIMS[:DTYPE]")
        self.find = self._action("Find node…", self._on_find, QKeySequence.StandardKey.Find)
        self.fit = self._action("Fit graphs to view", self._on_fit, "Ctrl+0")

    def _build_toolbar(self) -> None:
        bar = QToolBar("Main")
        bar.setObjectName("MainToolBar")
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.window.addToolBar(bar)
        bar.addAction(self.open_model)
        bar.addAction(self.open_example)
        bar.addAction(self.save_project)
        bar.addSeparator()
        bar.addWidget(QLabel(" Opset "))
        self.opset = QSpinBox()
        self.opset.setRange(MIN_OPSET, MAX_OPSET)
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
        self.provider.addItems(["CPU", "CUDA"])
        available, why = cuda_available()
        if not available:
            self.provider.model().item(1).setEnabled(False)
            self.provider.setItemData(1, why, Qt.ItemDataRole.ToolTipRole)
            self.provider.setToolTip(why)
        bar.addWidget(self.provider)
        bar.addSeparator()
        bar.addAction(self.reexport)
        bar.addAction(self.compare)
        bar.addAction(self.cancel)
        bar.addAction(self.tolerances)

    def _build_menus(self) -> None:
        menus = self.window.menuBar()
        file_menu = menus.addMenu("&File")
        for action in (self.open_model, self.open_example, self.open_project):
            file_menu.addAction(action)
        self.recent_menu = file_menu.addMenu("Open &recent")
        file_menu.addSeparator()
        for action in (self.save_project, self.save_project_as, self.export_onnx, self.export_script):
            file_menu.addAction(action)
        file_menu.addSeparator()
        file_menu.addAction(self.quit)
        view_menu = menus.addMenu("&View")
        view_menu.addAction(self.find)
        view_menu.addAction(self.fit)
        view_menu.addSeparator()
        for dock in (self.window.problems, self.window.inspector, self.window.template, self.window.compare,
                     self.window.log):
            view_menu.addAction(dock.toggleViewAction())
        run_menu = menus.addMenu("&Run")
        for action in (self.reexport, self.compare, self.cancel, self.tolerances, self.inputs):
            run_menu.addAction(action)
        self._refresh_recent_menu()

    def _build_status_bar(self) -> None:
        status = self.window.statusBar()
        self.banner = QLabel()
        self.banner.setStyleSheet(BANNER_STYLE)
        self.banner.setWordWrap(True)
        self.banner.hide()
        self.progress = QProgressBar()
        self.progress.setRange(0, 100)
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(True)
        self.progress.hide()
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.window.runner.cancel)
        self.cancel_button.hide()
        status.addPermanentWidget(self.progress)
        status.addPermanentWidget(self.cancel_button)
        self.window.centralWidget().layout().addWidget(self.banner)

    # ---- state sync ----
    def set_busy(self, busy: bool) -> None:
        self.cancel.setEnabled(busy)
        self.cancel_button.setVisible(busy)

    def show_progress(self, fraction: float, message: str) -> None:
        self.progress.show()
        self.progress.setValue(int(fraction * 100))
        self.progress.setFormat(f"{message} %p%" if message else "%p%")
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
        self._set_quietly(self.opset, project.export_options.get("opset"))
        self._set_quietly(self.export_type, project.export_options.get("operator_export_type", "ONNX"))

    def sync_from_analysis(self, result: AnalysisResult) -> None:
        self.banner.hide()
        self._set_quietly(self.opset, result.options.opset)
        self._set_quietly(self.export_type, result.options.operator_export_type)

    @staticmethod
    def _set_quietly(widget: QWidget, value) -> None:
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
            self.window.workbench.set_export_option("opset", value)
            self.window.reexport(keep_view=True)

    def _on_export_type_changed(self, value: str) -> None:
        if self.window.workbench.project is not None:
            self.window.workbench.set_export_option("operator_export_type", value)
            self.window.reexport(keep_view=True)

    def _on_open_model(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Open model", "", MODEL_FILTER + ";;All files (*)")
        if path:
            self.window.open_path(path)

    def _on_open_example(self) -> None:
        gallery = ExampleGallery(self.window)
        if gallery.exec() and gallery.chosen_path:
            self.window.open_path(gallery.chosen_path)

    def _on_open_project(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Open project", "", f"Fixport projects (*{PROJECT_SUFFIX})")
        if path:
            self.window.open_path(path)

    def _on_save_project(self, ask: bool = False) -> None:
        workbench = self.window.workbench
        if workbench.project is None:
            return
        target = workbench.project_path
        if ask or target is None:
            suggestion = str(Path(workbench.project.model_path).with_suffix("").name) + PROJECT_SUFFIX
            chosen, _ = QFileDialog.getSaveFileName(self.window, "Save project", suggestion,
                                                    f"Fixport projects (*{PROJECT_SUFFIX})")
            if not chosen:
                return
            target = Path(chosen)
        saved = workbench.save(target)
        self.add_recent_file(str(saved))
        self.window.log.log(f"Saved project {saved}")
        self.window.statusBar().showMessage(f"Saved {saved}", 5000)

    def _on_export_onnx(self) -> None:
        if self.window.workbench.project is None:
            return
        suggestion = Path(self.window.workbench.project.model_path).with_suffix(".onnx").name
        path, _ = QFileDialog.getSaveFileName(self.window, "Export ONNX", suggestion, "ONNX models (*.onnx)")
        if path:
            self.window.reexport(keep_view=True, output=path)

    def _on_export_script(self) -> None:
        workbench = self.window.workbench
        if workbench.project is None:
            return
        path, _ = QFileDialog.getSaveFileName(self.window, "Export fix script", "fix_export.py", "Python (*.py)")
        if path:
            write_fix_script(workbench.project, path, output_onnx=str(Path(path).with_suffix(".onnx")))
            self.window.log.log(f"Wrote fix script {path}")
            self.window.statusBar().showMessage(f"Wrote fix script {path}", 5000)

    def _on_compare(self) -> None:
        self.window.start_compare(self.provider.currentText().lower())

    def _on_tolerances(self) -> None:
        dialog = ToleranceDialog(self.window.compare_tolerances, self.window)
        if dialog.exec():
            self.window.compare_tolerances = dialog.values()

    def _on_find(self) -> None:
        self.window.graphs.pane("onnx" if self.window.selected and self.window.selected[0] == "onnx"
                                else "torchscript").focus_search()

    def _on_fit(self) -> None:
        for kind in ("torchscript", "onnx"):
            self.window.graphs.pane(kind).fit_view()

    # ---- recent files ----
    def add_recent_file(self, path: str) -> None:
        recent = [p for p in self._recent_files() if p != path]
        recent.insert(0, path)
        self.window.settings.setValue("recent_files", recent[:MAX_RECENT_FILES])
        self._refresh_recent_menu()

    def _recent_files(self) -> list[str]:
        value = self.window.settings.value("recent_files", [])
        return [value] if isinstance(value, str) else list(value or [])

    def _refresh_recent_menu(self) -> None:
        self.recent_menu.clear()
        for path in self._recent_files():
            action = self.recent_menu.addAction(path)
            action.triggered.connect(lambda _checked=False, p=path: self.window.open_path(p))
        self.recent_menu.setEnabled(bool(self._recent_files()))
