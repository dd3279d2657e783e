"""A shortcut for one size that torch.export turns into the only size the export holds for (issue 46).

Code often skips work at the size it was trained at::

    if not torch.jit.is_tracing() and num_patches == num_positions and height == width:
        return self.position_embeddings

(transformers' DINOv2, ViT, ...). With the image's height and width declared dynamic, torch.export
evaluates the comparisons at the example's size, adds the guards ``Eq(w, h)`` and ``Eq(h//14 *
w//14, 4)`` and captures the shortcut: the ONNX file holds for the traced size only. At the line such
a guard names (:mod:`fixport.core.exporters.dynamo.specialising_guards`), each comparison of an
``if`` that returns early is asked with ``statically_known_true``, which adds no guard: the shortcut
is taken only where the sizes make it certain, and otherwise the general path, written for every
size, is captured. At a guard's other lines, ``int()`` of size arithmetic (which pins a symbolic size
as it folds a traced one) and the like are changed as for the TorchScript trace
(:func:`~fixport.core.exporters.traced_size_changes.propose_size_change`). Verified like every fix:
at the traced size (where torch took the shortcut) and at other sizes. No torch.
"""
from __future__ import annotations

import ast
from dataclasses import replace

from fixport.core.exporters.capture_change_fix import code_change_template
from fixport.core.exporters.capture_changes import ChangedSource, CodeChange, enclosing
from fixport.core.exporters.code_files import code_texts
from fixport.core.exporters.traced_size_changes import propose_size_change
from fixport.core.loaders.loading import LoadedModel
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason

SIZE_GUARD_PREFIX = "SizeGuard at "  # a warning: "SizeGuard at file.py:12: Eq(s1, s0)"
_CERTAIN = "torch.fx.experimental.symbolic_shapes.statically_known_true"
WHY = ("torch.export pinned the declared sizes to take this shortcut, written for one size: each comparison is "
       "asked with statically_known_true, which adds no guard, so the path written for every size is captured.")


def guard_places(warnings: list[str]) -> list[str]:
    """The lines ('file.py:12') where torch.export's capture pinned a declared size."""
    return [text[len(SIZE_GUARD_PREFIX):].split(": ", 1)[0] for text in warnings if text.startswith(SIZE_GUARD_PREFIX)]


class _Certain(ast.NodeTransformer):
    """Each comparison as ``statically_known_true(comparison)``."""

    def __init__(self) -> None:
        self.changed = 0

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        self.changed += 1
        return ast.Call(ast.parse(_CERTAIN, mode="eval").body, [node], [])


def propose_shortcut_change(source: str, line: int) -> CodeChange | None:
    """The change at ``line`` (where a guard pinned a size) that captures the general path: an ``if``
    without ``else`` whose body returns, its comparisons asked with ``statically_known_true``; None
    for any other statement."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    class_name, function, statement = enclosing(tree, line)
    if function is None or not isinstance(statement, ast.If) or statement.lineno != line or statement.orelse \
            or not statement.body or not isinstance(statement.body[-1], ast.Return):
        return None
    text_line = source.splitlines()[statement.lineno - 1]
    header_end = statement.test.end_lineno or statement.lineno
    if not text_line.lstrip().startswith("if ") or statement.body[0].lineno <= header_end:
        return None
    certain = _Certain()
    test = certain.visit(ast.parse(ast.unparse(statement.test), mode="eval").body)
    if not certain.changed:
        return None
    indent = text_line[:len(text_line) - len(text_line.lstrip())]
    return CodeChange(statement.lineno, header_end, (f"{indent}if {ast.unparse(test)}:",), WHY,
                      class_name, function.name)


def shortcut_change_fix(loaded: LoadedModel, places: list[str], kinds: list[str]) -> tuple[str, str]:
    """The dynamo code-change fix (template source) that makes the change at each of ``places`` in
    the model's file or a library's while the model is captured, and its diff; ('', '') where none fits."""
    if loaded.source_kind != "python" or loaded.module is None:
        return "", ""
    lines: dict[str, set[int]] = {}
    for place in places:
        file, _, number = place.rpartition(":")
        if number.isdigit():
            lines.setdefault(file, set()).add(int(number))
    changed_files: list[ChangedSource] = []
    for name, before in code_texts(loaded, lines):
        changes = [c for n in sorted(lines[name])
                   if (c := propose_shortcut_change(before, n) or propose_size_change(before, n)) is not None]
        if changes:
            changed_files.append(ChangedSource(name, before, list(dict.fromkeys(changes))))
    template = code_change_template(changed_files, kinds) if changed_files else None
    if not template:
        return "", ""
    return template, "".join(changed.diff() for changed in changed_files)


def changes_for_pinned(loaded: LoadedModel, warnings: list[str]) -> bool:
    """Whether a line where the capture pinned a declared size has a change here: then a size the
    program refuses is the export's specialisation, which the change may undo, not an assumption of
    the model's code (which eager torch makes too), so the other-size check reports it."""
    places = guard_places(warnings)
    return bool(places) and bool(shortcut_change_fix(loaded, places, [])[0])


def with_shortcut_changes(loaded: LoadedModel, problems: list[UnsupportedNode], warnings: list[str]
                          ) -> list[UnsupportedNode]:
    """``problems`` with the shortcut change (``code_change_fix``, ``code_change``) on the first
    ``shape_specialised`` one without a fix, where torch.export pinned a size at a line it changes
    (dynamo only: only its capture says ``SizeGuard``)."""
    places = guard_places(warnings)
    open_ones = [p for p in problems if p.reason == ProblemReason.SHAPE_SPECIALISED and not p.code_change_fix]
    if not places or not open_ones:
        return problems
    fix, diff = shortcut_change_fix(loaded, places, [p.kind for p in open_ones])
    if not fix:
        return problems
    first = open_ones[0]
    return [replace(p, code_change_fix=fix, code_change=diff) if p is first else p for p in problems]
