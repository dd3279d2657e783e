"""Fixes for the dynamo exporter: a project's mappings -> a translation table and decompositions.

A dynamo template is a template file (``@fix(..., dynamo_only=...)`` as the TorchScript ones) whose
``symbolic`` is either an onnxscript function in trace mode, registered for the op overload the
way ``torch.onnx.export(dynamo=True, custom_translation_table={op: fn})`` does (family
``dynamo_translation``), or a torch function registered as a decomposition of the op
(``ep.run_decompositions({op: fn})``, family ``dynamo_decomposition``), or a pass over the
captured program run before torch.onnx's own passes (``symbolic(program)`` rewrites its graph and
says what it changed, family ``dynamo_graph_rewrite``). A fix for one node (``instance`` = its FX
node name) dispatches on the FX node being translated.
"""
from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from fixport.core.exporters.dynamo.script_part import by_instance
from fixport.core.exporters.fix_registry import FixRegistry
from fixport.core.foundation import runtime_scale_op
from fixport.core.foundation.changed_methods import ChangedMethod
from fixport.core.project.project import FixMapping
from fixport.core.records.fix_choices import GraphRewrite
from fixport.core.words.errors import TemplateValidationError
from fixport.core.words.vocabulary import (
    DYNAMO_CODE_CHANGE_FAMILY,
    DYNAMO_DECOMPOSITION_FAMILY,
    DYNAMO_GRAPH_REWRITE_FAMILY,
)

FAMILY_TRANSLATION = "dynamo_translation"
FAMILY_DECOMPOSITION = DYNAMO_DECOMPOSITION_FAMILY
FAMILY_GRAPH_REWRITE = DYNAMO_GRAPH_REWRITE_FAMILY
FAMILY_CODE_CHANGE = DYNAMO_CODE_CHANGE_FAMILY
DYNAMO_FAMILIES = (FAMILY_TRANSLATION, FAMILY_DECOMPOSITION, FAMILY_GRAPH_REWRITE, FAMILY_CODE_CHANGE)


@dataclass
class DynamoFixes:
    """What one export applies: ONNX functions per op overload (kind-wide and per FX node) and
    decompositions per op overload."""

    translations: dict[Any, dict[str | None, Callable]] = field(default_factory=dict)
    complex_translations: dict[Any, Callable] = field(default_factory=dict)  # for the op on complex values
    decompositions: dict[str, Callable] = field(default_factory=dict)  # by kind: see apply_decompositions
    graph_rewrites: list[tuple[str, Callable]] = field(default_factory=list)  # (template id, pass), in order
    custom_opsets: dict[str, int] = field(default_factory=dict)
    # methods the model runs changed while it is captured (script_part.methods_changed)
    code_changes: list[ChangedMethod] = field(default_factory=list)
    fingerprint: str = ""  # the mappings these were compiled from, as text: equal text, equal fixes

    def __bool__(self) -> bool:
        return bool(self.translations or self.complex_translations or self.decompositions or self.graph_rewrites
                    or self.code_changes)


_ACTIVE: contextvars.ContextVar[DynamoFixes | None] = contextvars.ContextVar("fixport_dynamo_fixes", default=None)


def active_fixes() -> DynamoFixes:
    """The fixes the current export applies (empty outside :func:`applied_dynamo_mappings`)."""
    return _ACTIVE.get() or DynamoFixes()


def op_overload(kind: str) -> torch._ops.OpOverload:
    """``'aten::pow.Tensor_Scalar'`` -> ``torch.ops.aten.pow.Tensor_Scalar`` (``.default`` when no overload)."""
    namespace, sep, rest = kind.partition("::")
    name, _, overload = rest.partition(".")
    try:
        if not sep:
            raise AttributeError(kind)
        return getattr(getattr(getattr(torch.ops, namespace), name), overload or "default")
    except (AttributeError, RuntimeError) as error:
        raise TemplateValidationError(f"{kind} is not a torch op overload (namespace::name.overload).",
                                      "Fix the mapping's kind, or import the module that defines the op.") from error


def code_changes_of(mapping: FixMapping, function: Callable) -> list[ChangedMethod]:
    """The changed methods a code-change fix's ``symbolic()`` lists, checked for their form."""
    try:
        changed = list(function())
        if not all(isinstance(row, tuple) and len(row) == 4 and callable(row[3]) for row in changed):
            raise TypeError("each entry must be (class name, file name, method name, function)")
    except Exception as error:
        raise TemplateValidationError(f"The fix for {mapping.label} ({mapping.template_id}) lists no changed "
                                      f"methods: {type(error).__name__}: {error}",
                                      "symbolic() must return [(class, file, method, function), ...].",
                                      target=mapping.label) from error
    return changed


def fixes_from(mappings: list[FixMapping], registry: FixRegistry | None = None) -> DynamoFixes:
    """Compile every mapping into what the dynamo exporter registers: each fix's kind comes from its
    saved metadata, and its source is compiled once (``registry.compiles`` counts it)."""
    registry = registry or FixRegistry(mappings)
    fixes = DynamoFixes()
    for mapping in registry.mappings:
        function = registry.compiled(mapping)
        fixes.custom_opsets.update(mapping.domain_opsets())
        family = mapping.family or FAMILY_TRANSLATION  # a fix without readable metadata is a translation
        if family == FAMILY_GRAPH_REWRITE:
            fixes.graph_rewrites.append((mapping.template_id, function))
        elif family == FAMILY_CODE_CHANGE:
            fixes.code_changes += code_changes_of(mapping, function)
        elif family == FAMILY_DECOMPOSITION:
            fixes.decompositions[mapping.replaced_kind] = function
        elif mapping.meta is not None and mapping.meta.complex_inputs:
            fixes.complex_translations[op_overload(mapping.target_kind)] = function
        else:
            fixes.translations.setdefault(op_overload(mapping.target_kind), {})[mapping.instance] = function
    return fixes


@contextmanager
def applied_dynamo_mappings(mappings: list[FixMapping]) -> Iterator[dict[str, int]]:
    """Make ``mappings`` the fixes of the dynamo exports run inside; yields their custom opsets."""
    fixes = fixes_from(mappings) if mappings else DynamoFixes()
    fixes.fingerprint = repr(mappings)
    token = _ACTIVE.set(fixes)
    try:
        yield dict(fixes.custom_opsets)
    finally:
        _ACTIVE.reset(token)


def register_translations(registry: Any, fixes: DynamoFixes) -> None:
    """Register each fix's ONNX function in the exporter's registry, ahead of torch_lib's."""
    for target, function in runtime_scale_op.translations().items():  # the op a code change may call
        registry.register_op(target, function)
    for target, function in fixes.complex_translations.items():
        registry.register_op(target, function, is_complex=True)
    for target, per_node in fixes.translations.items():
        if set(per_node) == {None}:
            registry.register_op(target, per_node[None])
            continue
        existing = registry.get_decomps(target)
        builtin = existing[0].onnx_function if existing else None
        registry.register_op(target, by_instance(str(target), per_node, builtin))


def apply_decompositions(program: torch.export.ExportedProgram, fixes: DynamoFixes) -> torch.export.ExportedProgram:
    """The program with the fixes' decompositions run (only those: other ops stay as captured)."""
    if not fixes.decompositions:
        return program
    from fixport.core.exporters.dynamo.source_graph import fx_kind

    # Keyed by the captured nodes' own targets: a model file run again defines its torch.library
    # ops again, and the OpOverload objects torch.ops hands out then need not be the captured ones.
    table = {node.target: fixes.decompositions[fx_kind(node.target)] for node in program.graph.nodes
             if node.op == "call_function" and fx_kind(node.target) in fixes.decompositions}
    try:
        return program.run_decompositions(table)
    except Exception as error:
        raise TemplateValidationError(
            f"A decomposition fix failed while decomposing: {type(error).__name__}: "
            f"{str(error).splitlines()[0][:300] if str(error) else ''}",
            "Edit the decomposition so it traces with fake tensors (torch ops only).") from error


def apply_graph_rewrites(program: torch.export.ExportedProgram, fixes: DynamoFixes) -> list[GraphRewrite]:
    """Run the fixes' graph rewrites on ``program`` in place (before torch.onnx's own passes); what
    each changed, node by node."""
    done: list[GraphRewrite] = []
    for template_id, rewrite in fixes.graph_rewrites:
        try:
            changed = rewrite(program)
        except Exception as error:
            raise TemplateValidationError(
                f"The graph rewrite {template_id} failed: {type(error).__name__}: "
                f"{str(error).splitlines()[0][:300] if str(error) else ''}",
                "Edit the rewrite so it changes the captured program's graph in place and returns what it "
                "changed as (node, op, change) tuples.") from error
        done += [GraphRewrite(template_id, str(node), str(target), str(change))
                 for node, target, change in changed or ()]
    return done


@contextmanager
def decompositions_while_preparing(fixes: DynamoFixes) -> Iterator[None]:
    """The fixes' decompositions also in the table torch.onnx decomposes the program with: an op the
    captured graph does not hold yet (aten::linalg_inv_ex comes from decomposing linalg_inv) is
    only reached there."""
    if not fixes.decompositions:
        yield
        return
    from torch.onnx._internal.exporter import _fx_passes

    original = _fx_passes._decomp.create_onnx_friendly_decomposition_table
    extra = {}
    for kind, function in fixes.decompositions.items():
        try:
            extra[op_overload(kind)] = function
        except TemplateValidationError:
            continue  # an op this process cannot name: apply_decompositions handled it by the captured node

    def with_fixes(*args: Any, **kwargs: Any) -> dict:
        return {**original(*args, **kwargs), **extra}

    _fx_passes._decomp.create_onnx_friendly_decomposition_table = with_fixes
    try:
        yield
    finally:
        _fx_passes._decomp.create_onnx_friendly_decomposition_table = original
