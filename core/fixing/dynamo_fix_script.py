"""The standalone fix script for the dynamo exporter: ``torch.onnx.export(dynamo=True)`` with the
project's fixes as a ``custom_translation_table`` (and decompositions run on the captured program).

Shares the TorchScript script's pieces (model loader, random inputs, each fix's source wrapped
in a function, carried Fixport modules); a fix for one FX node carries Fixport's own dispatch
on the node being translated, copied from its file so it cannot drift.
"""
from __future__ import annotations

import time
from pathlib import Path

from fixport.core.fixing.fix_script import (
    INPUT_PARTS,
    LOADER,
    _fix_function,
    carried_modules,
    fixport_source,
)
from fixport.core.model.atomic_files import atomic_write_text
from fixport.core.model.project import FixMapping, Project
from fixport.core.model.vocabulary import DEFAULT_OPSET

DYNAMO_FIX_PARTS = ("fixport.core.exporters.dynamo_fixes", ("_TRANSLATING", "_by_instance", "node_being_translated"))
DYNAMO_OPTIONS = ("input_names", "output_names", "dynamic_axes")  # what dynamo=True takes of a project's options

HEADER = '''#!/usr/bin/env python3
"""Export {model_name} to ONNX with the dynamo exporter and the fixes chosen in Fixport ({date}).

Standalone: needs torch, onnx, onnxscript and the model file, not Fixport.
Run:  python {script_name} [-o OUTPUT.onnx]
"""
from __future__ import annotations

import argparse
import collections
import contextvars
import importlib.util
import inspect
import os
import sys
import types
from contextlib import contextmanager, nullcontext
from typing import Any, Callable, Iterator  # annotations in Fixport's code below

import numpy as np
import onnx
import torch

MODEL_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), {model_path!r})
InputSpec = collections.namedtuple("InputSpec", {input_spec_fields!r})
INPUT_SPECS = {input_specs}  # random with SEED; empty: the model file's own inputs
INPUT_FILE = {input_file!r}
SEED = {seed!r}
OPSET = {opset!r}  # None: the model file's FIXPORT_EXAMPLE opset, else {default_opset}
EXPORT_OPTIONS = {export_options!r}
OPTIMIZE = {optimize!r}
'''

TORCHLIB_FUNCTION = '''

def _torchlib_function(target):
    """torch_lib's own ONNX function for ``target`` (for the nodes a per-node fix leaves alone)."""
    from torch.onnx._internal.exporter import _registration

    functions = _registration.ONNXRegistry.from_torchlib().get_decomps(target)
    return functions[0].onnx_function if functions else None
'''

MAIN = '''

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default={output!r})
    args = parser.parse_args()
    model, inputs, settings = load_model()
    opset = OPSET or settings.get("opset") or {default_opset}
    options = {{"input_names": input_names(model, inputs), **EXPORT_OPTIONS}}
    target = model
    if decompositions():  # the fixes that replace an op by torch ops: run them on the captured program
        target = torch.export.export(model, inputs, strict=False).run_decompositions(decompositions())
    with {translating}:
        program = torch.onnx.export(target, inputs, dynamo=True, opset_version=opset, optimize=OPTIMIZE,
                                    custom_translation_table=translation_table() or None, **options)
    program.save(args.output)
    onnx.checker.check_model(args.output, full_check=True)
    print(f"Wrote {{args.output}}")


if __name__ == "__main__":
    main()
'''


def _overload(kind: str) -> str:
    """'aten::pow.Tensor_Scalar' -> 'torch.ops.aten.pow.Tensor_Scalar'."""
    namespace, _, rest = kind.partition("::")
    name, _, overload = rest.partition(".")
    return f"torch.ops.{namespace}.{name}.{overload or 'default'}"


def _is_decomposition(mapping: FixMapping) -> bool:
    from fixport.symbolics.library import TemplateFormatError, parse_template_source

    try:
        return parse_template_source(mapping.source).family == "dynamo_decomposition"
    except TemplateFormatError:
        return False


def _tables(mappings: list[FixMapping]) -> str:
    translations: dict[str, list[tuple[int, FixMapping]]] = {}
    decompositions: list[str] = []
    for index, mapping in enumerate(mappings, 1):
        if _is_decomposition(mapping):
            decompositions.append(f"{_overload(mapping.target_kind)}: fix_{index}")
        else:
            translations.setdefault(mapping.target_kind, []).append((index, mapping))
    entries = []
    for kind, fixes in translations.items():
        if len(fixes) == 1 and fixes[0][1].instance is None:
            entries.append(f"{_overload(kind)}: fix_{fixes[0][0]}")
            continue
        table = ", ".join(f"{m.instance!r}: fix_{i}" for i, m in fixes)
        kind_wide = any(m.instance is None for _, m in fixes)
        builtin = "None" if kind_wide else f"_torchlib_function({_overload(kind)})"
        entries.append(f"{_overload(kind)}: _by_instance({kind!r}, {{{table}}}, {builtin})")
    body = ",\n        ".join(entries)
    return ("\n\ndef translation_table():\n    \"\"\"Op overload -> the fix's ONNX function.\"\"\"\n"
            f"    return {{\n        {body}\n    }}\n" if entries else
            "\n\ndef translation_table():\n    return {}  # no ONNX function to add\n") + (
        "\n\ndef decompositions():\n    \"\"\"Op overload -> the torch function it is replaced by.\"\"\"\n"
        f"    return {{{', '.join(decompositions)}}}\n")


def dynamo_fix_script_text(project: Project, script_path: str | Path, output_onnx: str) -> str:
    """The script's text (see the module docstring)."""
    import dataclasses

    from fixport.core.model.inputs import InputSpec, parse_input_spec

    script_path = Path(script_path).resolve()
    try:
        model_path = str(Path(project.model_path).resolve().relative_to(script_path.parent))
    except ValueError:
        model_path = str(Path(project.model_path).resolve())
    specs = [parse_input_spec(text) for text in project.input_specs]
    per_node = any(m.instance for m in project.mappings)
    parts = [HEADER.format(
        model_name=Path(project.model_path).name, date=time.strftime("%Y-%m-%d"), script_name=script_path.name,
        model_path=model_path, input_spec_fields=[f.name for f in dataclasses.fields(InputSpec)],
        input_specs="[" + ", ".join(f"InputSpec{dataclasses.astuple(spec)!r}" for spec in specs) + "]",
        input_file=project.input_file, seed=project.seed, opset=project.export_options.get("opset"),
        default_opset=DEFAULT_OPSET,
        export_options={k: v for k, v in project.export_options.items() if k in DYNAMO_OPTIONS},
        optimize=bool(project.export_options.get("do_constant_folding", True))),
        LOADER.replace("{trust!r}", repr(project.trust)), fixport_source(*INPUT_PARTS)]
    if per_node:
        parts += [fixport_source(*DYNAMO_FIX_PARTS), TORCHLIB_FUNCTION]
    parts.append(carried_modules(project.mappings))
    parts += [_fix_function(i, m) for i, m in enumerate(project.mappings, 1)]
    parts.append(_tables(project.mappings))
    translating = "node_being_translated()" if per_node else "nullcontext()"
    parts.append(MAIN.format(output=output_onnx, default_opset=DEFAULT_OPSET, translating=translating))
    return "".join(parts)


def write_dynamo_fix_script(project: Project, script_path: str | Path, output_onnx: str) -> Path:
    script_path = Path(script_path)
    atomic_write_text(script_path, dynamo_fix_script_text(project, script_path, output_onnx))
    script_path.chmod(0o755)
    return script_path
