"""The words every room shares: problem reasons, Python-op kinds, opset limits, scopes, instance keys.

One place to spell them, so the exporter, the fixer, the command line and the window agree
(no torch import: the GUI and CLI processes use them too).
"""
from __future__ import annotations

import re
from enum import StrEnum

from fixport.core.foundation.checkpoints.tasks import TASK_AUTO_CLASSES
from fixport.core.foundation.scopes import module_scope

# In a symbolic_rejected message: an op on complex tensors whose symbolic ignores the trailing
# (real, imaginary) axis ONNX carries them with; only a complex-aware template can fix it.
COMPLEX_TENSORS_NOTE = "on complex tensors"
DEFAULT_OPSET = 17
EXPORTERS = ("torchscript", "dynamo")  # torch.onnx.export(dynamo=False) and (dynamo=True)
DEFAULT_EXPORTER = "torchscript"
# A checkpoint folder's tasks, named as transformers' pipelines and optimum name them: the keys of
# the foundation's table, which says which auto class loads each.
CHECKPOINT_TASKS = tuple(TASK_AUTO_CLASSES)
# The dtype a checkpoint folder is exported in (--dtype): auto keeps the checkpoint's own (its config's
# dtype/torch_dtype), as transformers' exporter does.
AUTO_DTYPE = "auto"
CHECKPOINT_DTYPES = (AUTO_DTYPE, "float32", "float16", "bfloat16")
UNPLACED_KIND = "onnx::?"  # a failure that names no node of the export (nor an op of the model)
DYNAMO_DECOMPOSITION_FAMILY = "dynamo_decomposition"  # a dynamo fix written in torch ops, run as a decomposition
DYNAMO_GRAPH_REWRITE_FAMILY = "dynamo_graph_rewrite"  # a dynamo fix that rewrites the captured graph before torch.onnx
TRACED_VALUE_FAMILY = "torchscript_traced_value"  # a TorchScript fix: the context the model is traced in
DYNAMO_CODE_CHANGE_FAMILY = "dynamo_code_change"  # a dynamo fix that changes the model's methods while captured
TRACED_CODE_CHANGE_FAMILY = "torchscript_code_change"  # a TorchScript fix: the model's methods changed while traced


class ProblemReason(StrEnum):
    """Why a node cannot be exported or run; the values are part of the JSON and file formats."""

    NO_SYMBOLIC = "no_symbolic"
    SYMBOLIC_REJECTED = "symbolic_rejected"
    PYTHON_OP = "python_op"
    CUSTOM_OP = "custom_op"
    RUNTIME_ERROR = "runtime_error"
    CAPTURE_FAILED = "capture_failed"  # dynamo: torch.export could not capture the model
    NO_ONNX_FUNCTION = "no_onnx_function"  # dynamo: no ONNX function in the registry for the op
    TRANSLATION_FAILED = "translation_failed"  # dynamo: the op's ONNX function raised
    MISMATCH = "mismatch"  # exports and runs, but ONNX Runtime's numbers differ from torch's
    RANDOM_OUTPUT = "random_output"  # torch's own output changes from run to run: nothing to match
    WORKER_CRASH = "worker_crash"  # the export took the worker process down (torch or a fix crashed)
    EXPORT_FAILED = "export_failed"  # the exporter raised after converting every node
    SHAPE_SPECIALISED = "shape_specialised"  # right at the traced shapes, wrong at another declared one
    BAKED_INPUT = "baked_input"  # an input whose values the export does not follow (dropped, or turned into constants)

    @property
    def description(self) -> str:
        """One line for people, e.g. in the Problems list."""
        return _REASON_DESCRIPTIONS[self]


_REASON_DESCRIPTIONS = {
    ProblemReason.NO_SYMBOLIC: "no symbolic at this opset",
    ProblemReason.SYMBOLIC_REJECTED: "symbolic rejected these arguments",
    ProblemReason.PYTHON_OP: "autograd.Function without symbolic",
    ProblemReason.CUSTOM_OP: "custom op, no ONNX mapping",
    ProblemReason.RUNTIME_ERROR: "ONNX Runtime cannot run it",
    ProblemReason.CAPTURE_FAILED: "torch.export cannot capture it",
    ProblemReason.NO_ONNX_FUNCTION: "no ONNX function for this op",
    ProblemReason.TRANSLATION_FAILED: "ONNX function failed on these arguments",
    ProblemReason.MISMATCH: "ONNX Runtime's numbers differ from torch's",
    ProblemReason.RANDOM_OUTPUT: "torch's own output is random",
    ProblemReason.WORKER_CRASH: "the export crashed the worker process",
    ProblemReason.EXPORT_FAILED: "the exporter failed after converting the nodes",
    ProblemReason.SHAPE_SPECIALISED: "wrong at another shape the export declares",
    ProblemReason.BAKED_INPUT: "the export does not follow this input's values",
}
# An export's stages, as its progress messages say them. A crash while loading or tracing means a
# model that cannot be opened; a crash while converting or checking is a problem to list.
LOADING_STAGE = "loading the model"
TRACING_STAGE = "tracing the model"
CONVERTING_STAGE = "converting to ONNX"
# Reasons a different opset may cure: the exporter has (or lacks) a symbolic per opset.
OPSET_DEPENDENT_REASONS = frozenset({ProblemReason.NO_SYMBOLIC, ProblemReason.SYMBOLIC_REJECTED})
# Problems only a change to the model's own code fixes (no template can): its randomness, sizes it
# turns into constants while traced. Each problem's message says what to change.
IN_THE_MODELS_CODE_REASONS = frozenset({ProblemReason.RANDOM_OUTPUT, ProblemReason.SHAPE_SPECIALISED,
                                        ProblemReason.BAKED_INPUT})
# Problems of a model that exported: what it computes, not whether it converts (Compare explains them).
# A node ONNX Runtime cannot run is one: compare runs it on a reference kernel (the TorchScript
# exporter's torch node), or says why it cannot.
AFTER_EXPORT_REASONS = frozenset({ProblemReason.RUNTIME_ERROR, ProblemReason.MISMATCH, ProblemReason.RANDOM_OUTPUT,
                                  ProblemReason.SHAPE_SPECIALISED, ProblemReason.BAKED_INPUT})


def keeps_compare_from_running(reason: str) -> bool:
    """Whether a problem with ``reason`` leaves no export to compare (the one rule for the window's
    Compare, sweep rows and `compare --exporters`)."""
    return reason not in AFTER_EXPORT_REASONS


def describe_reason(reason: str) -> str:
    """The human description of ``reason``; an unknown string is shown as it is."""
    try:
        return ProblemReason(reason).description
    except ValueError:
        return reason


# ---- Python ops: autograd.Functions the tracer keeps as prim::PythonOp ----
PYTHON_OP_KIND = "prim::PythonOp"
_PYTHON_OP_RE = re.compile(re.escape(PYTHON_OP_KIND) + r"\[(.+)\]")


def python_op_kind(function_name: str | None) -> str:
    """'MyClip' -> 'prim::PythonOp[MyClip]': how one Function's nodes are named and fitted."""
    return f"{PYTHON_OP_KIND}[{function_name}]" if function_name else PYTHON_OP_KIND


def split_python_op(kind: str, name: str | None = None) -> tuple[str, str | None]:
    """'prim::PythonOp[MyClip]' -> ('prim::PythonOp', 'MyClip'); other kinds keep ``name``."""
    match = _PYTHON_OP_RE.fullmatch(kind)
    return (PYTHON_OP_KIND, match[1]) if match else (kind, name)


def display_kind(kind: str, python_op_name: str | None) -> str:
    """The kind as people read it: a Python op shows its Function's name."""
    return python_op_kind(python_op_name) if kind == PYTHON_OP_KIND else kind


# Namespaces of torch's core ops, ONNX's, and Fixport's pseudo-kinds: any other is a library's or the user's.
NOT_USER_NAMESPACES = frozenset({"aten", "prim", "prims", "onnx", "quantized", "_caffe2", "python"})


def users_own_op(kind: str) -> bool:
    """Whether ``kind`` names an op of a namespace of its own ('mylib::soft_clip', a ``torch.library``
    op; 'torchvision::nms'), for which a custom-domain node is the last resort."""
    namespace, sep, _ = kind.partition("::")
    return bool(sep) and namespace not in NOT_USER_NAMESPACES and not namespace.startswith("torch.export")


# ---- scopes: module paths 'layer1/0/conv1' ----
SCOPE_SEPARATOR = "/"


def scope_parts(scope: str) -> list[str]:
    """'layer1/0/conv1' -> ['layer1', '0', 'conv1']; empty segments are dropped."""
    return [part for part in scope.split(SCOPE_SEPARATOR) if part]


def scope_from_onnx_name(name: str) -> str:
    """'/layer1/0/conv1/Conv' -> 'layer1/0/conv1' (the exporter names ONNX nodes by module
    scope); names not starting with '/' have no scope."""
    if not name.startswith(SCOPE_SEPARATOR):
        return ""
    return SCOPE_SEPARATOR.join(scope_parts(name)[:-1])


# The fix script's support holds it (the script keys nodes the same way); '/' is SCOPE_SEPARATOR.
scope_from_torchscript = module_scope


# ---- instance keys: 'scope|source|kind|occurrence', a TorchScript node's stable id ----
INSTANCE_KEY_SEPARATOR = "|"


def instance_base(scope: str, source: str, kind: str) -> str:
    """'scope|source|kind': what identifies a node up to its occurrence number."""
    return INSTANCE_KEY_SEPARATOR.join((scope, source, kind))


def instance_key(base: str, occurrence: int) -> str:
    return f"{base}{INSTANCE_KEY_SEPARATOR}{occurrence}"


def base_of_instance_key(key: str) -> str:
    """'scope|source|kind|3' -> 'scope|source|kind'."""
    return key.rsplit(INSTANCE_KEY_SEPARATOR, 1)[0]


def kind_of_instance_base(base: str) -> str:
    """'scope|source|kind' -> 'kind'."""
    return base.rsplit(INSTANCE_KEY_SEPARATOR, 1)[-1]


def split_instance_key(key: str) -> tuple[str, str, str]:
    """(scope, source, kind) of an instance key; missing parts are ''."""
    scope, source, kind = (key.split(INSTANCE_KEY_SEPARATOR) + ["", "", ""])[:3]
    return scope, source, kind
