"""Code changes that answer a torch.export capture failure, made from the failing line itself.

torch.export stops where the model's Python depends on a tensor's value. These shapes of code
have a mechanical answer, found in the statement at the failing line (``ast``, no torch):

- a branch on a value, ``if scores.max() > 0.5: scores = scores * 2.0`` (assignments only, with
  or without ``else``): each assigned name becomes ``torch.where(test, if_value, else_value)``
  (where a line reads what an earlier one assigned, each side is computed first under its own
  names, so the result is the branch's for every input);
- a check on a value, ``if (x < 0).any(): raise ValueError(...)`` or ``assert (x >= 0).all()``:
  ``torch._check`` keeps it as a runtime assertion export can capture;
- a size read from data, ``count = int((scores > 0).sum())``: ``.item()`` keeps it a symbolic
  size instead of forcing a Python int, and ``torch._check(count >= 0)`` gives export the fact
  that a size needs;
- a scale factor read from data, ``F.interpolate(x, scale_factor=float(scale))``: each such call
  of the function becomes ``torch.ops.fixport.runtime_scale_interpolate(x, scale, mode,
  align_corners)`` (:mod:`fixport.core.foundation.runtime_scale_op`), which keeps ``scale`` a tensor
  and exports to ONNX ``Resize`` with the runtime scale;
- a branch on a size that returns, ``if boxes.numel() == 0: return empty`` (torchvision's NMS,
  in a plain function): where export cannot decide the size, ``guard_or_false`` takes the path
  written for the general size (the fall-through or ``else``); verified like every change.

A change says where it goes (the enclosing class and method, so it can be tried on the loaded
model without reloading its weights) and renders as a unified diff of the model file.
"""
from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass, field
from pathlib import Path

from fixport.core.words.vocabulary import ProblemReason


@dataclass(frozen=True)
class CodeChange:
    """Lines ``start``..``end`` (1-based, inclusive) of the model file replaced by ``replacement``."""

    start: int
    end: int
    replacement: tuple[str, ...]
    why: str
    class_name: str = ""  # the class whose method holds the line ('' at module level)
    method_name: str = ""


@dataclass
class ChangedSource:
    """A model file's text with changes applied (bottom-up, so line numbers hold)."""

    path_name: str
    before: str
    changes: list[CodeChange] = field(default_factory=list)

    @property
    def after(self) -> str:
        lines = self.before.splitlines(keepends=True)
        for change in sorted(self.changes, key=lambda c: c.start, reverse=True):
            lines[change.start - 1:change.end] = [f"{text}\n" for text in change.replacement]
        return "".join(lines)

    def diff(self) -> str:
        return unified_diff(self.path_name, self.before, self.after)


def unified_diff(path_name: str, before: str, after: str) -> str:
    """``before`` -> ``after`` of the file ``path_name``, as the Inspector and the report show it."""
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        f"{path_name} (as it is)", f"{path_name} (changed)", n=1))


def _enclosing(tree: ast.Module, line: int) -> tuple[str, ast.FunctionDef | None, ast.stmt | None]:
    """(class name, function, innermost statement) around ``line``."""
    class_name, function, statement = "", None, None

    def visit(node: ast.AST, owner: str) -> None:
        nonlocal class_name, function, statement
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.stmt) or not child.lineno <= line <= (child.end_lineno or child.lineno):
                continue
            if isinstance(child, ast.ClassDef):
                visit(child, child.name)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                class_name, function = owner, child
                visit(child, owner)
            else:
                statement = child
                if isinstance(child, (ast.If, ast.For, ast.While, ast.With)) and child.lineno != line:
                    visit(child, owner)  # the line is inside: the innermost statement holding it

    visit(tree, "")
    return class_name, function, statement


def _assignments(body: list[ast.stmt]) -> list[tuple[str, ast.expr]] | None:
    """(name, value) in order for a block of plain ``name = value`` / ``name op= value`` lines,
    else None."""
    found: list[tuple[str, ast.expr]] = []
    for statement in body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name):
            found.append((statement.targets[0].id, statement.value))
        elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
            name = statement.target.id
            found.append((name, ast.BinOp(ast.Name(name, ast.Load()), statement.op, statement.value)))
        else:
            return None
    return found


def _reads(expression: ast.expr) -> set[str]:
    return {node.id for node in ast.walk(expression) if isinstance(node, ast.Name)}


class _Renamed(ast.NodeTransformer):
    """Reads of the names in ``renamed`` replaced by their new names."""

    def __init__(self, renamed: dict[str, str]) -> None:
        self.renamed = renamed

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(self.renamed.get(node.id, node.id), node.ctx)


def _branch_as_where(statement: ast.If, indent: str, guard: str) -> tuple[list[str], str] | None:
    taken = _assignments(statement.body)
    other = _assignments(statement.orelse) if statement.orelse else []
    if not taken or other is None:
        return None
    names = list(dict.fromkeys(name for name, _ in [*taken, *other]))
    why = (f"The branch depends on a tensor's value (`{guard}`): torch.where computes both sides and keeps the "
           "one the test picks, element by element.")
    test = ast.unparse(statement.test)
    if _each_line_stands_alone(statement.test, taken, other, names):
        then, otherwise = dict(taken), dict(other)
        return [f"{indent}{name} = torch.where({test}, {ast.unparse(then.get(name, ast.Name(name)))}, "
                f"{ast.unparse(otherwise.get(name, ast.Name(name)))})" for name in names], why
    # Lines that read what an earlier one assigned: each side is computed first, under its own names.
    flag = "branch_taken"
    lines = [f"{indent}{flag} = {test}"]
    sides: list[dict[str, str]] = []
    for suffix, block in (("if_true", taken), ("if_false", other)):
        renamed: dict[str, str] = {}
        for name, value in block:
            new_name = f"{name}_{suffix}"
            lines.append(f"{indent}{new_name} = {ast.unparse(_Renamed(renamed).visit(value))}")
            renamed[name] = new_name
        sides.append(renamed)
    lines += [f"{indent}{name} = torch.where({flag}, {sides[0].get(name, name)}, {sides[1].get(name, name)})"
              for name in names]
    return lines, why


def _each_line_stands_alone(test: ast.expr, taken: list[tuple[str, ast.expr]], other: list[tuple[str, ast.expr]],
                            names: list[str]) -> bool:
    """Whether one ``name = torch.where(test, then, else)`` line per name, in order, computes what
    the branch does: no name is assigned twice on a side, and no line reads a name an earlier
    line (of its side, or of the where lines) assigned."""
    for block in (taken, other):
        if len({name for name, _ in block}) != len(block):
            return False
        for index, (_, value) in enumerate(block):
            if _reads(value) & {name for name, _ in block[:index]}:
                return False
    then, otherwise = dict(taken), dict(other)
    for index, name in enumerate(names):
        read = _reads(test) | (_reads(then[name]) if name in then else set()) \
            | (_reads(otherwise[name]) if name in otherwise else set())
        if read & set(names[:index]):
            return False
    return True


def _check_instead_of_raise(statement: ast.stmt, indent: str, guard: str) -> tuple[list[str], str] | None:
    """``if bad: raise E(message)`` and ``assert good, message`` as ``torch._check``, which export
    keeps as a runtime assertion (dropped in ONNX, which has no errors to raise)."""
    if isinstance(statement, ast.Assert):
        holds, message = statement.test, statement.msg
    elif isinstance(statement, ast.If) and not statement.orelse and len(statement.body) == 1 \
            and isinstance(statement.body[0], ast.Raise):
        raised = statement.body[0].exc
        arguments = raised.args if isinstance(raised, ast.Call) else []
        message = arguments[0] if len(arguments) == 1 else None
        if isinstance(statement.test, ast.UnaryOp) and isinstance(statement.test.op, ast.Not):
            holds = statement.test.operand
        else:
            holds = ast.Call(ast.Attribute(ast.Name("torch", ast.Load()), "logical_not", ast.Load()),
                             [statement.test], [])
    else:
        return None
    text = ast.unparse(holds)
    plain = isinstance(holds, (ast.Call, ast.Name, ast.Attribute, ast.Subscript))
    value = f"{text}.item()" if plain else f"({text}).item()"
    said = f", lambda: {ast.unparse(message)}" if message is not None else ""
    return [f"{indent}torch._check({value}{said})"], (
        f"The check reads a tensor's value (`{guard}`): torch._check keeps it as a runtime assertion that "
        "torch.export can capture (ONNX has no errors to raise: the exported model does not check it).")


_SIZE_READS = frozenset({"numel", "shape", "size", "dim", "len"})


def _reads_a_size(test: ast.expr) -> bool:
    return any(isinstance(node, ast.Attribute) and node.attr in _SIZE_READS
               or isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _SIZE_READS
               for node in ast.walk(test))


def _size_branch_takes_the_general_path(statement: ast.If, indent: str, source_line: str,
                                        guard: str) -> tuple[list[str], str] | None:
    """``if <size test>: ... return ...`` (one line of test): a branch no torch.where can stand for,
    as it returns. ``guard_or_false`` lets export take the path for the general size where it
    cannot decide the test."""
    if not (statement.body and isinstance(statement.body[-1], ast.Return)) or not _reads_a_size(statement.test) \
            or statement.test.end_lineno != statement.lineno or not source_line.rstrip().endswith(":"):
        return None
    return [f"{indent}if {_general_path_test(statement.test)}:"], (
        f"The branch returns early on a size read from data (`{guard}`): where torch.export cannot decide it, "
        "guard_or_false takes the path written for the general size; the export is checked at other sizes.")


def _general_path_test(test: ast.expr) -> str:
    """``test`` under ``guard_or_false``; in an ``and`` / ``or`` (torchvision's ``if boxes.numel() > n
    and not _is_tracing():``), each operand that reads a size on its own, as Python asks each
    operand for a bool before the whole test is one."""
    guarded = "torch.fx.experimental.symbolic_shapes.guard_or_false"
    if isinstance(test, ast.BoolOp):
        joined = f" {'and' if isinstance(test.op, ast.And) else 'or'} "
        return joined.join((f"({_general_path_test(value)})" if isinstance(value, ast.BoolOp) else
                            _general_path_test(value)) if _reads_a_size(value) else _operand(value)
                           for value in test.values)
    return f"{guarded}({ast.unparse(test)})"


def _operand(value: ast.expr) -> str:
    """``value`` as an operand of ``and`` / ``or`` (in brackets where it is one itself)."""
    text = ast.unparse(value)
    return f"({text})" if isinstance(value, (ast.BoolOp, ast.IfExp, ast.NamedExpr)) else text


def _size_from_data(statement: ast.Assign, indent: str, guard: str) -> tuple[list[str], str] | None:
    if len(statement.targets) != 1 or not isinstance(statement.targets[0], ast.Name):
        return None
    name, value = statement.targets[0].id, statement.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "int" \
            and len(value.args) == 1 and not value.keywords:
        argument = value.args[0]
        plain = isinstance(argument, (ast.Call, ast.Name, ast.Attribute, ast.Subscript))
        read = f"{ast.unparse(argument)}.item()" if plain else f"({ast.unparse(argument)}).item()"
    elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "item":
        read = ast.unparse(value)
    else:
        return None
    return [f"{indent}{name} = {read}", f"{indent}torch._check({name} >= 0)"], (
        f"{name} is read from a tensor's value (`{guard}`): .item() keeps it a symbolic size where int() "
        f"forces a Python number, and torch._check({name} >= 0) tells export it is one.")


_INTERPOLATE_PARAMETERS = ("input", "size", "scale_factor", "mode", "align_corners", "recompute_scale_factor",
                           "antialias")
RUNTIME_SCALE_OP = "torch.ops.fixport.runtime_scale_interpolate"
_RESIZE_MODES = frozenset({"nearest", "linear", "bilinear", "trilinear", "bicubic"})  # those ONNX Resize has


def _value_read(expression: ast.expr | None) -> ast.expr | None:
    """``t`` of ``float(t)`` or ``t.item()``, else None."""
    if isinstance(expression, ast.Call) and isinstance(expression.func, ast.Name) \
            and expression.func.id == "float" and len(expression.args) == 1 and not expression.keywords:
        return expression.args[0]
    if isinstance(expression, ast.Call) and isinstance(expression.func, ast.Attribute) \
            and expression.func.attr == "item" and not expression.args and not expression.keywords:
        return expression.func.value
    return None


def _runtime_scale_call(call: ast.AST) -> str | None:
    """``interpolate(x, scale_factor=float(t), mode=..., align_corners=...)`` (no size, no recomputed
    factor, no antialias) as the call of the op that keeps ``t`` a tensor; else None."""
    if not isinstance(call, ast.Call) or not (
            isinstance(call.func, ast.Attribute) and call.func.attr == "interpolate"
            or isinstance(call.func, ast.Name) and call.func.id == "interpolate") \
            or any(isinstance(a, ast.Starred) for a in call.args) or len(call.args) > len(_INTERPOLATE_PARAMETERS) \
            or any(k.arg is None for k in call.keywords):
        return None
    given = dict(zip(_INTERPOLATE_PARAMETERS, call.args)) | {k.arg: k.value for k in call.keywords}
    tensor = _value_read(given.get("scale_factor"))
    unset = all(isinstance(given.get(name), ast.Constant) and given[name].value in (None, False)
                for name in ("size", "recompute_scale_factor", "antialias") if name in given)
    mode_given = given.get("mode", ast.Constant("nearest"))
    if tensor is None or "input" not in given or not unset \
            or not (isinstance(mode_given, ast.Constant) and mode_given.value in _RESIZE_MODES):
        return None
    mode = ast.unparse(mode_given)
    align = ast.unparse(given["align_corners"]) if "align_corners" in given else "None"
    return f"{RUNTIME_SCALE_OP}({ast.unparse(given['input'])}, {ast.unparse(tensor)}, {mode}, {align})"


def _runtime_scale(source: str, function: ast.FunctionDef, statement: ast.stmt,
                   guard: str) -> tuple[int, int, list[str], str] | None:
    """Every interpolate of ``function`` from ``statement`` on whose scale factor is read from a tensor
    (``float(scale)``), called as the op that keeps the tensor (lines start..end, the new lines):
    torch.export stops at the first, and the others read the same factor."""
    calls = [(node, text) for node in ast.walk(function)
             if getattr(node, "lineno", 0) >= statement.lineno and (text := _runtime_scale_call(node))]
    if not any(statement.lineno <= node.lineno <= (statement.end_lineno or statement.lineno) for node, _ in calls):
        return None
    lines = source.splitlines()
    start, end = statement.lineno, max(node.end_lineno or node.lineno for node, _ in calls)
    if any(node.lineno != node.end_lineno for node, _ in calls):
        return None  # a call over several lines: its text is not replaced in place
    changed = lines[start - 1:end]
    for node, text in sorted(calls, key=lambda c: (c[0].lineno, c[0].col_offset), reverse=True):
        row = changed[node.lineno - start]
        prefix = row.encode()[:node.col_offset].decode()  # ast's offsets count UTF-8 bytes
        tail = row.encode()[node.end_col_offset:].decode()
        changed[node.lineno - start] = f"{prefix}{text}{tail}"
    return start, end, changed, (
        f"The scale factor is read from a tensor's value (`{guard}`): {RUNTIME_SCALE_OP} keeps it a tensor, "
        "runs interpolate as it is, and exports to ONNX Resize with the scale read at run time (its output "
        "size is data to torch.export; the op is defined in fixport.core.foundation.runtime_scale_op, which the fix "
        "script carries).")


def propose_change(source: str, line: int, guard: str) -> CodeChange | None:
    """The change that lets torch.export capture the statement at ``line`` (see the module
    docstring), or None when the statement has no mechanical answer."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    class_name, function, statement = _enclosing(tree, line)
    if function is None or statement is None:
        return None
    scaled = _runtime_scale(source, function, statement, guard)
    if scaled is not None:
        return CodeChange(scaled[0], scaled[1], tuple(scaled[2]), scaled[3], class_name, function.name)
    text_line = source.splitlines()[statement.lineno - 1]
    indent = text_line[:len(text_line) - len(text_line.lstrip())]
    if isinstance(statement, (ast.If, ast.Assert)) and statement.lineno == line:
        made = _check_instead_of_raise(statement, indent, guard) or (
            _branch_as_where(statement, indent, guard) if isinstance(statement, ast.If) else None)
        if made is None and isinstance(statement, ast.If):
            test_only = _size_branch_takes_the_general_path(statement, indent, text_line, guard)
            if test_only is not None:  # the `if` line alone changes; its body stays
                return CodeChange(statement.lineno, statement.lineno, tuple(test_only[0]), test_only[1],
                                  class_name, function.name)
    elif isinstance(statement, ast.Assign):
        made = _size_from_data(statement, indent, guard)
    else:
        made = None
    if made is None:
        return None
    replacement, why = made
    return CodeChange(statement.lineno, statement.end_lineno or statement.lineno, tuple(replacement), why,
                      class_name, function.name)


def proposals_for(source: str, path_name: str, problems: list) -> dict[int, CodeChange]:
    """Index in ``problems`` -> the change proposed for that capture failure at a line of the file
    ``path_name`` (each change once)."""
    found: dict[int, CodeChange] = {}
    for index, problem in enumerate(problems):
        file, _, line = problem.source.rpartition(":")
        if problem.reason != ProblemReason.CAPTURE_FAILED or file != path_name or not line.isdigit():
            continue
        _, quoted, rest = problem.message.partition("cannot decide `")  # the guard, as the problem quotes it
        change = propose_change(source, int(line), rest.partition("`")[0] if quoted else "the value")
        if change is not None and change not in found.values():
            found[index] = change
    return found


def changes_for(source: str, path_name: str, problems: list) -> ChangedSource:
    """The changes proposed for the capture failures among ``problems`` that carry one (their
    ``code_change``), found again from the file's text (no torch: the window and the CLI write copies)."""
    proposals = proposals_for(source, path_name, problems)
    return ChangedSource(path_name, source, [change for index, change in proposals.items()
                                             if problems[index].code_change])


def changed_copy_path(model_path: Path) -> Path:
    """Where the changed copy of ``model_path`` goes: beside it, never over an existing file."""
    candidate = model_path.with_name(f"{model_path.stem}_changed{model_path.suffix}")
    number = 2
    while candidate.exists():
        candidate = model_path.with_name(f"{model_path.stem}_changed_{number}{model_path.suffix}")
        number += 1
    return candidate


def write_changed_copy(model_path: Path, problems: list, target: Path | None = None) -> Path | None:
    """Write the model file with every proposed change to ``target`` (default: beside it); None
    when no problem has one. The original is never touched."""
    changed = changes_for(model_path.read_text(encoding="utf-8"), model_path.name, problems)
    if not changed.changes:
        return None
    target = target or changed_copy_path(model_path)
    target.write_text(changed.after, encoding="utf-8")
    return target


enclosing = _enclosing  # (class name, function, innermost statement) around a line, for traced_size_changes
