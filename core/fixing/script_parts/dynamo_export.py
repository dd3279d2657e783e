"""The fix script's part for the dynamo exporter, ``torch.onnx.export(dynamo=True)``: the fixes
written in onnxscript go in as its ``custom_translation_table``, and those written in torch ops
are run as decompositions on the captured program first.

A fix for one FX node dispatches on the node being translated: Fixport's own code, carried by
source (``CARRIED_FIXPORT_CODE``), so it cannot drift from what Fixport exported.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import torch

from fixport.core.exporters.dynamo.exporter import _shapes_by_parameter
from fixport.core.exporters.dynamo.fixes import _by_instance, node_being_translated
from fixport.core.exporters.dynamo.module_attributes import attributes_kept
from fixport.core.fixing.script_parts.common import ExportJob, ScriptFix
from fixport.core.model.capture_settings import CORE_ATEN, NO_GRAD, STRICT

# Fixport's own code this part calls, which the fix script carries by source: (module, its
# top-level names in the order they are needed, a namespace keeping them apart or None).
CARRIED_FIXPORT_CODE = (
    ("fixport.core.exporters.dynamo.exporter", ("_shapes_by_parameter",), None),
    ("fixport.core.exporters.dynamo.fixes", ("_TRANSLATING", "_by_instance", "node_being_translated"), None),
    ("fixport.core.model.capture_settings", ("NO_GRAD", "STRICT", "CORE_ATEN"), None),
    ("fixport.core.exporters.dynamo.module_attributes",
     ("_MODULE_BOOKKEEPING", "attributes_kept", "_snapshot", "_restore", "_same_items"), None),
)

DECOMPOSITION_FAMILY = "dynamo_decomposition"  # the fix is a torch function that replaces the op
PASSED_OPTIONS = ("input_names", "output_names")  # what dynamo=True takes of a project's options as they are


def op_overload(kind: str) -> Any:
    """``'aten::pow.Tensor_Scalar'`` -> ``torch.ops.aten.pow.Tensor_Scalar`` (``.default`` when no overload)."""
    namespace, _, rest = kind.partition("::")
    name, _, overload = rest.partition(".")
    return getattr(getattr(getattr(torch.ops, namespace), name), overload or "default")


def _torchlib_function(target: Any) -> Callable | None:
    """torch_lib's own ONNX function for ``target`` (for the nodes a per-node fix leaves alone)."""
    from torch.onnx._internal.exporter import _registration

    functions = _registration.ONNXRegistry.from_torchlib().get_decomps(target)
    return functions[0].onnx_function if functions else None


def translation_table(fixes: Sequence[ScriptFix]) -> dict[Any, Callable]:
    """Op overload -> the fix's ONNX function (one dispatching by FX node where a fix is for one node)."""
    by_kind: dict[str, list[ScriptFix]] = {}
    for fix in fixes:
        if fix.family != DECOMPOSITION_FAMILY and not fix.complex_inputs:
            by_kind.setdefault(fix.kind, []).append(fix)
    table: dict[Any, Callable] = {}
    for kind, entries in by_kind.items():
        target = op_overload(kind)
        if len(entries) == 1 and entries[0].instance is None:
            table[target] = entries[0].function
            continue
        kind_wide = any(fix.instance is None for fix in entries)
        builtin = None if kind_wide else _torchlib_function(target)
        table[target] = _by_instance(kind, {fix.instance: fix.function for fix in entries}, builtin)
    return table


@contextmanager
def complex_translations_registered(fixes: Sequence[ScriptFix]) -> Iterator[None]:
    """The fixes for ops on complex values in the registry torch.onnx.export builds: its
    custom_translation_table registers every function for real inputs only."""
    table = {op_overload(fix.kind): fix.function for fix in fixes if fix.complex_inputs}
    if not table:
        yield
        return
    from torch.onnx._internal.exporter import _registration

    descriptor = _registration.ONNXRegistry.__dict__["from_torchlib"]  # the classmethod, restored as it was
    original = _registration.ONNXRegistry.from_torchlib

    def with_complex(*args: Any, **kwargs: Any) -> Any:
        registry = original(*args, **kwargs)
        for target, function in table.items():
            registry.register_op(target, function, is_complex=True)
        return registry

    _registration.ONNXRegistry.from_torchlib = staticmethod(with_complex)
    try:
        yield
    finally:
        _registration.ONNXRegistry.from_torchlib = descriptor


def decompositions(fixes: Sequence[ScriptFix]) -> dict[Any, Callable]:
    """Op overload -> the torch function it is replaced by."""
    return {op_overload(fix.kind): fix.function for fix in fixes if fix.family == DECOMPOSITION_FAMILY}


def export_with_fixes(job: ExportJob) -> None:
    """Export ``job.model`` with ``torch.onnx.export(dynamo=True)`` and the fixes, saved to ``job.output``."""
    given = {**job.model_file_options, **job.export_options}  # the model file's own under the project's, as in Fixport
    named = {"input_names": job.input_names, **({"output_names": job.output_names} if job.output_names else {})}
    options = {**named, **{key: value for key, value in given.items() if key in PASSED_OPTIONS}}
    dynamic_shapes = dynamic_shapes_by_parameter(job, given.get("dynamic_axes"), options["input_names"])
    settings = list(given.get("capture_settings", []))  # torch's capture settings Fixport chose
    # the model as it was after the export: a forward() that caches tensors on it would keep fake ones
    with attributes_kept(job.model), torch.no_grad() if NO_GRAD in settings else nullcontext():
        target = captured(job, settings, dynamic_shapes)
        per_node = any(fix.instance for fix in job.fixes)
        with node_being_translated() if per_node else nullcontext(), complex_translations_registered(job.fixes):
            program = torch.onnx.export(target, job.inputs, dynamo=True, opset_version=job.opset,
                                        optimize=bool(given.get("do_constant_folding", True)),
                                        custom_translation_table=translation_table(job.fixes) or None,
                                        dynamic_shapes=dynamic_shapes if target is job.model else None, **options)
    program.save(job.output)


def dynamic_shapes_by_parameter(job: ExportJob, dynamic_axes: dict[str, Any] | None, names: Sequence[str]) -> Any:
    """The dynamic axes by input name as torch.export's dynamic_shapes, one entry per forward
    parameter, dims under their names, as Fixport passes them (torch's own conversion from
    dynamic_axes cannot take ``*args``); None where none is declared."""
    if not dynamic_axes:
        return None
    per_input = [{int(axis): dim for axis, dim in dynamic_axes.get(name, {}).items()} or None for name in names]
    return _shapes_by_parameter(job.model, tuple(job.inputs), per_input)


def captured(job: ExportJob, settings: Sequence[str], dynamic_shapes: Any = None) -> Any:
    """What torch.onnx.export is given: the model, or the program captured as the settings and the
    fixes that replace an op by torch ops ask (strict mode, core ATen first, those decompositions),
    its named dynamic dims taken as ``Dim.DYNAMIC`` (the names are torch.onnx.export's to keep)."""
    replaced = decompositions(job.fixes)
    if not replaced and STRICT not in settings and CORE_ATEN not in settings:
        return job.model
    dims = torch.utils._pytree.tree_map(lambda dim: torch.export.Dim.DYNAMIC if isinstance(dim, str) else dim,
                                        dynamic_shapes)
    program = torch.export.export(job.model, job.inputs, dynamic_shapes=dims, strict=STRICT in settings)
    if CORE_ATEN in settings:
        program = program.run_decompositions()
    return program.run_decompositions(replaced) if replaced else program
