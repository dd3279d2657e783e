"""Fixes generated for one op overload: torch_lib's function as an editable starting point, and
a stub from the op's schema. Both are complete template files (a ``symbolic`` ONNX function under
``@fix(..., dynamo_only=...)``), so they rank, edit, save and apply like the built-in ones.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import textwrap

import torch

from fixport.core.project.template_form import API_MODULE, DEFAULT_PARAMS_LINE, fix_decorator
from fixport.symbolics.api import op_schema

TORCHLIB_TEMPLATE_ID = "dynamo.torchlib_start"
STUB_TEMPLATE_ID = "dynamo.stub"
TRANSLATION_WHY = "an ONNX function for the dynamo exporter's translation table, at opset 18"


def _template_source(docstring: str, imports: str, meta: dict, body: str) -> str:
    """A template file: ``body`` (its last function ``symbolic``) under ``@fix`` carrying ``meta``."""
    marked = body.rstrip().replace("def symbolic(", fix_decorator(meta, only="dynamo", why=TRANSLATION_WHY)
                                   + "def symbolic(", 1)
    return (f'"""{docstring}"""\n\n{imports}\nfrom {API_MODULE} import default_params, fix\n\n\n'
            f"{marked}\n\n\n{DEFAULT_PARAMS_LINE}")


def _meta(template_id: str, title: str, description: str, kind: str, notes: str) -> dict:
    return {"id": template_id, "title": title, "description": description, "family": "dynamo_translation",
            "fits": [kind], "min_opset": 18, "max_opset": None, "params": {}, "runs_in_onnxruntime": True,
            "custom_opsets": {}, "notes": notes}


def torchlib_functions(kind: str) -> list:
    """torch_lib's functions for ``kind``'s overload, else for the op's other overloads."""
    import onnxscript.function_libs.torch_lib.ops  # noqa: F401 - fills the registry
    from onnxscript.function_libs.torch_lib.registration import default_registry

    base = kind.split(".", 1)[0]
    names = [kind] + sorted(name for name in default_registry._registry
                            if name != kind and name.split(".", 1)[0] == base)
    return [overload for name in names if name in default_registry._registry
            for overload in default_registry[name].overloads]


def torchlib_offer(kind: str) -> str | None:
    """torch_lib's implementation of ``kind`` (or of a sibling overload) as a template to edit."""
    functions = torchlib_functions(kind)
    if not functions:
        return None
    function = functions[0].func
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return None
    body = _without_decorators(source).replace(f"def {function.__name__}(", "def symbolic(", 1)
    imports = ("from onnxscript import ir  # noqa: F401\n"
               "from onnxscript.onnx_opset import opset18 as op  # noqa: F401\n"
               + _helper_imports(body, function))
    meta = _meta(TORCHLIB_TEMPLATE_ID, f"torch_lib's {function.__name__}, to edit",
                 f"onnxscript torch_lib's ONNX function for {kind}, copied here as a starting point.", kind,
                 "torch_lib's own function: change what fails (a type ONNX Runtime lacks, an attribute).")
    return _template_source(f"{kind}: torch_lib's {function.__name__} as a starting point.\n\n"
                            f"Copied from {function.__module__}; edit it, then apply.\n", imports, meta, body)


def _without_decorators(source: str) -> str:
    """A function's source from its ``def`` line: decorators dropped, those over several lines too
    (torch_lib's ``@torch_op((...), trace_only=True)``)."""
    definition = ast.parse(source).body[0]
    return "".join(source.splitlines(keepends=True)[definition.lineno - 1:])


def _helper_imports(body: str, function: object) -> str:
    """An explicit import of every torch_lib name the copied body reads (types, helpers)."""
    module = inspect.getmodule(function)
    read = {node.id for node in ast.walk(ast.parse(body)) if isinstance(node, ast.Name)}
    names = sorted(name for name in read if name not in ("op", "ir") and hasattr(module, name)
                   and not hasattr(builtins, name))
    return f"from {module.__name__} import {', '.join(names)}\n" if names else ""


def _schema(kind: str) -> torch._C.FunctionSchema | None:
    return op_schema(kind)


def stub_offer(kind: str) -> str:
    """A translation stub from the op's schema: tensors as inputs, other arguments as attributes."""
    schema = _schema(kind)
    arguments = [] if schema is None else [a for a in schema.arguments if not a.kwarg_only or a.default_value is None]
    names, first_tensor = [], None
    for argument in arguments:
        is_tensor = isinstance(argument.type, torch.TensorType)
        names.append(argument.name if is_tensor else f"{argument.name}: {_python_type(argument.type)}")
        first_tensor = first_tensor or (argument.name if is_tensor else None)
    signature = ", ".join(names) or "*args"
    result = first_tensor or "args[0]"
    body = (f"def symbolic({signature}):\n"
            f"    # TODO: build {kind} from ONNX ops (op.Add, op.Mul, op.Where, ...); return one value per output.\n"
            f"    return op.Identity({result})\n")
    meta = _meta(STUB_TEMPLATE_ID, f"Stub for {kind}", f"An ONNX function skeleton for {kind}, from its schema.",
                 kind, "Replace the Identity with the op's computation.")
    return _template_source(f"{kind}: an ONNX function to write.\n\nSchema: ``{schema or kind}``.\n",
                            "from onnxscript import ir  # noqa: F401\n"
                            "from onnxscript.onnx_opset import opset18 as op\n",
                            meta, body)


def _python_type(argument_type: torch._C.JitType) -> str:
    text = str(argument_type)
    if text in ("int", "SymInt"):
        return "int"
    if text in ("float", "Scalar"):
        return "float"
    if text == "bool":
        return "bool"
    if text.endswith("[]"):
        return "list"
    return "str" if text == "str" else "float"
