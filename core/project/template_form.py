"""The form a template file takes: plain Python that imports what it uses, its metadata in
``@fix(...)`` above ``def symbolic``.

A template imports torch and the exporter helpers itself, carries its metadata as the literal
arguments of ``fixport.symbolics.api.fix`` and keeps its parameters in a module-level ``params``
(``default_params(symbolic)``: the defaults; Fixport replaces them with the values the user set).
:func:`fix_decorator` writes the decorator for every generator. Older forms are still read, and
converted to this one by :func:`in_current_form` when a project, a template folder or an edit from
the Template dock is loaded: a literal ``TEMPLATE`` dict (with its ``params`` line), a template that
used names Fixport injected into its globals (``torch``, ``parse_args``, ``symbolic_helper``,
``_type_utils``, ``params``), and a bare ``symbolic`` that did so without any metadata (the fixes of
early projects). Read with ``ast`` only.
"""
from __future__ import annotations

import ast
from typing import Any

from fixport.core.project.fix_meta import ONLY_KEYWORDS, REQUIRED_KEYS
from fixport.core.words.vocabulary import DEFAULT_EXPORTER

EXPORTER_PACKAGE = "torch.onnx._internal.torchscript_exporter"  # torch 2.9-2.14
IMPORTED_NAMES = ("torch", "_type_utils", "symbolic_helper", "parse_args")
PARAMS_NAME = "params"
PARAMS_LINES = (
    "# The defaults from TEMPLATE; Fixport replaces them with the values set for this fix.\n"
    'params = {name: spec["default"] for name, spec in TEMPLATE["params"].items()}\n'
)
# Names older templates used without defining them (Fixport put them in their globals).
INJECTED_NAMES = frozenset({*IMPORTED_NAMES, PARAMS_NAME})


def import_block(names: set[str] | frozenset[str]) -> str:
    """The import lines a template using ``names`` needs, in isort order."""
    lines = ["import torch"] if "torch" in names else []
    helpers = sorted(names & {"_type_utils", "symbolic_helper"})
    if helpers:
        lines.append(f"from {EXPORTER_PACKAGE} import {', '.join(helpers)}")
    if "parse_args" in names:
        lines.append(f"from {EXPORTER_PACKAGE}.symbolic_helper import parse_args")
    return "".join(line + "\n" for line in lines)


def _bound_at_module_level(tree: ast.Module) -> set[str]:
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return bound


def injected_names_used(source: str) -> set[str]:
    """Injected names ``source`` reads but never imports or assigns (an old-form template)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    read = {node.id for node in ast.walk(tree)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in INJECTED_NAMES}
    arguments = {arg.arg for node in ast.walk(tree) if isinstance(node, ast.arguments)
                 for arg in (*node.posonlyargs, *node.args, *node.kwonlyargs)}
    return read - _bound_at_module_level(tree) - arguments


def defines_params(source: str) -> bool:
    """Whether ``source`` keeps its own module-level ``params`` (the current form)."""
    try:
        return PARAMS_NAME in _bound_at_module_level(ast.parse(source))
    except SyntaxError:
        return False


BARE_PARAMS_LINES = ("# Fixport replaces it with the values set for this fix.\n"
                     "params: dict = {}\n")


API_MODULE = "fixport.symbolics.api"  # the one Fixport module a template imports
EXPORTER_WORDS = {"torchscript": "TorchScript", "dynamo": "dynamo"}
DEFAULT_PARAMS_LINE = "params = default_params(symbolic)\n"
# @fix's keywords in the order written; those at their default are left out.
_FIX_ORDER = ("id", "strategy", "title", "description", "min_opset", "max_opset", "params",
              "runs_in_onnxruntime", "custom_opsets", "shape_specialised", "complex_inputs", "tolerance", "notes")
_FIX_DEFAULTS: dict[str, Any] = {"max_opset": None, "params": {}, "runs_in_onnxruntime": True,
                                 "custom_opsets": {}, "notes": "", "shape_specialised": False,
                                 "complex_inputs": False}


def fix_decorator(meta: dict[str, Any], *, only: str = "", why: str = "") -> str:
    """``@fix(...)`` carrying ``meta`` (TEMPLATE's keys; ``family`` is written as ``strategy``), one
    argument a line; ``only`` (``torchscript`` or ``dynamo``) says one exporter takes it, ``why``."""
    given = {("strategy" if key == "family" else key): value for key, value in meta.items()
             if key not in ("fits", "exporters", *ONLY_KEYWORDS.values())}
    if only:
        given[ONLY_KEYWORDS[only]] = why
    keys = [key for key in _FIX_ORDER if key in given] + [key for key in given if key not in _FIX_ORDER]
    lines = [f"    {_literal(fit)},\n" for fit in meta.get("fits", [])]
    lines += [f"    {key}={_literal(given[key], wrap=True)},\n" for key in keys
              if not (key in _FIX_DEFAULTS and given[key] == _FIX_DEFAULTS[key])]
    return "@fix(\n" + "".join(lines) + ")\n"


def _literal(value: Any, *, wrap: bool = False) -> str:
    """``value`` as Python source, strings in double quotes; a long dict one entry a line."""
    if isinstance(value, str):
        return f'"{value}"' if value.isprintable() and '"' not in value and "\\" not in value else repr(value)
    if isinstance(value, dict):
        entries = [f"{_literal(key)}: {_literal(item)}" for key, item in value.items()]
        if wrap and len(value) > 1 and sum(len(entry) + 2 for entry in entries) > 80:
            return "{\n" + "".join(f"        {entry},\n" for entry in entries) + "    }"
        return "{" + ", ".join(entries) + "}"
    if isinstance(value, (list, tuple)):
        items = ", ".join(_literal(item) for item in value)
        return f"[{items}]" if isinstance(value, list) else f"({items}{',' if len(value) == 1 else ''})"
    return repr(value)


def _is_template_assign(node: ast.stmt) -> bool:
    return isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "TEMPLATE" for t in node.targets)


def _reads(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(node))


def _with_blank_lines_after(lines: list[str], end: int) -> int:
    while end < len(lines) and not lines[end].strip():
        end += 1
    return end


def _import_edit(tree: ast.Module, names: set[str], before: int) -> tuple[int, int, list[str]]:
    """The edit importing ``names`` from the API module: merged into its one-line import where the
    file has one, else a line after the last import above line ``before`` (0-based)."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == API_MODULE and node.lineno == node.end_lineno \
                and all(alias.asname is None for alias in node.names):
            merged = sorted(names | {alias.name for alias in node.names})
            return node.lineno - 1, node.lineno, [f"from {API_MODULE} import {', '.join(merged)}\n"]
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
               and (node.end_lineno or 0) <= before]
    at = (imports[-1].end_lineno or 0) if imports else before
    line = f"from {API_MODULE} import {', '.join(sorted(names))}\n"
    return at, at, ["\n", line, "\n\n"] if imports else [line, "\n\n"]


def _template_dict_as_fix(source: str, only: str, why: str) -> str:
    """``source``'s literal ``TEMPLATE`` dict (and the ``params`` line made from it) rewritten as
    ``@fix(...)`` on ``symbolic``, taken by the exporter ``only`` for the reason ``why``; ``source``
    as it is where it has none to rewrite."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source  # reading it says where
    template = next((node for node in tree.body if _is_template_assign(node)), None)
    symbolic = next((node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "symbolic"), None)
    try:
        meta = ast.literal_eval(template.value) if template is not None else None
    except ValueError:
        meta = None  # not a literal: reading it says so
    if template is None or symbolic is None or not isinstance(meta, dict) or any(k not in meta for k in REQUIRED_KEYS):
        return source
    from_template = [node for node in tree.body if node is not template and _reads(node, "TEMPLATE")]
    if any(not (isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == [PARAMS_NAME])
           for node in from_template):
        return source  # TEMPLATE read elsewhere: leave it as it is
    lines = source.splitlines(keepends=True)
    decorator = fix_decorator(meta, only=only, why=why)
    first = min([symbolic.lineno, *(d.lineno for d in symbolic.decorator_list)]) - 1
    reads_params = _reads(tree, PARAMS_NAME)
    edits = [(first, first, ["\n\n", decorator])]
    if reads_params:
        end = symbolic.end_lineno or 0
        edits.append((end, end, ["\n\n", DEFAULT_PARAMS_LINE]))
    for node in (template, *from_template):
        start = node.lineno - 1
        if node is not template and start and lines[start - 1].lstrip().startswith("# The defaults from TEMPLATE"):
            start -= 1
        edits.append((start, _with_blank_lines_after(lines, node.end_lineno or 0), []))
    edits.append(_import_edit(tree, {"fix", *(["default_params"] if reads_params else [])}, template.lineno - 1))
    for start, end, replacement in sorted(edits, key=lambda edit: (edit[0], edit[1]), reverse=True):
        lines[start:end] = replacement
    text = "".join(lines)
    while "\n\n\n\n" in text:
        text = text.replace("\n\n\n\n", "\n\n\n")
    return text


def in_current_form(source: str, exporter: str = DEFAULT_EXPORTER) -> tuple[str, str]:
    """``source`` in the current form, and a note saying what was changed ('' where it was current).

    The imports it used without writing go after its docstring and ``__future__`` imports; a
    ``params`` it read without defining goes after its metadata (the defaults declared there), or,
    for a bare ``symbolic``, after the imports. A ``TEMPLATE`` dict becomes ``@fix(...)`` on
    ``symbolic``, for ``exporter`` only (the exporter whose templates, project or window it is read
    for: a TEMPLATE file was offered by its own folder's library only).
    """
    injected, used = _with_injected_names(source)
    only = exporter if exporter in ONLY_KEYWORDS else DEFAULT_EXPORTER
    why = f"converted from a TEMPLATE dict of the {EXPORTER_WORDS[only]} templates"
    converted = _template_dict_as_fix(injected, only, why)
    said = []
    if used:
        said.append(f"it used {', '.join(sorted(used))} without importing or defining them, and now does so itself")
    if converted != injected:
        said.append("its TEMPLATE dict is now @fix(...) on symbolic")
    return converted, ("converted to the current template form: " + "; ".join(said)) if said else ""


def _with_injected_names(source: str) -> tuple[str, set[str]]:
    """``source`` importing and defining the injected names it used, and those names."""
    used = injected_names_used(source)
    if not used:
        return source, used
    tree = ast.parse(source)  # injected_names_used found names, so it parses
    lines = source.splitlines(keepends=True)
    head_end = 0
    for index, node in enumerate(tree.body):
        docstring = index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
            and isinstance(node.value.value, str)
        if docstring or (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            head_end = node.end_lineno or head_end
        else:
            break
    template = next((node for node in tree.body if _is_template_assign(node)), None)
    imports = import_block(used - {PARAMS_NAME})
    params_text = ""
    if PARAMS_NAME in used:
        params_text = PARAMS_LINES if template is not None else BARE_PARAMS_LINES
    if template is not None and params_text:
        after = template.end_lineno or 0
        lines[after:after] = ["\n", params_text]
        params_text = ""
    block = "\n".join(part for part in (imports, params_text) if part)
    lines[head_end:head_end] = [*(["\n"] if head_end else []), block, "\n"]
    return "".join(lines), used
