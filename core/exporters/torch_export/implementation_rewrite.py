"""A custom op's Python implementation with what torch.export cannot capture rewritten.

Inlining a ``torch.library.custom_op`` (``dynamo.inline_implementation``, TorchScript's
``synthesized.inlined``) traces its Python function with fake tensors, and a branch on a tensor's
value or a size read from data stops it (``GuardOnDataDependentSymNode``). Here the implementation
is captured on its own, on the values the node saw; ``draft_export`` names each line that stops
it, and the mechanical changes that answer the same failure in a model
(:mod:`fixport.core.exporters.capture_changes`: ``torch.where`` for a branch, ``torch._check`` for a
check that raises, ``.item()`` with ``torch._check`` for a size) are made to a copy of the
function, again until it captures. The copy must give the implementation's outputs on those values; it
becomes a generated template for either exporter that shows the changed function
(:mod:`fixport.symbolics.synthesis.rewritten_implementation`).

Not value-specialised: ``torch.where`` computes both sides for every input. A line with no
mechanical answer (a loop whose count depends on the values) leaves the op to the other families.
"""
from __future__ import annotations

import ast
import contextlib
import inspect
import io
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch._library.custom_ops import OPDEFS
from torch.utils import _pytree as pytree

from fixport.core.exporters.base import NodeSample, first_error_line
from fixport.core.exporters.capture_changes import ChangedSource, propose_change, unified_diff
from fixport.core.exporters.torch_export.capture_failures import (
    DATA_DEPENDENT_MARKERS,
    capture_problems_from_report,
    quiet_torch,
)
from fixport.core.exporters.torch_export.same_outputs import same_outputs

if TYPE_CHECKING:
    from fixport.symbolics.library import RankedTemplate

MAX_REWRITE_ROUNDS = 4  # each round answers the lines that stop one capture


@dataclass(frozen=True)
class RewrittenImplementation:
    """The changed copy of a custom op's implementation, and what was changed."""

    kind: str
    function_name: str
    source: str  # the changed function alone, decorators removed, dedented
    diff: str  # of the file the implementation is in, as written -> changed
    reasons: tuple[str, ...]  # one per change
    where: str  # 'file.py:LINE' of the implementation


def _function_node(tree: ast.Module, name: str, near_line: int) -> ast.FunctionDef | None:
    """The ``def name`` nearest ``near_line`` (a changed file moves lines, never the name)."""
    found = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == name]
    return min(found, key=lambda node: abs(node.lineno - near_line), default=None)


def _function_text(source: str, node: ast.FunctionDef) -> str:
    """The function's own lines (from ``def``, without decorators), dedented."""
    lines = source.splitlines(keepends=True)[node.lineno - 1:node.end_lineno]
    return textwrap.dedent("".join(lines))


def _compiled(source: str, node: ast.FunctionDef, path: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """The function at ``node`` of ``source``, defined among the original's module names; blank
    lines before it keep the file's line numbers in what torch.export reports."""
    code = "\n" * (node.lineno - 1) + _function_text(source, node)
    scope = dict(original.__globals__)
    exec(compile(code, path, "exec"), scope)  # noqa: S102 -- the user's own function, changed by Fixport
    return scope[node.name]


def _stopping_lines(function: Callable[..., Any], arguments: tuple[tuple, dict]) -> list[tuple[str, str]] | str:
    """(``file.py:LINE``, guard) for each line that stops torch.export in ``function`` called on
    ``arguments`` (its tensors as the program's inputs); [] when it captures; a string when it
    fails for another reason."""
    from fixport.core.exporters.torch_export.op_alone import OpAlone

    module = OpAlone(function, arguments)
    tensors = tuple(leaf for leaf in pytree.tree_leaves(arguments) if isinstance(leaf, torch.Tensor))
    try:
        with quiet_torch(), contextlib.redirect_stderr(io.StringIO()):  # a failed capture prints its graph
            torch.export.export(module, tensors, strict=False)
        return []
    except Exception as exc:  # noqa: BLE001 -- any capture failure; only data-dependent ones are answered
        text = f"{type(exc).__name__}: {exc}"
        if not any(marker in text for marker in DATA_DEPENDENT_MARKERS):
            return f"the implementation does not capture: {first_error_line(exc)}"
    try:
        with quiet_torch(), contextlib.redirect_stderr(io.StringIO()):  # draft_export prints whole graphs
            draft = torch.export.draft_export(module, tensors)
    except Exception as exc:  # noqa: BLE001
        return f"torch.export.draft_export fails on the implementation: {first_error_line(exc)}"
    lines = []
    for problem in capture_problems_from_report(draft):
        _, quoted, rest = problem.message.partition("cannot decide `")
        lines.append((problem.source, rest.partition("`")[0] if quoted else "the value"))
    return lines or "torch.export names no line of the implementation"


def rewritten_implementation(kind: str, arguments: tuple[tuple, dict]) -> RewrittenImplementation | str | None:
    """The implementation of custom op ``kind`` changed until torch.export captures it on the
    node's values (``arguments``: its args and kwargs as the node saw them); None when it
    captures as written (plain inlining covers it); a string says why there is no such change."""
    definition = OPDEFS.get(kind.partition(".")[0])
    if definition is None:
        return None
    original = definition._init_fn
    try:
        path = inspect.getsourcefile(original) or ""
        before = Path(path).read_text(encoding="utf-8")
        tree = ast.parse(before)
    except (OSError, TypeError, SyntaxError, UnicodeDecodeError):
        return "the implementation's source file cannot be read"
    node = _function_node(tree, original.__name__, original.__code__.co_firstlineno)
    if node is None:
        return f"{original.__name__} is not a plain def in {Path(path).name}"
    name, defined_at = Path(path).name, node.lineno
    text = before  # the file with the changes so far
    reasons: list[str] = []
    function = original
    for _ in range(MAX_REWRITE_ROUNDS):
        stopping = _stopping_lines(function, arguments)
        if isinstance(stopping, str):
            return stopping
        if not stopping:
            break
        made = []
        for source, guard in stopping:
            file, _, line = source.rpartition(":")
            if file != name or not line.isdigit() or not node.lineno <= int(line) <= (node.end_lineno or 0):
                return f"torch.export stops outside {original.__name__} (at {source or '?'})"
            change = propose_change(text, int(line), guard)
            if change is None:
                return f"the line {source} stops torch.export (`{guard}`) and has no mechanical rewrite"
            if change not in made:
                made.append(change)
        text = ChangedSource(name, text, made).after  # the next round's lines are the changed file's
        reasons += [change.why for change in made]
        node = _function_node(ast.parse(text), original.__name__, node.lineno)
        assert node is not None
        function = _compiled(text, node, path, original)
    else:
        return f"torch.export still stops inside {original.__name__} after {MAX_REWRITE_ROUNDS} rounds of changes"
    if not reasons:
        return None
    args, kwargs = arguments
    with torch.no_grad():
        if not same_outputs(original(*args, **kwargs), function(*args, **kwargs)):
            return "the changed implementation gives other outputs than the original on the node's values"
    return RewrittenImplementation(kind, original.__name__, _function_text(text, node),
                                   unified_diff(name, before, text), tuple(reasons), f"{name}:{defined_at}")


def rewritten_offers(kind: str, sample: NodeSample | None,
                     render: Callable[[str, str, str, str, tuple[str, ...]], str]) -> list[RankedTemplate]:
    """The custom op's implementation rewritten on the node's values (``sample``), where it cannot
    be captured as written, as the template ``render`` makes of it for one exporter."""
    from fixport.symbolics.library import TIER_EXACT_READY, RankedTemplate, parse_template_source

    if sample is None or sample.arguments is None:
        return []
    made = rewritten_implementation(kind, sample.arguments)
    if made is None or isinstance(made, str):
        return []
    info = parse_template_source(render(kind, made.function_name, made.source, made.where, made.reasons),
                                 f"<generated for {kind}>")
    return [RankedTemplate(info.id, TIER_EXACT_READY, "the op's own implementation, with the lines that stop its "
                           "capture rewritten: " + " ".join(made.reasons), info)]
