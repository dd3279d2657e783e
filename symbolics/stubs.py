"""Generate a starting ``symbolic`` for any op kind from its real schema.

Parameter names and ``@parse_args`` descriptors come from the TorchScript schema
(``torch._C._jit_get_schemas_for_operator``) for aten/torchvision/torch.library ops, or from
an autograd.Function's ``forward`` signature for ``prim::PythonOp``. The body raises a clear
TODO next to a commented ``g.op`` example. Unknown kinds get ``*args``. Imports torch lazily.
A stub has the form of every template: ``@fix(...)`` above ``symbolic`` (TorchScript only: it is a
``g.op`` symbolic), and it imports what it uses and keeps ``params`` itself.
"""
from __future__ import annotations

import inspect
import keyword
import re
from collections.abc import Callable
from dataclasses import dataclass

from fixport.core.project.template_form import API_MODULE, DEFAULT_PARAMS_LINE, fix_decorator, import_block

STUB_WHY = "a g.op symbolic (an onnxscript function without this line is taken by both exporters)"
# Schema type -> parse_args descriptor. Tensors and anything unusual stay Values ("v").
_DESCRIPTORS = {"int": "i", "SymInt": "i", "float": "f", "bool": "b", "str": "s",
                "int[]": "is", "SymInt[]": "is", "float[]": "fs", "ScalarType": "i",
                "List[int]": "is", "List[float]": "fs"}


@dataclass
class PythonOpSignature:
    """What a stub needs to know about an autograd.Function's forward."""

    name: str
    parameters: list[str]  # forward's parameters after ctx

    @classmethod
    def from_function(cls, function_class: type) -> PythonOpSignature:
        params = list(inspect.signature(function_class.forward).parameters)[1:]
        return cls(function_class.__name__, params)


def _safe(name: str) -> str:
    name = re.sub(r"\W", "_", name) or "arg"
    return f"{name}_" if keyword.iskeyword(name) or name in ("g", "params") else name


def _descriptor(type_text: str) -> str:
    base = re.sub(r"\[\d+\]", "[]", type_text.rstrip("?"))
    if type_text.endswith("?") or type_text.startswith("Optional["):
        return "v"  # may be None: keep the Value and test it with symbolic_helper._is_none
    return _DESCRIPTORS.get(base, "v")


def _schema_for(kind: str):
    try:
        import torch

        schemas = torch._C._jit_get_schemas_for_operator(kind)
    except (ImportError, RuntimeError):
        return None
    functional = [s for s in schemas if not any(a.is_out for a in s.arguments)]
    return (functional or schemas or [None])[0]


def _types_comment(input_types: list[str] | None, names: list[str]) -> list[str]:
    if not input_types:
        return ["# Input types were not recorded."]
    lines = ["# Inputs seen in the traced graph:"]
    for index, type_text in enumerate(input_types):
        label = names[index] if index < len(names) else f"input {index}"
        lines.append(f"#   {label}: {type_text}")
    return lines


def generate_stub(kind: str, *, opset: int, input_types: list[str] | None = None,
                  python_op: PythonOpSignature | Callable | type | None = None) -> str:
    """Source of a template whose ``symbolic`` matches ``kind``'s schema; always compiles."""
    if python_op is not None and not isinstance(python_op, PythonOpSignature):
        python_op = PythonOpSignature.from_function(python_op)  # an autograd.Function class
    schema_text, decorator, fits = "", "", kind
    if python_op is not None:
        names = [_safe(p) for p in python_op.parameters]
        signature = ", ".join(["g", *names, "**kwargs"])
        schema_text = f"{python_op.name}.forward(ctx, {', '.join(python_op.parameters)})"
        fits = f"prim::PythonOp[{python_op.name}]"
        first = names[0] if names else None
    else:
        schema = _schema_for(kind)
        if schema is None:
            names, signature, first = [], "g, *args", "args[0]"
            schema_text = f"{kind}(...)  (no schema known)"
        else:
            names = [_safe(a.name) for a in schema.arguments]
            descriptors = [_descriptor(str(a.type)) for a in schema.arguments]
            signature = ", ".join(["g", *names])
            decorator = "@parse_args(" + ", ".join(repr(d) for d in descriptors) + ")\n"
            schema_text = str(schema)
            first = names[0] if names else None
    example = f'g.op("Identity", {first})' if first else 'g.op("Constant", value_t=torch.tensor(0.0))'
    body = "\n".join([
        *("    " + line for line in _types_comment(input_types, names)),
        f"    # Example: return {example}",
        f"    raise NotImplementedError(\"TODO: write the ONNX for {kind} with g.op(...)\")",
    ])
    template_id = "user." + re.sub(r"\W+", "_", fits).strip("_").lower()
    meta = {"id": template_id, "title": f"My symbolic for {fits}",
            "description": f"User symbolic for {fits}.", "family": "user", "fits": [fits],
            "min_opset": opset, "max_opset": None, "params": {}, "runs_in_onnxruntime": True,
            "custom_opsets": {}, "notes": "Generated stub: replace the TODO."}
    imports = import_block({"torch", "symbolic_helper", "_type_utils", *(["parse_args"] if decorator else [])})
    marked = fix_decorator(meta, only="torchscript", why=STUB_WHY)
    return (f'"""Symbolic for ``{fits}``.\n\nSchema: ``{schema_text}``.\n"""\n\n{imports}\n'
            f"from {API_MODULE} import default_params, fix\n\n\n"
            f"{marked}{decorator}def symbolic({signature}):\n{body}\n\n\n{DEFAULT_PARAMS_LINE}")
