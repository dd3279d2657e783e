"""The TorchScript exporter's part of the fix script, ``torch.onnx.export(dynamo=False)``: each fix
is registered the way that exporter expects -- per op kind, per node instance, or by
autograd.Function name -- for the one export the script runs.

The fix-script writer puts this file into the script whole, beside the support package
(``fixport.core.foundation``), the only Fixport code it imports. What must match Fixport
exactly -- how a Function's fix is found and called, which inputs forward() is given, the nodes
of a graph in order -- lives here once, and the TorchScript exporter's modules import it from this
file. The instance keys are written again (the script's "user's line" leaves out the script's
own frames, the engine's leaves out Fixport's), and tests/test_fix_script_support.py runs both on
the same models.
"""
from __future__ import annotations

import functools
import inspect
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import torch
from torch.onnx import register_custom_op_symbolic, unregister_custom_op_symbolic

from fixport.core.foundation.changed_methods import methods_changed
from fixport.core.foundation.scopes import module_scope
from fixport.core.foundation.script import ExportJob, ScriptFix

PYTHON_OP_KIND = "prim::PythonOp"  # every autograd.Function's node
TRACED_VALUE_FAMILY = "torchscript_traced_value"  # a fix whose symbolic() is the context the model is traced in
CODE_CHANGE_FAMILY = "torchscript_code_change"  # a fix whose symbolic() lists methods changed while traced
INSTANCE_KEY_SEPARATOR = "|"
_FRAME_RE = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<func>.+)$")
_STDLIB_DIR = os.path.dirname(os.__file__) + os.sep
_PACKAGE_DIRS = ("site-packages", "dist-packages")  # under the stdlib folder, but not the stdlib


def _script_file() -> tuple[str, ...]:
    path = getattr(sys.modules.get("__main__"), "__file__", None)
    return (os.path.abspath(path),) if path else ()


# Frames inside torch or the script itself are never "the user's line" of an instance key (this
# file's own frames run from the script's text: "<...>").
_LIBRARY_DIRS = (os.path.dirname(torch.__file__) + os.sep, *_script_file())


def _is_library_frame(path: str) -> bool:
    if path.startswith(_LIBRARY_DIRS) or path.startswith("<"):  # "<string>": generated code
        return True
    return path.startswith(_STDLIB_DIR) and not any(part in path for part in _PACKAGE_DIRS)


@functools.lru_cache(maxsize=8192)  # many nodes share one traced stack: parse each once
def user_source_line(source_range: str) -> str:
    """The first 'file.py:line' of the traced stack that is the user's code, not torch's (the
    file's base name only, as in Fixport's instance keys)."""
    frames = [m for m in (_FRAME_RE.match(line.strip()) for line in source_range.splitlines()) if m]
    for match in frames:
        if not _is_library_frame(match["file"]):
            return f"{os.path.basename(match['file'])}:{match['line']}"
    if frames:
        return f"{os.path.basename(frames[0]['file'])}:{frames[0]['line']}"
    return ""


def display_kind(node: Any) -> str:
    """'aten::relu', or 'prim::PythonOp[MyClip]' for an autograd.Function."""
    kind = node.kind()
    if kind != PYTHON_OP_KIND:
        return kind
    try:
        name = node.pyname()
    except (AttributeError, RuntimeError):
        name = ""
    return f"{PYTHON_OP_KIND}[{name}]" if name else PYTHON_OP_KIND


def instance_base(node: Any) -> str:
    """'scope|source|kind': what identifies a node up to its occurrence number."""
    kind = display_kind(node)
    if kind.endswith("_") and not kind.endswith("__"):
        kind = kind[:-1]  # in-place ops are converted as their out-of-place twins (relu_ -> relu)
    return INSTANCE_KEY_SEPARATOR.join((module_scope(node.scopeName()), user_source_line(node.sourceRange()), kind))


def instance_keys(nodes: Iterable[Any]) -> dict[Any, str]:
    """Fixport's stable keys 'scope|source|kind|occurrence' for the given nodes, in order."""
    seen: Counter[str] = Counter()
    keys: dict[Any, str] = {}
    for node in nodes:
        base = instance_base(node)
        keys[node] = f"{base}{INSTANCE_KEY_SEPARATOR}{seen[base]}"
        seen[base] += 1
    return keys


def all_nodes(graph: Any) -> list[Any]:
    """Nodes of the graph and of its sub-blocks, in topological order."""
    result: list[Any] = []

    def visit(block_nodes: Iterable[Any]) -> None:
        for node in block_nodes:
            result.append(node)
            for block in node.blocks():
                visit(block.nodes())

    visit(graph.nodes())
    return result


def autograd_functions_named(name: str) -> list[type]:
    """Every loaded torch.autograd.Function subclass called ``name`` that defines forward."""
    found, pending = [], list(torch.autograd.Function.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__name__ == name and "forward" in vars(cls):
            found.append(cls)
    return found


def function_keywords(fn: Callable, name: str, cls: type) -> dict[str, Any]:
    """The keywords a prim::PythonOp symbolic would get, limited to what ``fn`` accepts."""
    offered = {"name": name, "inplace": 0, "module": cls.__module__}
    accepted = accepted_keywords(inspect.unwrap(fn))
    return offered if accepted is None else {key: value for key, value in offered.items() if key in accepted}


def accepted_keywords(fn: Callable) -> set[str] | None:
    """Names of keyword parameters ``fn`` takes; None when it takes **kwargs."""
    params = inspect.signature(fn).parameters.values()
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params}


def with_output_types_of(result: Any, node: Any) -> Any:
    """Give the new outputs the original node's output types (the tutorial's setType)."""
    if node is None or result is None:
        return result
    values = result if isinstance(result, (tuple, list)) else [result]
    for value, original in zip(values, node.outputs()):
        if isinstance(value, torch._C.Value) and original.type().kind() == "TensorType":
            if value.type().kind() == "TensorType" and value.type().scalarType() is None:
                value.setType(original.type())
    return result


@contextmanager
def given_inputs_only(module: Any, input_count: int) -> Iterator[None]:
    """While exporting, ``module.forward`` shows only its first ``input_count`` parameters, so the
    exporter passes nothing else and forward() uses its own defaults for the rest.

    ``torch.onnx.export(dynamo=False)`` appends the defaults of forward()'s remaining parameters to
    the traced inputs (``torch.onnx.utils._decide_input_format``), and the tracer turns a non-tensor
    default into a tensor: ``forward(x, is_causal: bool = False)`` (timm's EVA, many attention
    blocks) then fails inside the model with "argument 'is_causal' must be bool, not Tensor"."""
    trimmed = trimmed_signature(module, input_count)
    if trimmed is None:
        yield
        return
    original = module.forward

    def forward(*inputs: Any) -> Any:
        return original(*inputs)

    forward.__signature__ = trimmed  # type: ignore[attr-defined]  # what the exporter reads
    module.forward = forward  # an instance attribute: the module's own scope and names stay as they are
    try:
        yield
    finally:
        del module.forward


def trimmed_signature(module: Any, input_count: int) -> inspect.Signature | None:
    """forward()'s signature cut after the given inputs, or None where nothing needs cutting."""
    if isinstance(module, torch.jit.ScriptModule) or "forward" in vars(module):
        return None
    try:
        signature = inspect.signature(module.forward)
    except (TypeError, ValueError):
        return None
    parameters = list(signature.parameters.values())
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if len(parameters) <= input_count or any(p.kind not in positional for p in parameters[:input_count]):
        return None
    rest = parameters[input_count:]
    # A missing parameter without a default is the user's error: the call reports it in their words.
    if any(p.default is inspect.Parameter.empty and p.kind in positional for p in rest):
        return None
    return signature.replace(parameters=parameters[:input_count])


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
        accepted = accepted_keywords(inspect.unwrap(chosen))
        passed = kwargs if accepted is None else {k: v for k, v in kwargs.items() if k in accepted}
        return with_output_types_of(chosen(g, *args, **passed), g.original_node)

    return symbolic


@contextmanager
def _attached_to_functions(table: Mapping[str, Callable]) -> Iterator[None]:
    """Each fix becomes the static ``symbolic`` of the autograd.Functions of that name. (A registered
    prim::PythonOp symbolic would stop torch inlining every other Function.)"""
    replaced: list[tuple[type, Any]] = []
    try:
        for name, fix in table.items():
            for cls in autograd_functions_named(name):
                keywords = function_keywords(fix, name, cls)
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
    """Every fix registered with the TorchScript exporter for the exports run inside, and the contexts
    the model is traced in entered (a value the trace would bake kept an input); undone after."""
    with ExitStack() as undo:
        for fix in fixes:
            if fix.family == TRACED_VALUE_FAMILY:  # the context the model is traced in, not a symbolic
                undo.enter_context(fix.function())
        fixes = [fix for fix in fixes if fix.family not in (TRACED_VALUE_FAMILY, CODE_CHANGE_FAMILY)]
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
    # the methods a code-change fix changes run changed while the model is traced
    changed = [patch for fix in job.fixes if fix.family == CODE_CHANGE_FAMILY for patch in fix.function()]
    with fixes_registered(job.fixes, job.opset), given_inputs_only(job.model, len(job.inputs)), \
            methods_changed(job.model, changed):
        # given_inputs_only: forward()'s other parameters keep their defaults, as in Fixport
        torch.onnx.export(job.model, job.inputs, job.output, opset_version=job.opset,
                          custom_opsets=job.custom_opsets or None, dynamo=False, **options)
