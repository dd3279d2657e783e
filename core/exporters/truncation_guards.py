"""A size check that only guards a truncation, dropped so the TorchScript trace keeps it (issue 46).

Libraries cut an output back to a wanted length only when it is longer::

    if padding_mask is not None and padding_mask.shape[-1] < audio_values.shape[-1]:
        audio_values = audio_values[..., : padding_mask.shape[-1]]

(transformers' EnCodec). ``torch.jit.trace`` turns the size comparison into a Python bool (a
TracerWarning at the ``if``) and records only the branch the traced length took: at a length that
takes the other branch the ONNX output has the wrong length. Slicing ``x[..., :n]`` is a no-op
where ``n`` is not less than that size, so the comparison can go and the slice always run: the
trace keeps it, with ``n`` a traced size, correct at every length. No torch.
"""
from __future__ import annotations

import ast

from fixport.core.exporters.capture_changes import CodeChange

# The comparisons `n OP size` (and `size OP' n`) that hold whenever n < size: where they do not,
# n >= size and the slice to n changes nothing.
_BOUND_FIRST = (ast.Lt, ast.LtE, ast.NotEq)
_SIZE_FIRST = (ast.Gt, ast.GtE, ast.NotEq)
WHY = ("The trace records only the branch a size comparison took at the traced size; the branch only cuts a "
       "tensor to a length, which changes nothing where the tensor is not longer: without the comparison the cut "
       "always runs and its length stays traced, correct at every size.")


def _size_of(node: ast.expr) -> tuple[str, int] | None:
    """(tensor expression, dim) for ``t.shape[d]`` or ``t.size(d)`` with a whole-number ``d``."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
        tensor, dim = node.value.value, node.slice
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size" \
            and len(node.args) == 1 and not node.keywords:
        tensor, dim = node.func.value, node.args[0]
    else:
        return None
    if isinstance(dim, ast.UnaryOp) and isinstance(dim.op, ast.USub) and isinstance(dim.operand, ast.Constant):
        dim = ast.Constant(-dim.operand.value)
    if not isinstance(dim, ast.Constant) or not isinstance(dim.value, int) or isinstance(dim.value, bool):
        return None
    return ast.unparse(tensor), dim.value


def _truncation(statement: ast.stmt) -> tuple[str, int, str] | None:
    """(tensor, dim, bound) for ``t = t[..., :n]`` or ``t = t[:, :n]`` (every other dim whole)."""
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1 \
            or not isinstance(statement.value, ast.Subscript):
        return None
    target, value = statement.targets[0], statement.value
    if ast.unparse(target) != ast.unparse(value.value):
        return None
    parts = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]

    def whole(part: ast.expr) -> bool:
        return isinstance(part, ast.Slice) and part.lower is None and part.upper is None and part.step is None

    cut = [i for i, part in enumerate(parts) if isinstance(part, ast.Slice) and not whole(part)]
    if len(cut) != 1:
        return None
    index, bound = cut[0], parts[cut[0]]
    if bound.lower is not None or bound.step is not None or bound.upper is None:
        return None
    ellipsis = [i for i, part in enumerate(parts) if isinstance(part, ast.Constant) and part.value is Ellipsis]
    others_whole = all(whole(p) or i in ellipsis or i == index for i, p in enumerate(parts))
    if not others_whole or len(ellipsis) > 1:
        return None
    if ellipsis:
        if ellipsis[0] > index or index != len(parts) - 1:
            return None
        dim = -1  # `...` then the cut: the last dim
    else:
        dim = index
    return ast.unparse(target), dim, ast.unparse(bound.upper)


def _guards_only(test: ast.expr, cuts: list[tuple[str, int, str]]) -> bool:
    """Whether ``test`` compares a cut's bound with its tensor's size in the cut dim, and holds where
    the bound is the smaller."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return False
    left, op, right = test.left, test.ops[0], test.comparators[0]
    for tensor, dim, bound in cuts:
        if isinstance(op, _BOUND_FIRST) and ast.unparse(left) == bound and _size_of(right) == (tensor, dim):
            return True
        if isinstance(op, _SIZE_FIRST) and ast.unparse(right) == bound and _size_of(left) == (tensor, dim):
            return True
    return False


def propose_truncation_unguarded(source: str, statement: ast.If, class_name: str, method_name: str
                                 ) -> CodeChange | None:
    """The change that drops ``statement``'s size comparison (its whole test, or one ``and`` part of
    it) where its body only cuts tensors to the compared length; None otherwise (an ``elif``, an
    ``else`` branch, a body doing anything else)."""
    lines = source.splitlines()
    text = lines[statement.lineno - 1]
    indent = text[:len(text) - len(text.lstrip())]
    if not text.lstrip().startswith("if ") or statement.orelse:
        return None
    cuts = [_truncation(part) for part in statement.body]
    if not cuts or None in cuts:
        return None
    known = [cut for cut in cuts if cut is not None]
    if _guards_only(statement.test, known):
        body = [f"{indent}{line}" for part in statement.body for line in ast.unparse(part).splitlines()]
        return CodeChange(statement.lineno, statement.end_lineno or statement.lineno, tuple(body), WHY,
                          class_name, method_name)
    if not isinstance(statement.test, ast.BoolOp) or not isinstance(statement.test.op, ast.And):
        return None
    kept = [value for value in statement.test.values if not _guards_only(value, known)]
    header_end = statement.test.end_lineno or statement.lineno
    if len(kept) == len(statement.test.values) or statement.body[0].lineno <= header_end:
        return None
    test = kept[0] if len(kept) == 1 else ast.BoolOp(ast.And(), kept)
    return CodeChange(statement.lineno, header_end, (f"{indent}if {ast.unparse(test)}:",), WHY,
                      class_name, method_name)
