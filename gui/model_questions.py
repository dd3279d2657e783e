"""Questions the window asks when a model cannot open as it is: example inputs for a file that
carries none (TorchScript archives, pickled modules), and trust for a pickled file."""
from __future__ import annotations

from PySide6.QtWidgets import QInputDialog, QMessageBox, QWidget

from fixport.core.foundation.errors import InputSpecError
from fixport.core.project.inputs import parse_input_spec

DEFAULT_INPUT_SPEC = "x=1x3x224x224:float32"
TRUST_QUESTION = ("{name} is a pickled file (torch.save). Unpickling runs code stored in the file.\n\n"
                  "Open it only if you trust where it came from. Trust this file and open it?")


def ask_input_specs(parent: QWidget, current: list[str], names: str = "", why: str = "") -> list[str] | None:
    """Input specifications typed by the user (None when cancelled); re-asks on a typo. ``why``: the
    message that made the window ask (which input the model lacks)."""
    text = " ".join(current) or DEFAULT_INPUT_SPEC
    hint = f" (the model's inputs: {names})" if names else ""
    prompt = (f"{why}\n\n" if why else "") + (
        f"Random example inputs{hint}, as NAME=DIMS[:DTYPE] separated by spaces\n"
        "(by forward()'s parameter names; a parameter left out keeps its default):")
    while True:
        text, accepted = QInputDialog.getText(parent, "Example inputs", prompt, text=text)
        if not accepted:
            return None
        specs = text.split()
        try:
            for spec in specs:
                parse_input_spec(spec)
        except InputSpecError as error:
            QMessageBox.warning(parent, "Example inputs", error.user_text())
            continue
        return specs


def ask_trust(parent: QWidget, file_name: str) -> bool:
    answer = QMessageBox.question(parent, "Trust this file?", TRUST_QUESTION.format(name=file_name))
    return answer == QMessageBox.StandardButton.Yes
