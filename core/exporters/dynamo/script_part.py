"""The dynamo exporter's part of the fix script, ``torch.onnx.export(dynamo=True)``: the fixes
written in onnxscript go in as its ``custom_translation_table``, those written in torch ops
are run as decompositions on the captured program first, and the rewrites of the captured graph
(``symbolic(program)``) run on it before torch.onnx's own passes.

The fix-script writer puts this file into the script whole, beside the support package
(``fixport.core.foundation``), the only Fixport code it imports. What must match Fixport
exactly -- a fix for one FX node dispatching on the node being translated, the dynamic shapes by
forward parameter, the model's attributes kept through the export -- lives here once: the dynamo
exporter's own modules import it from this file.
"""
from __future__ import annotations

import contextvars
import inspect
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import torch

from fixport.core.foundation import runtime_scale_op  # registers the op a runtime-scale code change calls
from fixport.core.foundation.changed_methods import methods_changed
from fixport.core.foundation.kept_attributes import attributes_kept
from fixport.core.foundation.script import ExportJob, ScriptFix
from fixport.core.foundation.size_scalars import sizes_kept_symbolic

# torch's capture settings, named as Fixport saves them in a project's capture_settings
NO_GRAD = "no_grad"
STRICT = "strict"
CORE_ATEN = "core_aten"
SIZE_SCALARS = "size_scalars"
DEFERRED_ASSERTS = "deferred_asserts"
DRAFT_EXPORT = "draft_export"
SUGGESTED_DIMS = "suggested_dims"
MAX_SUGGESTION_ROUNDS = 4  # each capture that fails on the dims gives torch's suggested fixes for what it met
DECOMPOSITION_FAMILY = "dynamo_decomposition"  # the fix is a torch function that replaces the op
GRAPH_REWRITE_FAMILY = "dynamo_graph_rewrite"  # the fix rewrites the captured program's graph in place
CODE_CHANGE_FAMILY = "dynamo_code_change"  # the fix changes methods of the model's code while it is captured
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
        if fix.family not in (DECOMPOSITION_FAMILY, GRAPH_REWRITE_FAMILY, CODE_CHANGE_FAMILY) \
                and not fix.complex_inputs:
            by_kind.setdefault(fix.kind, []).append(fix)
    table: dict[Any, Callable] = {}
    for kind, entries in by_kind.items():
        target = op_overload(kind)
        if len(entries) == 1 and entries[0].instance is None:
            table[target] = entries[0].function
            continue
        kind_wide = any(fix.instance is None for fix in entries)
        builtin = None if kind_wide else _torchlib_function(target)
        table[target] = by_instance(kind, {fix.instance: fix.function for fix in entries}, builtin)
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
    dynamic_shapes = dynamicshapes_by_parameter(job, given.get("dynamic_axes"), options["input_names"])
    settings = list(given.get("capture_settings", []))  # torch's capture settings Fixport chose
    # the model as it was after the export: a forward() that caches tensors on it would keep fake ones;
    # the methods a code-change fix changes run changed while it is captured
    changed = [patch for fix in job.fixes if fix.family == CODE_CHANGE_FAMILY for patch in fix.function()]
    with attributes_kept(job.model), torch.no_grad() if NO_GRAD in settings else nullcontext(), \
            sizes_kept_symbolic(job.model) if SIZE_SCALARS in settings else nullcontext(), \
            methods_changed(job.model, changed):
        if SUGGESTED_DIMS in settings and dynamic_shapes is not None:  # the dims as torch.export suggests them
            dynamic_shapes = suggested_dynamic_shapes(job.model, tuple(job.inputs), {}, dynamic_shapes)
            guarded = torch.export.export(job.model, tuple(job.inputs), dynamic_shapes=dynamic_shapes).module()
            if job.size_checks is not None:  # the sizes outside the declared ranges are not the export's
                job.size_checks.append(lambda inputs: _refused(guarded, inputs))
        target = captured(job, settings, dynamic_shapes)
        per_node = any(fix.instance for fix in job.fixes)
        with node_being_translated() if per_node else nullcontext(), complex_translations_registered(job.fixes):
            program = torch.onnx.export(target, job.inputs, dynamo=True, opset_version=job.opset,
                                        optimize=bool(given.get("do_constant_folding", True)),
                                        custom_translation_table={**runtime_scale_op.translations(),
                                                                          **translation_table(job.fixes)},
                                        dynamic_shapes=dynamic_shapes if target is job.model else None, **options)
    program.save(job.output)


def dynamicshapes_by_parameter(job: ExportJob, dynamic_axes: dict[str, Any] | None, names: Sequence[str]) -> Any:
    """The dynamic axes by input name as torch.export's dynamic_shapes, one entry per forward
    parameter, dims under their names, as Fixport passes them (torch's own conversion from
    dynamic_axes cannot take ``*args``); None where none is declared."""
    if not dynamic_axes:
        return None
    per_input = [{int(axis): dim for axis, dim in dynamic_axes.get(name, {}).items()} or None for name in names]
    return shapes_by_parameter(job.model, tuple(job.inputs), per_input)


def suggested_dynamic_shapes(model: Any, args: tuple, kwargs: dict[str, Any], dynamic_shapes: Any) -> Any:
    """``dynamic_shapes`` (dims by name) with each named dim a ``torch.export.Dim`` of that name,
    refined by torch.export's own suggested fixes until the model captures (a range such as
    ``Dim('len', min=7)``, a relation such as ``len_y = len_x``). Raises ValueError where a
    suggested fix makes a declared dim static: no range keeps it."""
    dims: dict[str, Any] = {}

    def named(dim: Any) -> Any:
        if not isinstance(dim, str):
            return dim
        if not dim.isidentifier():
            raise ValueError(f"the dim name {dim!r} is not a Python identifier, which torch.export.Dim needs")
        return dims.setdefault(dim, torch.export.Dim(dim))

    shapes = torch.utils._pytree.tree_map(named, dynamic_shapes)
    for _ in range(MAX_SUGGESTION_ROUNDS):
        try:
            torch.export.export(model, args, kwargs, dynamic_shapes=shapes)
            return shapes
        except torch._dynamo.exc.UserError as error:
            if "Suggested fixes" not in str(error):
                raise
            refined = torch.export.dynamic_shapes.refine_dynamic_shapes_from_suggested_fixes(error.msg, shapes)
        static = [name for name, dim in zip(_leaves(shapes), _leaves(refined))
                  if isinstance(name, str) and isinstance(dim, int)]
        if static:
            raise ValueError(f"torch.export's suggested fixes make {', '.join(static)} static: no range keeps "
                             f"{'them' if len(static) > 1 else 'it'} dynamic")
        shapes = refined
    raise ValueError(f"the model still does not capture after {MAX_SUGGESTION_ROUNDS} rounds of suggested fixes")


def _refused(program_module: Any, inputs: Sequence[Any]) -> str:
    """Why the captured program refuses ``inputs`` (a guard on a declared dim's range), '' where it runs."""
    try:
        with torch.no_grad():
            program_module(*inputs)
    except Exception as exc:  # noqa: BLE001 -- torch raises AssertionError or RuntimeError for a guard
        text = str(exc).strip()
        return text.splitlines()[0] if "Guard failed" in text or "Runtime assertion" in text else ""
    return ""


def _leaves(shapes: Any) -> list[Any]:
    """The dims of a dynamic_shapes structure in order, named by their Dim's name (None elsewhere)."""
    return [getattr(dim, "__name__", dim) for dim in torch.utils._pytree.tree_leaves(shapes)]


def captured(job: ExportJob, settings: Sequence[str], dynamic_shapes: Any = None) -> Any:
    """What torch.onnx.export is given: the model, or the program captured as the settings and the
    fixes that replace an op by torch ops ask (strict mode, core ATen first, those decompositions,
    the rewrites of its graph, runtime assertions in place of guards, draft_export's program), its named
    dynamic dims taken as ``Dim.DYNAMIC`` (the names are torch.onnx.export's to keep)."""
    replaced = decompositions(job.fixes)
    rewrites = [fix.function for fix in job.fixes if fix.family == GRAPH_REWRITE_FAMILY]
    if not replaced and not rewrites and not {STRICT, CORE_ATEN, DEFERRED_ASSERTS, DRAFT_EXPORT} & set(settings):
        return job.model
    dims = torch.utils._pytree.tree_map(lambda dim: torch.export.Dim.DYNAMIC if isinstance(dim, str) else dim,
                                        dynamic_shapes)
    if DRAFT_EXPORT in settings:  # what torch.export cannot decide, decided by the example's values
        program = torch.export.draft_export(job.model, job.inputs, dynamic_shapes=dims, strict=STRICT in settings)
    else:
        program = torch.export.export(job.model, job.inputs, dynamic_shapes=dims, strict=STRICT in settings,
                                      prefer_deferred_runtime_asserts_over_guards=DEFERRED_ASSERTS in settings)
    if CORE_ATEN in settings:
        program = program.run_decompositions()
    program = program.run_decompositions(replaced) if replaced else program
    for rewrite in rewrites:  # as Fixport runs them: after the decompositions, before torch.onnx's passes
        for node, target, change in rewrite(program):
            print(f"rewrote the captured graph's node {node} ({target}): {change}")
    return program


def shapes_by_parameter(module: Any, args: tuple, per_input: list[dict[int, str] | None]) -> Any:
    """torch.export's dynamic_shapes for ``module(*args)``: one entry per forward parameter the
    arguments bind to, in order, a ``*past`` parameter holding one entry per tensor it takes
    (torch's own conversion from dynamic axes cannot take ``*args``)."""
    try:
        signature = inspect.signature(module.forward)
        bound = signature.bind(*args)
    except (TypeError, ValueError):  # no signature to bind to: one entry per argument, in order
        return tuple(per_input)
    shapes: list[Any] = []
    index = 0
    for name, value in bound.arguments.items():
        if signature.parameters[name].kind is inspect.Parameter.VAR_POSITIONAL:
            # {} for a static tensor: torch's conversion of named dims reads a tuple of Nones as one
            # tensor's dims, and the structure no longer matches the arguments
            shapes.append(tuple(dims or {} for dims in per_input[index:index + len(value)]))
            index += len(value)
        else:
            shapes.append(per_input[index])
            index += 1
    return tuple(shapes)


TRANSLATING = contextvars.ContextVar("translating_node", default="")  # the FX node's name


def by_instance(kind: str, table: dict[str | None, Callable], builtin: Callable | None) -> Callable:
    """One function for ``kind``: the fix for the FX node being translated, else the kind-wide
    fix, else torch_lib's own."""

    def translate(*args: Any, **kwargs: Any) -> Any:
        chosen = table.get(TRANSLATING.get()) or table.get(None) or builtin
        if chosen is None:
            raise RuntimeError(f"no ONNX function for this {kind} node")
        return chosen(*args, **kwargs)

    return translate


@contextmanager
def node_being_translated() -> Iterator[None]:
    """Record the FX node the translator is working on, for fixes that apply to one node."""
    from torch.onnx._internal.exporter import _core

    original = _core._handle_call_function_node_with_lowering

    def handle(model: Any, node: torch.fx.Node, *args: Any, **kwargs: Any) -> Any:
        token = TRANSLATING.set(node.name)
        try:
            return original(model, node, *args, **kwargs)
        finally:
            TRANSLATING.reset(token)

    _core._handle_call_function_node_with_lowering = handle
    try:
        yield
    finally:
        _core._handle_call_function_node_with_lowering = original
