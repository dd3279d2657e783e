"""What a diagnosis finds: one record per node the export cannot handle (no torch import)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from fixport.core.words.vocabulary import ProblemReason, display_kind


@dataclass
class UnsupportedNode:
    """One node the export cannot handle, as shown in the Problems list and in `check --json`."""

    kind: str
    instance: str
    reason: ProblemReason
    message: str
    scope: str
    source: str
    first_supported_opset: int | None = None
    # The opset the exporter that produced this problem advises moving to (its own words, read on the
    # worker side), or None where it advises none (dynamo, or a problem no opset answers).
    opset_advice: int | None = None
    python_op_name: str = ""
    onnx_node: str = ""  # for runtime errors: the ONNX node that failed
    code_change: str = ""  # for capture failures: a unified diff of the model file that answers it
    # for capture failures: the dynamo fix (template source) that makes every such change while the
    # model is captured, where they were tried and hold (core.exporters.capture_change_fix); for a
    # size the TorchScript trace folded: the fix that changes its line while traced (traced_size_changes)
    code_change_fix: str = ""
    decomposed_from: str = ""  # dynamo: the captured op torch.onnx's decomposition made this node from
    complex_inputs: bool = False  # dynamo: the node takes complex tensors (only complex templates fit)
    # for runtime errors: the types ONNX Runtime has no kernel for ("T2=double"), where the exporter
    # promoted them past torch's own (a cast back to torch's dtypes fixes it)
    kernel_gap: str = ""

    @property
    def display_kind(self) -> str:
        return display_kind(self.kind, self.python_op_name)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
