"""The toolbar a transformers checkpoint folder brings: its task (what ``--task`` sets), which of its
components (a decoder's prefill and decode, ...) the panes show, as ``--component`` picks it, and the
dtype its weights are exported in (``--dtype``)."""
from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QComboBox, QLabel, QToolBar, QWidget

from fixport.core.records.results import AnalysisResult
from fixport.core.words.vocabulary import AUTO_DTYPE, CHECKPOINT_DTYPES, CHECKPOINT_TASKS

TASK_TIP = "The checkpoint's task (from its config.json's architectures unless you choose one)"
COMPONENT_TIP = ("Each component is one export, with its own graphs, problems, fixes and comparison "
                 "(transformers' exporter splits a generative model into prefill and decode)")
DTYPE_TIP = ("The dtype the weights are exported in: auto keeps the checkpoint's own (its config.json's dtype), "
             "as transformers' exporter does")


class CheckpointBar(QToolBar):
    """Hidden until a checkpoint folder is analysed; a change calls ``on_change(task, component, dtype)``."""

    def __init__(self, on_change: Callable[[str, str, str], None], parent: QWidget | None = None) -> None:
        super().__init__("Checkpoint", parent)
        self.setObjectName("CheckpointToolBar")
        self._on_change = on_change
        self.addWidget(QLabel(" Task "))
        self.task = QComboBox()
        self.task.addItems(CHECKPOINT_TASKS)
        self.task.setToolTip(TASK_TIP)
        self.addWidget(self.task)
        self.addWidget(QLabel(" Component "))
        self.component = QComboBox()
        self.component.setToolTip(COMPONENT_TIP)
        self.addWidget(self.component)
        self.addWidget(QLabel(" Dtype "))
        self.dtype = QComboBox()
        self.dtype.addItems(CHECKPOINT_DTYPES)
        self.dtype.setToolTip(DTYPE_TIP)
        self.addWidget(self.dtype)
        self.exported = QLabel("")  # the dtype exported, and how each ONNX Runtime provider runs it (tooltip)
        self.addWidget(self.exported)
        self.task.activated.connect(lambda _index: self._changed(component=""))
        self.component.activated.connect(lambda _index: self._changed(component=self.component.currentText()))
        self.dtype.activated.connect(lambda _index: self._changed(component=self.component.currentText()))
        self.hide()

    def show_analysis(self, result: AnalysisResult) -> None:
        """The analysed checkpoint's task, components and dtype (hidden for any other model)."""
        if not result.task:
            self.hide()
            return
        for box in (self.task, self.component, self.dtype):
            box.blockSignals(True)
        self.task.setCurrentText(result.task)
        self.component.clear()
        self.component.addItems(result.components or [result.component])
        self.component.setCurrentText(result.component)
        exported = result.export_dtype
        self.dtype.setCurrentText(exported.chosen if exported and exported.chosen else AUTO_DTYPE)
        self.exported.setText(f" exported in {exported.dtype} " if exported else "")
        self.exported.setToolTip("\n".join(exported.lines()) if exported else "")
        for box in (self.task, self.component, self.dtype):
            box.blockSignals(False)
        self.show()

    def _changed(self, component: str) -> None:
        self._on_change(self.task.currentText(), component, self.dtype.currentText())
