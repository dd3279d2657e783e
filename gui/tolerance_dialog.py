"""The tolerance dialog: the per-dtype table in force, and overrides for every dtype."""
from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from fixport.core.foundation.comparison import DEFAULT_TOLERANCES

DECIMALS = 12


class ToleranceDialog(QDialog):
    def __init__(self, current: dict[str, float | None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Comparison tolerances")
        layout = QVBoxLayout(self)
        table = "".join(f"<tr><td>{dtype}</td><td>{rtol:g}</td><td>{atol:g}</td></tr>"
                        for dtype, (rtol, atol) in DEFAULT_TOLERANCES.items())
        layout.addWidget(QLabel("<b>Default per dtype</b> (an element passes when "
                                "|onnx − torch| ≤ atol + rtol·|torch|):"
                                "<table cellpadding=3><tr><th>dtype</th><th>rtol</th><th>atol</th></tr>"
                                f"{table}</table>"))
        form = QFormLayout()
        self.override = QCheckBox("Use these for every dtype")
        self.override.setChecked(current.get("rtol") is not None or current.get("atol") is not None)
        self.rtol = self._spin(current.get("rtol") if current.get("rtol") is not None else 1e-3)
        self.atol = self._spin(current.get("atol") if current.get("atol") is not None else 1e-5)
        form.addRow(self.override)
        form.addRow("rtol", self.rtol)
        form.addRow("atol", self.atol)
        layout.addLayout(form)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    @staticmethod
    def _spin(value: float) -> QDoubleSpinBox:
        spin = QDoubleSpinBox()
        spin.setDecimals(DECIMALS)
        spin.setRange(0.0, 1e6)
        spin.setValue(value)
        return spin

    def values(self) -> dict[str, float | None]:
        if not self.override.isChecked():
            return {"rtol": None, "atol": None}
        return {"rtol": self.rtol.value(), "atol": self.atol.value()}
