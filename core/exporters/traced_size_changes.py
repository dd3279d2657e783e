"""Code changes that keep a size the TorchScript trace would fold into a constant (issue 46).

Under ``torch.jit.trace`` a size read with ``x.shape[-1]`` stays a traced value while it meets
only tensor-friendly arithmetic; ``math.ceil(n / s)`` turns it into a Python number (a
TracerWarning at that line) and the graph holds the traced size's answer. At the line the
warning names, the rounding is rewritten as integer arithmetic the trace keeps:

- ``math.ceil(a / b)`` -> ``((a) + (b) - 1) // (b)`` (sizes are not negative; ONNX's integer Div
  truncates, so the ``-(-a // b)`` spelling would be wrong);
- ``math.floor(a / b)`` and ``int(a / b)`` -> ``(a) // (b)``;
- ``int(x.size(1))`` (or ``int(x.shape[1] // 2)``, ``int(patch_height * self.patch_size)``: integer
  arithmetic on names and sizes) -> the expression itself: the size stays a traced value
  (``x.view(b, x.size(1) // 2, -1)``), as ``torch.onnx.operators.shape_as_tensor`` would keep it;
- at an ``if`` whose size comparison only guards a cut to that length (``x = x[..., :n]``), the
  comparison goes (:mod:`~fixport.core.exporters.truncation_guards`).

The change is a :class:`~fixport.core.exporters.capture_changes.CodeChange`, so it renders as a
diff and its method is taken out by :func:`~fixport.core.exporters.capture_change_fix.changed_method`
like a capture's change. :func:`with_size_changes` gives each ``shape_specialised`` problem the fix that
makes them while the model is traced, which ``fix --auto`` tries (strategy ``traced_size_change``). No torch.
"""
from __future__ import annotations

import ast
from dataclasses import replace

from fixport.core.exporters.capture_change_fix import code_change_template
from fixport.core.exporters.capture_changes import ChangedSource, CodeChange, enclosing
from fixport.core.exporters.code_files import code_texts
from fixport.core.exporters.trace_warnings import trace_warnings
from fixport.core.exporters.truncation_guards import propose_truncation_unguarded
from fixport.core.loaders.loading import LoadedModel
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason


def _reads_a_size(node: ast.expr) -> bool:
    """Whether ``node`` reads a tensor's size: ``x.shape[i]``, ``x.size(i)`` (or arithmetic on one)."""
    for part in ast.walk(node):
        if isinstance(part, ast.Subscript) and isinstance(part.value, ast.Attribute) and part.value.attr == "shape":
            return True
        if isinstance(part, ast.Call) and isinstance(part.func, ast.Attribute) and part.func.attr == "size" \
                and len(part.args) == 1:
            return True
    return False


def _divides(node: ast.expr) -> bool:
    """Whether ``node`` has a true division (a float the trace would keep a float)."""
    return any(isinstance(part, ast.BinOp) and isinstance(part.op, ast.Div) for part in ast.walk(node))


def _integer_arithmetic(node: ast.expr) -> bool:
    """Whether ``node`` is a size read or +, -, * and // of names, attributes, sizes and whole numbers
    (the int() around it, at a line where the trace converts a tensor to an integer, only freezes it)."""
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)) \
            and _integer_arithmetic(node.left) and _integer_arithmetic(node.right)
    if _reads_a_size(node):
        return not _divides(node)
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    return isinstance(node, (ast.Name, ast.Attribute))


class _SizeRounding(ast.NodeTransformer):
    """``math.ceil``/``math.floor``/``int`` of a true division, as floor division on sizes."""

    def __init__(self) -> None:
        self.changed = 0

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        if len(node.args) == 1 and not node.keywords and ast.unparse(node.func) == "int" \
                and _integer_arithmetic(node.args[0]):
            self.changed += 1  # int(x.size(1)) // 2, int(patch_height * 14): the size stays traced without int()
            return node.args[0]
        if len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.BinOp) \
                or not isinstance(node.args[0].op, ast.Div):
            return node
        name = ast.unparse(node.func)
        top, bottom = node.args[0].left, node.args[0].right
        if name == "math.ceil":
            self.changed += 1
            numerator = ast.BinOp(ast.BinOp(top, ast.Add(), bottom), ast.Sub(), ast.Constant(1))
            return ast.BinOp(numerator, ast.FloorDiv(), bottom)
        if name in ("math.floor", "int"):
            self.changed += 1
            return ast.BinOp(top, ast.FloorDiv(), bottom)
        return node


def propose_size_change(source: str, line: int) -> CodeChange | None:
    """The change at ``line`` (a TracerWarning's line) that keeps its size traced, or None when
    the statement there rounds no division of sizes."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    class_name, function, statement = enclosing(tree, line)
    if function is not None and isinstance(statement, ast.If) and statement.lineno == line:
        return propose_truncation_unguarded(source, statement, class_name, function.name)
    if function is None or not isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return,
                                                      ast.Expr)):
        return None
    rounding = _SizeRounding()
    changed = rounding.visit(ast.parse(ast.unparse(statement)).body[0])
    if not rounding.changed:
        return None
    text_line = source.splitlines()[statement.lineno - 1]
    indent = text_line[:len(text_line) - len(text_line.lstrip())]
    why = ("The size is turned into a Python number (int() of a size, or math.ceil/floor of a division), which "
           "the trace folds into a constant: integer arithmetic on the size read keeps it traced, correct at "
           "every length.")
    return CodeChange(statement.lineno, statement.end_lineno or statement.lineno,
                      (f"{indent}{ast.unparse(changed)}",), why, class_name, function.name)


def size_change_fix(loaded: LoadedModel, warnings: list[str], kinds: list[str]) -> tuple[str, str, set[str]]:
    """The TorchScript fix (template source) that makes the size-keeping change at every line a
    TracerWarning of ``warnings`` names, in the model's file or a library's its parts come from,
    while the model is traced (``kinds``: the problems it answers), its diff, and the warned lines it
    changes ('file.py:12'); ('', '', set()) where no line has one."""
    if loaded.source_kind != "python" or loaded.module is None:
        return "", "", set()
    lines: dict[str, list[int]] = {}
    for warning in trace_warnings(warnings):
        file, _, number = warning.line.rpartition(":")
        if number.isdigit():
            lines.setdefault(file, []).append(int(number))
    changed_files: list[ChangedSource] = []
    changed_lines: set[str] = set()
    for name, before in code_texts(loaded, lines):
        proposed = {n: propose_size_change(before, n) for n in sorted(set(lines[name]))}
        changes = [c for c in proposed.values() if c is not None]
        changed_lines |= {f"{name}:{n}" for n, c in proposed.items() if c is not None}
        if changes:
            changed_files.append(ChangedSource(name, before, list(dict.fromkeys(changes))))
    template = code_change_template(changed_files, kinds, traced=True) if changed_files else None
    if not template:
        return "", "", set()
    return template, "".join(changed.diff() for changed in changed_files), changed_lines


def with_size_changes(loaded: LoadedModel, problems: list[UnsupportedNode], warnings: list[str]
                      ) -> list[UnsupportedNode]:
    """``problems`` with the size-keeping fix (``code_change_fix``) and its diff (``code_change``) on
    each ``shape_specialised`` one whose message names a line it changes, else on the first that names
    a warned line (TorchScript only: only a trace warns)."""
    specialised = [p for p in problems if p.reason == ProblemReason.SHAPE_SPECIALISED]
    if not specialised or not trace_warnings(warnings):
        return problems
    fix, diff, lines = size_change_fix(loaded, warnings, [p.kind for p in specialised])
    if not fix:
        return problems

    def names_a_change(problem: UnsupportedNode) -> bool:  # its message names a changed line: "file.py:12 (what)"
        return problem.reason == ProblemReason.SHAPE_SPECIALISED and any(f"{line} (" in problem.message
                                                                         for line in lines)
    warned = {warning.line for warning in trace_warnings(warnings)}
    answered = [p for p in specialised if names_a_change(p)] or _naming_warned_lines(specialised, warned)
    return [replace(p, code_change_fix=fix, code_change=diff) if p in answered else p for p in problems]


def _naming_warned_lines(specialised: list[UnsupportedNode], warned: set[str]) -> list[UnsupportedNode]:
    """Where no problem's message names a changed line (it names the few warned lines nearest its
    node, and the change is at another, as a truncation at the end of forward() is): the first one
    that names warned lines at all, so the change is tried once and verified like any fix."""
    return [p for p in specialised if any(f"{line} (" in p.message for line in warned)][:1]
