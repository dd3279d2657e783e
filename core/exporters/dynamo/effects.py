"""Effect tokens taken out of the program the dynamo exporter translates.

torch.export threads an effect token through ops registered as having side effects (torch's
``_linalg_check_errors``, which raises on a singular matrix, is one; user ``torch.library`` ops
can be others) by wrapping each call in ``with_effects``. torch.onnx has no ONNX function for
``with_effects``, so the problem would be named after the wrapper, not the op. torch's own pass
unwraps the calls: the op then stands as itself, is diagnosed by its name, and a fix for it
applies. ONNX has no side effects, so nothing the tokens ordered is lost in the ONNX graph.
"""
from __future__ import annotations

import torch
from torch.export._remove_effect_tokens_pass import _remove_effect_tokens

from fixport.core.exporters.dynamo.source_graph import fx_kind

_WITH_EFFECTS = torch.ops.higher_order.with_effects


def without_effect_tokens(program: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """``program`` with every ``with_effects`` call unwrapped into the op it wraps."""
    if not any(node.target is _WITH_EFFECTS for node in program.graph.nodes):
        return program
    return _remove_effect_tokens(program)


def returns_nothing(target: object) -> bool:
    """Whether ``target`` is an op overload whose schema returns nothing (an error check)."""
    schema = getattr(target, "_schema", None)
    return schema is not None and not schema.returns


def drop_decomposed_checks(program: torch.export.ExportedProgram, decomposed_kinds: set[str]) -> None:
    """Erase the calls of ops that return nothing and have a decomposition fix: the decomposition
    of such an op computes nothing (an error check ONNX cannot raise), which is what erasing it
    does. They are only reached here, once the effect tokens are gone."""
    graph = program.graph
    for node in list(graph.nodes):
        if node.op == "call_function" and not node.users and returns_nothing(node.target) \
                and fx_kind(node.target) in decomposed_kinds:
            graph.erase_node(node)
    graph.lint()
