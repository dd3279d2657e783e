"""Write a standalone Python script that reproduces a project's fixed export without Fixport.

The script needs only torch, onnx, numpy and the model file. Each fix's source is embedded as
it is in the project (inside a function, so several templates' module-level names cannot clash)
and registered the way the exporter expects: per op kind, per node instance, or by
autograd.Function name. What must match Fixport exactly -- instance keys, random inputs, how a
Function's fix is called -- is not rewritten here: the script carries the source of Fixport's
own tested functions, copied from their files (the text ``inspect.getsource`` gives), so it
cannot drift from them.
"""
from __future__ import annotations

import ast
import dataclasses
import importlib.util
import json
import re
import textwrap
import time
from pathlib import Path

from fixport.core.model.atomic_files import atomic_write_text
from fixport.core.model.export_options import DEFAULT_OPSET
from fixport.core.model.inputs import InputSpec, parse_input_spec
from fixport.core.model.project import FixMapping, Project
from fixport.symbolics.template_form import PARAMS_NAME, defines_params, import_block, injected_names_used

# Fixport's code the script carries, by module: top-level names in the order they are needed.
# (Read from the files: importing them would import torch, which the command line never does.)
VOCABULARY_PARTS = ("fixport.core.model.vocabulary", (
    "PYTHON_OP_KIND", "SCOPE_SEPARATOR", "INSTANCE_KEY_SEPARATOR", "python_op_kind", "display_kind",
    "scope_from_torchscript", "instance_base", "instance_key"))
INSTANCE_KEY_PARTS = ("fixport.core.loaders.torchscript_graph", (
    "_FRAME_RE", "_TORCH_DIR", "_STDLIB_DIR", "_PACKAGE_DIRS",  # not _LIBRARY_DIRS: it names Fixport's folder
    "_is_library_frame", "user_source_line", "python_op_name", "display_kind", "instance_base",
    "instance_keys", "all_nodes"))
INPUT_PARTS = ("fixport.core.loaders.input_tensors", ("random_inputs",))
FUNCTION_FIX_PARTS = ("fixport.core.exporters.function_symbolics", ("autograd_functions_named", "_keyword_arguments"))
GIVEN_INPUTS_PARTS = ("fixport.core.exporters.given_inputs", ("given_inputs_only", "_trimmed_signature"))
PYTHON_OP_PARTS = ("fixport.core.exporters.symbolic_registration", ("_accepts_kwargs", "_copy_output_types"))


def _module_tree(module: str) -> tuple[str, ast.Module]:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ImportError(f"cannot find {module}")
    source = Path(spec.origin).read_text(encoding="utf-8")
    return source, ast.parse(source)


def _top_level_definitions(tree: ast.Module) -> dict[str, ast.stmt]:
    found: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = node
        elif isinstance(node, ast.Assign):
            found.update({target.id: node for target in node.targets if isinstance(target, ast.Name)})
    return found


def fixport_source(module: str, names: tuple[str, ...]) -> str:
    """The source of Fixport's top-level functions and constants ``names`` in ``module``, as
    written there (a function's decorators included)."""
    source, tree = _module_tree(module)
    lines = source.splitlines(keepends=True)
    found = _top_level_definitions(tree)
    missing = [name for name in names if name not in found]
    if missing:
        raise LookupError(f"{module} has no {', '.join(missing)}")
    blocks = []
    for name in names:
        node = found[name]
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        text = "".join(lines[first - 1:node.end_lineno])
        blocks.append(f"\n\n{text}" if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else text)
    return f"\n\n# ---- from {module} (Fixport's own code) ----\n" + "".join(blocks).lstrip("\n")


def fixport_namespace(variable: str, module: str, names: tuple[str, ...]) -> str:
    """Fixport's code from ``module`` kept apart under ``variable`` (its names would clash)."""
    body = textwrap.indent(fixport_source(module, names).strip("\n").replace("\n\n\n", "\n\n"), "    ")
    return (f"\n\ndef _{variable}():\n{body}\n\n    return types.SimpleNamespace(**locals())\n\n\n"
            f"{variable} = _{variable}()\n")


def imported_names(importer: str, module: str) -> str:
    """``importer``'s ``from module import a, b`` as ``a = ns.a`` lines over ``module``'s namespace."""
    _, tree = _module_tree(importer)
    names = [alias.name for node in tree.body if isinstance(node, ast.ImportFrom) and node.module == module
             for alias in node.names]
    variable = module.rsplit(".", 1)[-1]
    return "".join(f"{name} = {variable}.{name}\n" for name in names)


HEADER = '''#!/usr/bin/env python3
"""Export {model_name} to ONNX with the fixes chosen in Fixport ({date}).

Standalone: needs torch, onnx and the model file, not Fixport.
Run:  python {script_name} [-o OUTPUT.onnx]
"""
from __future__ import annotations

import argparse
import collections
import functools
import importlib.util
import inspect
import os
import re
import sys
import types
from contextlib import contextmanager
from typing import Any, Callable, Iterable  # annotations in Fixport's code below

import numpy as np
import onnx
import torch
from torch.onnx import register_custom_op_symbolic
{template_imports}
MODEL_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), {model_path!r})
InputSpec = collections.namedtuple("InputSpec", {input_spec_fields!r})
INPUT_SPECS = {input_specs}  # random with SEED; empty: the model file's own inputs
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
        arrays = random_inputs(INPUT_SPECS, SEED)  # Fixport's own function, below: the same values
        inputs = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in arrays.values())
    return model.eval(), inputs, settings


def input_names(model, inputs):
    """The ONNX input names Fixport used: the --input names, else forward()'s parameters."""
    if INPUT_SPECS:
        return [spec.name for spec in INPUT_SPECS]
    if isinstance(model, torch.jit.ScriptModule):
        names = [argument.name for argument in model.forward.schema.arguments[1:]]
    else:
        try:
            parameters = inspect.signature(model.forward).parameters.values()
        except (TypeError, ValueError):
            parameters = []
        names = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = names[:len(inputs)]
    return names if len(names) == len(inputs) else [f"input_{i}" for i in range(len(inputs))]
'''

INSTANCE_KEY_CONSTANTS = """

# Instance keys name one node: module scope | user's source line | kind | occurrence; the
# code that makes them below is Fixport's own. Frames inside torch, the standard library or
# this script are never "the user's line".
_LIBRARY_DIRS = (os.path.dirname(torch.__file__) + os.sep, os.path.abspath(__file__))
Counter = collections.Counter
"""

KEYED_EXPORT = '''

_key_of_node = {}  # filled when the exporter hands over the TorchScript graph


def _instance_key(node):
    return _key_of_node.get(node, "")


def _key_nodes_before_conversion():
    """Key every node of the graph the exporter is about to convert, as Fixport does."""
    convert = torch._C._jit_pass_onnx

    def keyed(graph, operator_export_type):
        _key_of_node.clear()
        _key_of_node.update(instance_keys(all_nodes(graph)))
        return convert(graph, operator_export_type)

    torch._C._jit_pass_onnx = keyed
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
    """Each fix becomes the static `symbolic` of the autograd.Functions of that name. (A registered
    prim::PythonOp symbolic would stop torch inlining every other Function.)"""
    for name, fix in table.items():
        for cls in autograd_functions_named(name):
            keywords = _keyword_arguments(fix, name, cls)
            cls.symbolic = staticmethod(lambda g, *args, _fix=fix, _kw=keywords: _fix(g, *args, **_kw))
'''

BY_FUNCTION = '''

def _by_function(table):
    """One prim::PythonOp symbolic for every autograd.Function, chosen by the Function's name."""

    def symbolic(g, *args, **kwargs):
        name = kwargs.get("name", "")
        key = _instance_key(g.original_node) if any(i for _, i in table) else None
        chosen = table.get((name, key)) or table.get((name, None))
        if chosen is None:
            raise RuntimeError(f"no fix for autograd.Function {name}")
        accepted = _accepts_kwargs(inspect.unwrap(chosen))
        passed = kwargs if accepted is None else {k: v for k, v in kwargs.items() if k in accepted}
        return _copy_output_types(chosen(g, *args, **passed), g.original_node)

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
    with given_inputs_only(model, len(inputs)):  # forward()'s other parameters keep their defaults
        torch.onnx.export(model, inputs, args.output, opset_version=opset, custom_opsets=CUSTOM_OPSETS or None,
                          dynamo=False, **options)
    onnx.checker.check_model(args.output, full_check=True)
    print(f"Wrote {{args.output}}")


if __name__ == "__main__":
    main()
'''


CARRIED_MODULE_LOADER = '''

def _carry_module(name, source):
    """Let the fixes' ``from fixport... import`` find Fixport's module, carried below as its source."""
    parts = name.split(".")
    for depth in range(1, len(parts)):
        package = ".".join(parts[:depth])
        if package not in sys.modules:
            sys.modules[package] = types.ModuleType(package)
            sys.modules[package].__path__ = []
    module = types.ModuleType(name)
    module.__file__ = f"<fixport module {name}>"
    sys.modules[name] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
'''

_FIXPORT_IMPORT_RE = re.compile(r"^\s*from (fixport\.[\w.]+) import", re.M)


def carried_modules(mappings: list[FixMapping]) -> str:
    """Fixport modules that fixes import (the torch_lib bridge, decomposition replay), carried as
    they are in Fixport's files; they import only torch, onnx and onnxscript."""
    modules = sorted({name for mapping in mappings for name in _FIXPORT_IMPORT_RE.findall(mapping.source)})
    if not modules:
        return ""
    parts = [CARRIED_MODULE_LOADER]
    for name in modules:
        source, _ = _module_tree(name)
        parts.append(f"\n\n# ---- {name} (Fixport's own code, imported by a fix) ----\n"
                     f"_carry_module({name!r}, {source!r})\n")
    return "".join(parts)


def _fix_function(index: int, mapping: FixMapping) -> str:
    """The template's source, wrapped so its module-level names stay its own.

    As in Fixport, the values set for the fix replace the template's default ``params`` after
    its source runs; a template in the old form, which reads ``params`` without defining it,
    gets them before.
    """
    source = re.sub(r"^from __future__ import .*$", "", mapping.source.rstrip(), flags=re.M)
    old_form = PARAMS_NAME in injected_names_used(source)
    lines = [f"{PARAMS_NAME} = chosen_params  # the template reads params without defining it"] if old_form else []
    lines.append(source)
    if old_form or defines_params(source):
        lines.append(f"{PARAMS_NAME} = {{**{PARAMS_NAME}, **chosen_params}}  # the values set replace the defaults")
    lines.append("return symbolic")
    body = textwrap.indent("\n\n".join(lines), "    ")
    return (f"\n\n# ---- fix {index}: {mapping.label} -> {mapping.template_id}"
            f"{' (edited)' if mapping.edited else ''} ----\n"
            f"def _fix_{index}(chosen_params):\n{body}\n\n\nfix_{index} = _fix_{index}({mapping.params!r})\n")


def _registration(mappings: list[FixMapping]) -> str:
    lines = ["\n\ndef register_fixes(opset):", '    """Register every fix with the TorchScript exporter."""']
    if any(m.instance for m in mappings):
        lines.append("    _key_nodes_before_conversion()")
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
    old_form_names = set().union(*(injected_names_used(m.source) for m in project.mappings))
    specs = [parse_input_spec(text) for text in project.input_specs]
    parts = [HEADER.format(model_name=Path(project.model_path).name, date=time.strftime("%Y-%m-%d"),
                           script_name=script_path.name, model_path=model_path, default_opset=DEFAULT_OPSET,
                           template_imports=import_block(old_form_names - {"torch"}),
                           input_spec_fields=[f.name for f in dataclasses.fields(InputSpec)],
                           input_specs="[" + ", ".join(f"InputSpec{dataclasses.astuple(spec)!r}" for spec in specs) + "]",
                           input_file=project.input_file, seed=project.seed, opset=opset,
                           export_options=options_text, custom_opsets=custom_opsets),
             LOADER.replace("{trust!r}", repr(project.trust)), fixport_source(*INPUT_PARTS),
             fixport_source(*GIVEN_INPUTS_PARTS)]
    if any(m.instance for m in project.mappings):
        parts += [INSTANCE_KEY_CONSTANTS, fixport_namespace("vocabulary", *VOCABULARY_PARTS),
                  imported_names(INSTANCE_KEY_PARTS[0], VOCABULARY_PARTS[0]), fixport_source(*INSTANCE_KEY_PARTS),
                  KEYED_EXPORT, BY_INSTANCE]
    python_op_fixes = [m for m in project.mappings if m.python_op_name or m.target_kind == "prim::PythonOp"]
    if python_op_fixes and all(m.python_op_name and not m.instance for m in python_op_fixes):
        parts += [fixport_source(*FUNCTION_FIX_PARTS), ATTACH_TO_FUNCTIONS]
    elif python_op_fixes:
        parts += [fixport_source(*PYTHON_OP_PARTS), BY_FUNCTION]
    parts.append(carried_modules(project.mappings))
    parts += [_fix_function(i, m) for i, m in enumerate(project.mappings, 1)]
    parts.append(_registration(project.mappings))
    parts.append(MAIN.format(output=output_onnx, default_opset=DEFAULT_OPSET))
    return "".join(parts)


def write_fix_script(project: Project, script_path: str | Path, output_onnx: str, opset: int | None = None) -> Path:
    script_path = Path(script_path)
    atomic_write_text(script_path, fix_script_text(project, script_path, output_onnx, opset))
    script_path.chmod(0o755)
    return script_path
