"""The form a template file takes: plain Python that imports what it uses.

A template imports torch and the exporter helpers itself and keeps its parameters in a
module-level ``params`` dict (its defaults; Fixport replaces them with the values the user
set). Templates written before that form used names Fixport injected into their globals;
``injected_names_used`` finds them so those templates keep working. Read with ``ast`` only.
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
