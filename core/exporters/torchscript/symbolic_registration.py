"""Compile symbolic templates and register them with the TorchScript ONNX exporter.

Everything here touches the exporter's process-global registry, so exports that use it run in
the worker process. ``registered_mappings`` snapshots the registry and restores it exactly.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.onnx import errors as onnx_errors
from torch.onnx._internal.torchscript_exporter import (
    registration,
)
from torch.onnx._internal.torchscript_exporter.utils import register_custom_op_symbolic

from fixport.core.exporters.template_compiler import TemplateError, compile_template_source
from fixport.core.exporters.torchscript.function_symbolics import attached_function_symbolics
from fixport.core.exporters.torchscript.registry import restore_registry, snapshot_registry
from fixport.core.exporters.torchscript.script_part import accepted_keywords, with_output_types_of
from fixport.core.words.vocabulary import PYTHON_OP_KIND, python_op_kind, split_python_op
from fixport.symbolics.onnx_functions import SHARED_MARK


@dataclass
class MappingSpec:
    """One user choice: op kind (or one instance of it) -> template source + params."""

    target_kind: str
    instance: str | None
    template_id: str
    source: str
    params: dict[str, Any] = field(default_factory=dict)
    python_op_name: str | None = None
    custom_opsets: dict[str, int] = field(default_factory=dict)
    min_opset: int = 1
    max_opset: int | None = None


def _positional_arity(fn: Callable) -> tuple[int, int, bool]:
    """(required, total, has *args) of the inputs after ``g`` (an ONNX function written for both
    exporters takes no ``g``: the TorchScript exporter's is passed to its wrapper)."""
    params = list(inspect.signature(fn).parameters.values())[0 if getattr(fn, SHARED_MARK, False) else 1:]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = sum(1 for p in positional if p.default is p.empty)
    return required, len(positional), any(p.kind == p.VAR_POSITIONAL for p in params)


def schema_input_counts(kind: str) -> list[int]:
    """Input counts of each functional overload of an op (out= overloads left out)."""
    try:
        schemas = torch._C._jit_get_schemas_for_operator(kind)
    except RuntimeError:
        return []
    return [len(s.arguments) for s in schemas if not any(a.is_out for a in s.arguments)]


def python_op_input_count(forward: Callable) -> int:
    """Inputs of an autograd.Function's forward, without ``ctx``."""
    params = [p for p in inspect.signature(forward).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return max(len(params) - 1, 0)


def validate_mapping(spec: MappingSpec, opset: int,
                     python_op_forward: Callable | None = None) -> list[TemplateError]:
    """Problems that would stop ``spec`` from working at ``opset``; empty when fine."""
    filename = f"<template {spec.template_id}>"
    try:
        fn = compile_template_source(spec.source, spec.params, filename)
    except TemplateError as error:
        return [error]
    problems: list[TemplateError] = []
    line = getattr(inspect.unwrap(fn), "__code__", None)
    line = line.co_firstlineno if line else None
    if opset < spec.min_opset or (spec.max_opset is not None and opset > spec.max_opset):
        top = spec.max_opset if spec.max_opset is not None else "any"
        problems.append(TemplateError(
            f"the template works for opset {spec.min_opset}..{top}, export uses {opset}", line))
    required, total, var_args = _positional_arity(fn)
    kind, name = split_python_op(spec.target_kind, spec.python_op_name)
    if kind == PYTHON_OP_KIND:
        counts = [python_op_input_count(python_op_forward)] if python_op_forward else []
        what = f"{name}.forward"
    else:
        counts = schema_input_counts(kind)
        what = f"the schema of {kind}"
    if counts and not var_args and not any(required <= n <= total for n in counts):
        problems.append(TemplateError(
            f"symbolic takes {required}..{total} inputs after g, but {what} has "
            f"{' or '.join(map(str, sorted(set(counts))))}", line))
    return problems


def registry_state() -> dict[str, tuple[dict, dict]]:
    """A comparable copy of the registry (for tests and diagnostics)."""
    return {name: (dict(g._functions._base), dict(g._functions._overrides))
            for name, g in registration.registry._registry.items()}


def _previous(kind: str, opset: int) -> Callable | None:
    group = registration.registry.get_function_group(kind)
    return group.get(opset) if group is not None else None


def _merge_opsets(specs: list[MappingSpec]) -> dict[str, int]:
    merged: dict[str, int] = {}
    for spec in specs:
        for domain, version in spec.custom_opsets.items():
            merged[domain] = max(version, merged.get(domain, version))
    return merged


def _make_kind_dispatcher(kind: str, level: Callable | None, instances: dict[str, Callable],
                          fallback: Callable | None, opset: int,
                          instance_key_of: Callable[[torch._C.Node], str]) -> Callable:
    def dispatcher(g, *args, **kwargs):
        chosen = instances.get(instance_key_of(g.original_node)) if instances else None
        chosen = chosen or level or fallback
        if chosen is None:
            raise onnx_errors.UnsupportedOperatorError(kind, opset, None)
        return chosen(g, *args, **kwargs)

    dispatcher.__name__ = f"fixport_dispatch_{kind.replace('::', '_')}"
    return dispatcher


def _make_python_op_dispatcher(by_name: dict[str, tuple[Callable | None, dict[str, Callable]]],
                               fallback: Callable | None, opset: int,
                               instance_key_of: Callable[[torch._C.Node], str]) -> Callable:
    """ONE prim::PythonOp symbolic that picks the template by autograd.Function name."""

    def dispatcher(g, *args, **kwargs):
        node = g.original_node
        level, instances = by_name.get(kwargs.get("name", ""), (None, {}))
        chosen = instances.get(instance_key_of(node)) if instances else None
        chosen = chosen or level
        if chosen is None:
            if fallback is not None:
                return fallback(g, *args, **kwargs)
            raise onnx_errors.UnsupportedOperatorError(
                python_op_kind(kwargs.get("name", "?")), opset, None)
        accepted = accepted_keywords(inspect.unwrap(chosen))
        passed = kwargs if accepted is None else {k: v for k, v in kwargs.items() if k in accepted}
        return with_output_types_of(chosen(g, *args, **passed), node)

    return dispatcher


@contextmanager
def registered_mappings(mappings: list[MappingSpec], opset: int,
                        instance_key_of: Callable[[torch._C.Node], str]) -> Iterator[dict[str, int]]:
    """Register ``mappings`` for one export; yields the merged ``custom_opsets``.

    Kind-level mappings replace the symbolic for every node of the kind; instance-level ones
    apply to the node whose instance key matches and fall back to the kind-level mapping or
    the exporter's own symbolic. The registry is restored exactly on exit.
    """
    snapshot = snapshot_registry()
    try:
        kinds: dict[str, tuple[Callable | None, dict[str, Callable]]] = {}
        python_ops: dict[str, tuple[Callable | None, dict[str, Callable]]] = {}
        for spec in mappings:
            fn = compile_template_source(spec.source, spec.params, f"<template {spec.template_id}>")
            kind, name = split_python_op(spec.target_kind, spec.python_op_name)
            table, key = (python_ops, name or "") if kind == PYTHON_OP_KIND else (kinds, kind)
            level, instances = table.get(key, (None, {}))
            if spec.instance:
                instances[spec.instance] = fn
            else:
                level = fn
            table[key] = (level, instances)
        for kind, (level, instances) in kinds.items():
            fallback = _previous(kind, opset)
            fn = level if not instances else _make_kind_dispatcher(
                kind, level, instances, fallback, opset, instance_key_of)
            register_custom_op_symbolic(kind, fn, opset)
        # Fixes naming one Function go on its class as `symbolic`: a prim::PythonOp symbolic
        # would stop torch inlining every other Function. Only per-node fixes and fixes for
        # any Function need the registered dispatcher.
        by_name = {name: level for name, (level, instances) in python_ops.items()
                   if name and level is not None and not instances}
        dispatched = {name: entry for name, entry in python_ops.items() if name not in by_name}
        if dispatched:
            register_custom_op_symbolic(PYTHON_OP_KIND, _make_python_op_dispatcher(
                dispatched, _previous(PYTHON_OP_KIND, opset), opset, instance_key_of), opset)
        with attached_function_symbolics(by_name):
            yield _merge_opsets(mappings)
    finally:
        restore_registry(snapshot)
