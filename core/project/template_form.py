"""The form a template file takes: plain Python that imports what it uses.

A template imports torch and the exporter helpers itself and keeps its parameters in a
module-level ``params`` dict (its defaults; Fixport replaces them with the values the user
set). Two older forms are still read, and converted to this one by :func:`in_current_form` when a
project or a template folder is loaded: a template that used names Fixport injected into its globals
(``torch``, ``parse_args``, ``symbolic_helper``, ``_type_utils``, ``params``) under a ``TEMPLATE``
dict, and a bare ``symbolic`` that did so without any metadata (the fixes of early projects). Read
with ``ast`` only.
"""
from __future__ import annotations

import ast

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


def in_current_form(source: str) -> tuple[str, str]:
    """``source`` in the current form, and a note saying what was added ('' where it was current).

    The imports it used without writing go after its docstring and ``__future__`` imports; a
    ``params`` it read without defining goes after its ``TEMPLATE`` (the defaults declared there),
    or, for a bare ``symbolic``, after the imports.
    """
    used = injected_names_used(source)
    if not used:
        return source, ""
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
    template = next((node for node in tree.body if isinstance(node, ast.Assign)
                     and any(isinstance(t, ast.Name) and t.id == "TEMPLATE" for t in node.targets)), None)
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
    note = (f"converted to the current template form: it used {', '.join(sorted(used))} without importing or "
            "defining them, and now does so itself")
    return "".join(lines), note
