"""The part of the fix script every exporter shares: open the model the way Fixport did, make its
example inputs, run the exporter's part and check what it wrote.

The fix script carries this module's source (``fixport.core.fixing.fix_script`` reads it as
text): its imports go to the script's top and its ``from fixport...`` imports are dropped, since
the script carries the source of those functions (``CARRIED_FIXPORT_CODE``) ahead of this code.
Imported as a module, as the tests do, it runs on Fixport's own functions.
"""
from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import onnx
import torch

from fixport.core.loaders.input_tensors import random_inputs

# Fixport's own code this part calls, which the fix script carries by source: (module, its
# top-level names in the order they are needed, a namespace keeping them apart or None).
CARRIED_FIXPORT_CODE = (
    ("fixport.core.loaders.input_tensors", ("random_inputs",), None),
)


class ScriptFix(NamedTuple):
    """One of the project's fixes, as the fix script registers it."""

    function: Callable[..., Any]  # the template's ``symbolic``, its params set
    kind: str  # the op kind (TorchScript) or op overload (dynamo) it fixes
    instance: str | None = None  # only this node (instance key, or FX node name); None: every node
    python_op_name: str | None = None  # the autograd.Function a prim::PythonOp fix is for
    family: str | None = None  # the template's family (how the exporter's part registers it)


class ScriptSettings(NamedTuple):
    """What Fixport chose for the export; the fix script writes them at its top."""

    model_path: str
    trust: bool  # open a pickled model with torch.load, which runs its code
    input_specs: Sequence[Any]  # random inputs (name, shape, dtype); empty: the model file's own
    input_file: str | None  # an .npz or .pt file of inputs, instead of random ones
    seed: int
    opset: int | None  # None: the model file's FIXPORT_EXAMPLE opset, else default_opset
    default_opset: int
    output: str  # the ONNX file to write (the command line's -o replaces it)
    export_options: dict[str, Any]  # as set in Fixport; the exporter's part takes what applies
    custom_opsets: dict[str, int]  # the fixes' custom domains and their versions


class ExportJob(NamedTuple):
    """One export, handed to the exporter's part (its ``export_with_fixes``)."""

    model: Any
    inputs: tuple[Any, ...]
    input_names: list[str]
    output: str
    opset: int
    model_file_options: dict[str, Any]  # the model file's own FIXPORT_EXAMPLE export_options
    export_options: dict[str, Any]
    custom_opsets: dict[str, int]
    fixes: list[ScriptFix]


def load_model(settings: ScriptSettings) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """The model in eval mode, its example inputs and the model file's own settings
    (``FIXPORT_EXAMPLE``), opened the way Fixport opened them."""
    path = settings.model_path
    model_file_settings: dict[str, Any] = {}
    if path.endswith(".py"):
        sys.path.insert(0, os.path.dirname(path))
        spec = importlib.util.spec_from_file_location("fixport_model", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load the model file {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules["fixport_model"] = module
        spec.loader.exec_module(module)
        model, inputs = module.build() if hasattr(module, "build") else (module.model, module.example_inputs)
        model_file_settings = dict(getattr(module, "FIXPORT_EXAMPLE", {}))
    elif path.endswith(".pt2"):
        model, inputs = torch.export.unflatten(torch.export.load(path)), ()
    elif settings.trust:
        model, inputs = torch.load(path, weights_only=False), ()
    else:
        model, inputs = torch.jit.load(path), ()
    inputs = (inputs,) if isinstance(inputs, torch.Tensor) else tuple(inputs)
    if settings.input_file:
        data = np.load(settings.input_file) if settings.input_file.endswith(".npz") else torch.load(settings.input_file)
        inputs = tuple(torch.as_tensor(np.asarray(data[key])) for key in data)
    elif settings.input_specs:
        arrays = random_inputs(list(settings.input_specs), settings.seed)  # Fixport's own: the same values
        inputs = tuple(torch.from_numpy(np.ascontiguousarray(array)) for array in arrays.values())
    return model.eval(), inputs, model_file_settings


def input_names(model: Any, inputs: Sequence[Any], input_specs: Sequence[Any]) -> list[str]:
    """The ONNX input names Fixport used: the random inputs' names, else forward()'s parameters."""
    if input_specs:
        return [spec.name for spec in input_specs]
    if isinstance(model, torch.jit.ScriptModule):
        names = [argument.name for argument in model.forward.schema.arguments[1:]]
    else:
        try:
            parameters = list(inspect.signature(model.forward).parameters.values())
        except (TypeError, ValueError):
            parameters = []
        names = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = names[:len(inputs)]
    return names if len(names) == len(inputs) else [f"input_{i}" for i in range(len(inputs))]


def resolved_opset(settings: ScriptSettings, model_file_settings: dict[str, Any]) -> int:
    """The opset chosen in Fixport, else the model file's own, else the default."""
    return settings.opset or model_file_settings.get("opset") or settings.default_opset


def carry_module(name: str, source: str) -> None:
    """Let the fixes' ``from fixport... import`` find the Fixport module ``name``, carried as its source."""
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


def export_fixed_model(export: Callable[[ExportJob], None], settings: ScriptSettings,
                       fixes: Sequence[ScriptFix], output: str) -> str:
    """Open the model, export it to ``output`` with ``export`` (the exporter's part) and check it."""
    model, inputs, model_file_settings = load_model(settings)
    export(ExportJob(model=model, inputs=inputs, input_names=input_names(model, inputs, settings.input_specs),
                     output=output, opset=resolved_opset(settings, model_file_settings),
                     model_file_options=dict(model_file_settings.get("export_options", {})),
                     export_options=dict(settings.export_options), custom_opsets=dict(settings.custom_opsets),
                     fixes=list(fixes)))
    onnx.checker.check_model(output, full_check=True)
    return output


def main(export: Callable[[ExportJob], None], settings: ScriptSettings, fixes: Sequence[ScriptFix],
         argv: Sequence[str] | None = None) -> None:
    """The script's command line: ``[-o OUTPUT.onnx]``."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().partition("\n")[0])
    parser.add_argument("-o", "--output", default=settings.output)
    args = parser.parse_args(argv)
    print(f"Wrote {export_fixed_model(export, settings, fixes, args.output)}")
