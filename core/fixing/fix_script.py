"""Write a standalone Python script that reproduces a project's fixed export without Fixport.

The script needs only torch, onnx and the model file. Each fix's source is embedded as it is
in the project (inside a function, so several templates' module-level names cannot clash) and
registered the way the exporter expects: per op kind, per node instance, or by
autograd.Function name through one ``prim::PythonOp`` dispatcher.
"""
from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

from fixport.core.model.atomic_files import atomic_write_text
from fixport.core.model.export_options import DEFAULT_OPSET
from fixport.core.model.project import FixMapping, Project

HEADER = '''#!/usr/bin/env python3
"""Export {model_name} to ONNX with the fixes chosen in Fixport ({date}).

Standalone: needs torch, onnx and the model file, not Fixport.
Run:  python {script_name} [-o OUTPUT.onnx]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys

import numpy as np
import onnx
import torch
from torch.onnx import register_custom_op_symbolic
from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_helper
from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

MODEL_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), {model_path!r})
INPUT_SPECS = {input_specs!r}  # NAME=DIMS:DTYPE, random with SEED; empty: the model file's own inputs
INPUT_FILE = {input_file!r}
SEED = {seed!r}
OPSET = {opset!r}  # None: the model file's FIXPORT_EXAMPLE opset, else {default_opset}
EXPORT_OPTIONS = {export_options}
CUSTOM_OPSETS = {custom_opsets!r}
'''

LOADER = '''

def load_model():
    """The model, its example inputs and its own export settings, opened the way Fixport opened them."""
    settings = {}
    if MODEL_PATH.endswith(".py"):
        sys.path.insert(0, os.path.dirname(MODEL_PATH))
        spec = importlib.util.spec_from_file_location("fixport_model", MODEL_PATH)
        module = importlib.util.module_from_spec(spec)
        sys.modules["fixport_model"] = module
        spec.loader.exec_module(module)
        model, inputs = module.build() if hasattr(module, "build") else (module.model, module.example_inputs)
        settings = dict(getattr(module, "FIXPORT_EXAMPLE", {}))
    elif MODEL_PATH.endswith(".pt2"):
        model, inputs = torch.export.unflatten(torch.export.load(MODEL_PATH)), ()
    elif {trust!r}:
        model, inputs = torch.load(MODEL_PATH, weights_only=False), ()
    else:
        model, inputs = torch.jit.load(MODEL_PATH), ()
    inputs = (inputs,) if isinstance(inputs, torch.Tensor) else tuple(inputs)
    if INPUT_FILE:
        data = np.load(INPUT_FILE) if INPUT_FILE.endswith(".npz") else torch.load(INPUT_FILE)
        inputs = tuple(torch.as_tensor(np.asarray(data[k])) for k in data)
    elif INPUT_SPECS:
        rng = np.random.default_rng(SEED)  # the same values Fixport used
        arrays = []
        for spec in INPUT_SPECS:
            _, _, rest = spec.partition("=")
            dims, _, dtype = rest.partition(":")
            shape = () if dims == "scalar" else tuple(int(d) for d in dims.split("x"))
            dtype = dtype or "float32"
            if dtype.startswith("float"):
                arrays.append(rng.standard_normal(shape).astype(dtype))
            elif dtype == "bool":
                arrays.append(rng.random(shape) > 0.5)
            else:
                arrays.append(rng.integers(0, 10, shape).astype(dtype))
        inputs = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in arrays)
    return model.eval(), inputs, settings


def input_names(model, inputs):
    """The ONNX input names Fixport used: the --input names, else forward()'s parameters."""
    if INPUT_SPECS:
        return [spec.partition("=")[0] for spec in INPUT_SPECS]
    if isinstance(model, torch.jit.ScriptModule):
        names = [argument.name for argument in model.forward.schema.arguments[1:]]
    else:
        import inspect

        try:
            parameters = inspect.signature(model.forward).parameters.values()
        except (TypeError, ValueError):
            parameters = []
        names = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = names[:len(inputs)]
    return names if len(names) == len(inputs) else [f"input_{i}" for i in range(len(inputs))]
'''

INSTANCE_KEYS = '''

# Instance keys identify one node: module scope | user's source line | kind | occurrence.
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_STDLIB_DIR = os.path.dirname(os.__file__) + os.sep
_THIS_FILE = os.path.abspath(__file__)  # like Fixport's own frames, never "the user's line"
_seen_instances: dict[str, int] = {}


def _scope_path(scope_name):
    path = ""
    for segment in scope_name.split("/"):
        attr = segment.rsplit("::", 1)[-1] if "::" in segment else ""
        if attr:
            path = attr if not path or attr.startswith(path + ".") else f"{path}.{attr}"
    return "/".join(part for part in path.split(".") if part)


def _source_line(source_range):
    frames = [m for m in (re.match(r"^(.+?)\\((\\d+)\\): ", line.strip()) for line in source_range.splitlines()) if m]
    for match in frames:
        path = match[1]
        in_stdlib = path.startswith(_STDLIB_DIR) and "site-packages" not in path and "dist-packages" not in path
        if not path.startswith(_TORCH_DIR) and not in_stdlib and not path.startswith("<") and path != _THIS_FILE:
            return f"{os.path.basename(match[1])}:{match[2]}"
    return f"{os.path.basename(frames[0][1])}:{frames[0][2]}" if frames else ""


def _instance_key(node):
    kind = node.kind()
    if kind == "prim::PythonOp":
        kind = f"prim::PythonOp[{node.pyname()}]"
    elif kind.endswith("_") and not kind.endswith("__"):
        kind = kind[:-1]
    base = f"{_scope_path(node.scopeName())}|{_source_line(node.sourceRange())}|{kind}"
    occurrence = _seen_instances.get(base, 0)
    _seen_instances[base] = occurrence + 1
    return f"{base}|{occurrence}"
'''

BY_INSTANCE = '''

def _by_instance(kind, table):
    """One symbolic for ``kind``: the fix for this node instance, else the kind-wide fix,
    else the exporter's own symbolic."""
    from torch.onnx._internal.torchscript_exporter import registration

    group = registration.registry.get_function_group(kind)
    builtin = group.get(OPSET) if group is not None else None

    def symbolic(g, *args, **kwargs):
        chosen = table.get(_instance_key(g.original_node)) or table.get(None) or builtin
        if chosen is None:
            raise RuntimeError(f"no fix for this {kind} node")
        return chosen(g, *args, **kwargs)

    return symbolic
'''

ATTACH_TO_FUNCTIONS = '''

def _attach_to_functions(table):
    """Each fix becomes the `symbolic` of the autograd.Functions of that name. (A registered
    prim::PythonOp symbolic would stop torch inlining every other Function.)"""
    import inspect

    pending = list(torch.autograd.Function.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        fix = table.get(cls.__name__)
        if fix is None or "forward" not in vars(cls):
            continue
        offered = {"name": cls.__name__, "inplace": 0, "module": cls.__module__}
        parameters = inspect.signature(fix).parameters.values()
        if not any(p.kind == p.VAR_KEYWORD for p in parameters):
            offered = {k: v for k, v in offered.items() if k in {p.name for p in parameters}}
        cls.symbolic = staticmethod(lambda g, *args, _fix=fix, _kw=offered: _fix(g, *args, **_kw))
'''

BY_FUNCTION = '''

def _by_function(table):
    """One prim::PythonOp symbolic for every autograd.Function, chosen by the Function's name."""
    import inspect

    def symbolic(g, *args, **kwargs):
        name = kwargs.get("name", "")
        key = _instance_key(g.original_node) if any(i for _, i in table) else None
        chosen = table.get((name, key)) or table.get((name, None))
        if chosen is None:
            raise RuntimeError(f"no fix for autograd.Function {name}")
        parameters = inspect.signature(chosen).parameters.values()
        if not any(p.kind == p.VAR_KEYWORD for p in parameters):
            kwargs = {k: v for k, v in kwargs.items() if k in {p.name for p in parameters}}
        result = chosen(g, *args, **kwargs)
        for value, original in zip(result if isinstance(result, (tuple, list)) else [result],
                                   g.original_node.outputs()):
            if value.type().kind() == "TensorType" and value.type().scalarType() is None:
                value.setType(original.type())  # the tutorial's setType: keep dtype and shape
        return result

    return symbolic
'''

MAIN = '''

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default={output!r})
    args = parser.parse_args()
    model, inputs, settings = load_model()
    opset = OPSET or settings.get("opset") or {default_opset}
    register_fixes(opset)
    options = {{"input_names": input_names(model, inputs), **settings.get("export_options", {{}}), **EXPORT_OPTIONS}}
    torch.onnx.export(model, inputs, args.output, opset_version=opset, custom_opsets=CUSTOM_OPSETS or None,
                      dynamo=False, **options)
    onnx.checker.check_model(args.output, full_check=True)
    print(f"Wrote {{args.output}}")


if __name__ == "__main__":
    main()
'''


def _fix_function(index: int, mapping: FixMapping) -> str:
    """The template's source, wrapped so its module-level names stay its own."""
    body = textwrap.indent(mapping.source.rstrip() + "\n\nreturn symbolic", "    ")
    return (f"\n\n# ---- fix {index}: {mapping.label} -> {mapping.template_id}"
            f"{' (edited)' if mapping.edited else ''} ----\n"
            f"def _fix_{index}(params):\n{body}\n\n\nfix_{index} = _fix_{index}({mapping.params!r})\n")


def _registration(mappings: list[FixMapping]) -> str:
    lines = ["\n\ndef register_fixes(opset):", '    """Register every fix with the TorchScript exporter."""']
    by_kind: dict[str, list[tuple[int, FixMapping]]] = {}
    for index, mapping in enumerate(mappings, 1):
        is_python_op = mapping.python_op_name or mapping.target_kind == "prim::PythonOp"
        by_kind.setdefault("prim::PythonOp" if is_python_op else mapping.target_kind, []).append((index, mapping))
    for kind, entries in by_kind.items():
        if kind == "prim::PythonOp" and all(m.python_op_name and not m.instance for _, m in entries):
            table = ", ".join(f"{m.python_op_name!r}: fix_{i}" for i, m in entries)
            lines.append(f"    _attach_to_functions({{{table}}})")
        elif kind == "prim::PythonOp":
            table = ", ".join(f"({m.python_op_name!r}, {m.instance!r}): fix_{i}" for i, m in entries)
            lines.append(f'    register_custom_op_symbolic("prim::PythonOp", _by_function({{{table}}}), opset)')
        elif any(m.instance for _, m in entries):
            table = ", ".join(f"{m.instance!r}: fix_{i}" for i, m in entries)
            lines.append(f"    register_custom_op_symbolic({kind!r}, _by_instance({kind!r}, {{{table}}}), opset)")
        else:
            (index, _), = entries
            lines.append(f"    register_custom_op_symbolic({kind!r}, fix_{index}, opset)")
    if not mappings:
        lines.append("    pass  # the model exports without fixes")
    return "\n".join(lines) + "\n"


def fix_script_text(project: Project, script_path: str | Path, output_onnx: str, opset: int | None = None) -> str:
    """The script's text; ``opset`` is the resolved one when the project does not set it."""
    script_path = Path(script_path).resolve()
    opset = project.export_options.get("opset") or opset  # None: the model file's own, else the default
    options = {k: v for k, v in project.export_options.items() if k not in ("opset", "custom_opsets")}
    if "operator_export_type" in options:
        options["operator_export_type"] = f"torch.onnx.OperatorExportTypes.{options['operator_export_type']}"
    custom_opsets = dict(project.export_options.get("custom_opsets", {}))
    for mapping in project.mappings:
        custom_opsets.update(mapping.domain_opsets())
    try:
        model_path = str(Path(project.model_path).resolve().relative_to(script_path.parent))
    except ValueError:
        model_path = str(Path(project.model_path).resolve())
    options_text = "{" + ", ".join(
        f"{k!r}: {v}" if k == "operator_export_type" else f"{k!r}: {json.dumps(v) if isinstance(v, bool) else repr(v)}"
        for k, v in options.items()).replace("true", "True").replace("false", "False") + "}"
    parts = [HEADER.format(model_name=Path(project.model_path).name, date=time.strftime("%Y-%m-%d"),
                           script_name=script_path.name, model_path=model_path, default_opset=DEFAULT_OPSET, input_specs=project.input_specs,
                           input_file=project.input_file, seed=project.seed, opset=opset,
                           export_options=options_text, custom_opsets=custom_opsets),
             LOADER.replace("{trust!r}", repr(project.trust))]
    if any(m.instance for m in project.mappings):
        parts.append(INSTANCE_KEYS)
        parts.append(BY_INSTANCE)
    python_op_fixes = [m for m in project.mappings if m.python_op_name or m.target_kind == "prim::PythonOp"]
    if python_op_fixes and all(m.python_op_name and not m.instance for m in python_op_fixes):
        parts.append(ATTACH_TO_FUNCTIONS)
    elif python_op_fixes:
        if not any(m.instance for m in project.mappings):
            parts.append("\n\ndef _instance_key(node):\n    return None\n")
        parts.append(BY_FUNCTION)
    parts += [_fix_function(i, m) for i, m in enumerate(project.mappings, 1)]
    parts.append(_registration(project.mappings))
    parts.append(MAIN.format(output=output_onnx, default_opset=DEFAULT_OPSET))
    return "".join(parts)


def write_fix_script(project: Project, script_path: str | Path, output_onnx: str, opset: int | None = None) -> Path:
    script_path = Path(script_path)
    atomic_write_text(script_path, fix_script_text(project, script_path, output_onnx, opset))
    script_path.chmod(0o755)
    return script_path
