"""The fix script's part for the TorchScript exporter, ``torch.onnx.export(dynamo=False)``: each fix
is registered the way that exporter expects -- per op kind, per node instance, or by
autograd.Function name -- for the one export the script runs.

What must match Fixport exactly (instance keys, how a Function's fix is called, which inputs
forward() is given) is Fixport's own code, carried by source (``CARRIED_FIXPORT_CODE``).
"""
from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import torch
from torch.onnx import register_custom_op_symbolic, unregister_custom_op_symbolic

from fixport.core.exporters.given_inputs import given_inputs_only
from fixport.core.exporters.torchscript.function_symbolics import _keyword_arguments, autograd_functions_named
from fixport.core.exporters.torchscript.source_graph import all_nodes, instance_keys
from fixport.core.exporters.torchscript.symbolic_registration import _accepts_kwargs, _copy_output_types
from fixport.core.fixing.script_parts.common import ExportJob, ScriptFix
from fixport.core.model.vocabulary import PYTHON_OP_KIND

# Fixport's own code this part calls, which the fix script carries by source: (module, its
# top-level names in the order they are needed, a namespace keeping them apart or None).
CARRIED_FIXPORT_CODE = (
    ("fixport.core.model.vocabulary", (
        "PYTHON_OP_KIND", "SCOPE_SEPARATOR", "INSTANCE_KEY_SEPARATOR", "python_op_kind", "display_kind",
        "scope_from_torchscript", "instance_base", "instance_key"), "vocabulary"),
    ("fixport.core.exporters.torchscript.source_graph", (
        "_FRAME_RE", "_TORCH_DIR", "_STDLIB_DIR", "_PACKAGE_DIRS",  # not _LIBRARY_DIRS: it names Fixport's folder
        "_is_library_frame", "user_source_line", "python_op_name", "display_kind", "instance_base",
        "instance_keys", "all_nodes"), None),
    ("fixport.core.exporters.torchscript.function_symbolics", ("autograd_functions_named", "_keyword_arguments"), None),
    ("fixport.core.exporters.torchscript.symbolic_registration", ("_accepts_kwargs", "_copy_output_types"), None),
    ("fixport.core.exporters.given_inputs", ("given_inputs_only", "_trimmed_signature"), None),
)

# Instance keys name one node: module scope | user's source line | kind | occurrence. In the fix
# script, the code carried from Fixport that makes them reads this: frames inside torch or the
# script itself are never "the user's line".
_LIBRARY_DIRS = (os.path.dirname(torch.__file__) + os.sep, os.path.abspath(__file__))
_NO_SYMBOLIC = object()  # a Function that had no static ``symbolic`` of its own

_key_of_node: dict[Any, str] = {}  # filled when the exporter hands over the TorchScript graph


def _instance_key(node: Any) -> str:
    return _key_of_node.get(node, "")


@contextmanager
def _nodes_keyed_before_conversion() -> Iterator[None]:
    """Key every node of the graph the exporter is about to convert, as Fixport does."""
    convert = torch._C._jit_pass_onnx

    def keyed(graph: Any, operator_export_type: Any) -> Any:
        _key_of_node.clear()
        _key_of_node.update(instance_keys(all_nodes(graph)))
        return convert(graph, operator_export_type)

    torch._C._jit_pass_onnx = keyed
    try:
        yield
    finally:
        torch._C._jit_pass_onnx = convert
        _key_of_node.clear()


def _by_instance(kind: str, table: Mapping[str | None, Callable], opset: int) -> Callable:
    """One symbolic for ``kind``: the fix for this node instance, else the kind-wide fix,
    else the exporter's own symbolic."""
    from torch.onnx._internal.torchscript_exporter import registration

    group = registration.registry.get_function_group(kind)
    builtin = group.get(opset) if group is not None else None

    def symbolic(g: Any, *args: Any, **kwargs: Any) -> Any:
        chosen = table.get(_instance_key(g.original_node)) or table.get(None) or builtin
        if chosen is None:
            raise RuntimeError(f"no fix for this {kind} node")
        return chosen(g, *args, **kwargs)

    return symbolic


def _by_function(table: Mapping[tuple[str | None, str | None], Callable]) -> Callable:
    """One prim::PythonOp symbolic for every autograd.Function, chosen by the Function's name
    (and the node's instance key, for a fix of one node)."""

    def symbolic(g: Any, *args: Any, **kwargs: Any) -> Any:
        name = kwargs.get("name", "")
        key = _instance_key(g.original_node) if any(instance for _, instance in table) else None
        chosen = table.get((name, key)) or table.get((name, None))
        if chosen is None:
            raise RuntimeError(f"no fix for autograd.Function {name}")
        accepted = _accepts_kwargs(inspect.unwrap(chosen))
        passed = kwargs if accepted is None else {k: v for k, v in kwargs.items() if k in accepted}
        return _copy_output_types(chosen(g, *args, **passed), g.original_node)

    return symbolic


@contextmanager
def _attached_to_functions(table: Mapping[str, Callable]) -> Iterator[None]:
    """Each fix becomes the static ``symbolic`` of the autograd.Functions of that name. (A registered
    prim::PythonOp symbolic would stop torch inlining every other Function.)"""
    replaced: list[tuple[type, Any]] = []
    try:
        for name, fix in table.items():
            for cls in autograd_functions_named(name):
                keywords = _keyword_arguments(fix, name, cls)
                replaced.append((cls, vars(cls).get("symbolic", _NO_SYMBOLIC)))
                cls.symbolic = staticmethod(lambda g, *args, _fix=fix, _kw=keywords: _fix(g, *args, **_kw))
        yield
    finally:
        for cls, previous in reversed(replaced):
            if previous is _NO_SYMBOLIC:
                del cls.symbolic
            else:
                cls.symbolic = previous


def fixes_by_kind(fixes: Sequence[ScriptFix]) -> dict[str, list[ScriptFix]]:
    """The fixes grouped by the kind they are registered for (every Function's under prim::PythonOp)."""
    grouped: dict[str, list[ScriptFix]] = {}
    for fix in fixes:
        is_python_op = fix.python_op_name or fix.kind == PYTHON_OP_KIND
        grouped.setdefault(PYTHON_OP_KIND if is_python_op else fix.kind, []).append(fix)
    return grouped


@contextmanager
def fixes_registered(fixes: Sequence[ScriptFix], opset: int) -> Iterator[None]:
    """Every fix registered with the TorchScript exporter for the exports run inside; undone after."""
    with ExitStack() as undo:
        if any(fix.instance for fix in fixes):
            undo.enter_context(_nodes_keyed_before_conversion())
        for kind, entries in fixes_by_kind(fixes).items():
            if kind == PYTHON_OP_KIND and all(fix.python_op_name and not fix.instance for fix in entries):
                undo.enter_context(_attached_to_functions({fix.python_op_name: fix.function for fix in entries}))
                continue
            if kind == PYTHON_OP_KIND:
                symbolic = _by_function({(fix.python_op_name, fix.instance): fix.function for fix in entries})
            elif any(fix.instance for fix in entries):
                symbolic = _by_instance(kind, {fix.instance: fix.function for fix in entries}, opset)
            else:
                symbolic = entries[-1].function
            register_custom_op_symbolic(kind, symbolic, opset)
            undo.callback(unregister_custom_op_symbolic, kind, opset)
        yield


def exporter_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """torch.onnx.export's keyword arguments from export options as Fixport saves them: the
    export type by its name ('ONNX_ATEN_FALLBACK') becomes the enum member."""
    passed = dict(options)
    if isinstance(passed.get("operator_export_type"), str):
        passed["operator_export_type"] = getattr(torch.onnx.OperatorExportTypes, passed["operator_export_type"])
    return passed


def export_with_fixes(job: ExportJob) -> None:
    """Export ``job.model`` with ``torch.onnx.export(dynamo=False)`` and the fixes registered."""
    named = {"input_names": job.input_names, **({"output_names": job.output_names} if job.output_names else {})}
    options = exporter_options({**named, **job.model_file_options, **job.export_options})
    with fixes_registered(job.fixes, job.opset), given_inputs_only(job.model, len(job.inputs)):
        # given_inputs_only: forward()'s other parameters keep their defaults, as in Fixport
        torch.onnx.export(job.model, job.inputs, job.output, opset_version=job.opset,
                          custom_opsets=job.custom_opsets or None, dynamo=False, **options)
