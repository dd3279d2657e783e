"""What every command shares: exit codes, the command registry, the model arguments and the
file roles that keep an output from overwriting an input. Command modules import this; app.py
builds the parser from what they register (no module imports app.py)."""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fixport.core.exporters.profiles import opsets_text
from fixport.core.foundation.errors import FixportError
from fixport.core.project.dynamic_shapes import dynamic_axes_from_shapes
from fixport.core.project.export_options import normalised_dynamic_axes
from fixport.core.project.inputs import InputOptions, parse_input_spec
from fixport.core.project.model_files import refuse_non_regular_file
from fixport.core.project.shape_sets import parse_shape_set
from fixport.core.words.vocabulary import (
    CHECKPOINT_DTYPES,
    CHECKPOINT_TASKS,
    DEFAULT_EXPORTER,
    DEFAULT_OPSET,
    EXPORTERS,
)
from fixport.core.worker.client import DEFAULT_JOB_TIMEOUT_S

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_ERROR = 2
# Which arguments name files a command reads, and which it writes (never one over another).
FILE_ROLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "check": (("model", "inputs", "project"), ()),
    "export": (("model", "inputs", "project"), ("output",)),
    "fix": (("model", "inputs"), ("output", "onnx")),
    "compare": (("model", "inputs", "project", "onnx"), ()),
    "script": (("project",), ("output",)),
    "sweep": ((), ("json", "markdown", "junit")),
}
GUI_LOG_HINT = "See the Log for details."  # the worker's generic hint, worded for the window

CommandHandler = Callable[[argparse.Namespace], int]
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], CommandHandler]] = {}


def command(name: str, help_text: str, configure: Callable[[argparse.ArgumentParser], None]):
    """Register a sub-command; its module adds itself when imported by :func:`build_parser`."""
    def register(handler: CommandHandler) -> CommandHandler:
        COMMANDS[name] = (help_text, configure, handler)
        return handler
    return register


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """MODEL plus the options that say how to open it and export it."""
    parser.add_argument("model", help="model file: .py with build(), .pt/.ts TorchScript, .pt2, pickled .pt, .onnx; "
                                      "or a transformers checkpoint folder (config.json and weights)")
    parser.add_argument("--opset", type=int,
                        help=f"ONNX opset ({opsets_text()}); default: the file's own, else {DEFAULT_OPSET} "
                             "with torchscript and torch.onnx's own default for dynamo=True with dynamo")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=DIMS[:DTYPE]",
                        help="random input, e.g. x=1x3x224x224:float32 (repeatable)")
    parser.add_argument("--inputs", metavar="FILE", help="inputs from a .npz or .pt file")
    parser.add_argument("--seed", type=int, default=0, help="seed for --input random values")
    parser.add_argument("--trust", action="store_true", help="allow unpickling a torch.save'd module (runs its code)")
    parser.add_argument("--path", action="append", default=[], metavar="DIR",
                        help="folder to import the model's source from (repeatable)")
    parser.add_argument("--task", choices=CHECKPOINT_TASKS,
                        help="a checkpoint folder's task (default: from its config.json's architectures)")
    parser.add_argument("--component", metavar="NAME",
                        help="which part of a checkpoint folder to export, as transformers' exporter splits it "
                             "(prefill, decode, ...; default: the first); model on a generative task: the plain "
                             "path, the model's forward as one graph without the cache")
    parser.add_argument("--dtype", choices=CHECKPOINT_DTYPES,
                        help="the dtype a checkpoint folder's weights are exported in (default: auto, the "
                             "checkpoint's own from its config.json, as transformers' exporter does); the report "
                             "says what each ONNX Runtime provider runs fast")
    parser.add_argument("--exporter", choices=EXPORTERS,
                        help=f"torchscript: torch.onnx.export(dynamo=False); dynamo: the torch.export-based one "
                             f"(dynamo=True); default: the file's own, else {DEFAULT_EXPORTER}")
    parser.add_argument("--export-type", choices=("ONNX", "ONNX_ATEN_FALLBACK", "ONNX_FALLTHROUGH"))
    parser.add_argument("--no-constant-folding", action="store_true")
    parser.add_argument("--no-autograd-inlining", action="store_true",
                        help="keep autograd.Functions as prim::PythonOp")
    parser.add_argument("--input-names", help="comma-separated ONNX input names")
    parser.add_argument("--output-names", help="comma-separated ONNX output names")
    parser.add_argument("--dynamic-axes", metavar="JSON", help='by input name, e.g. {"x": {"0": "batch"}}')
    parser.add_argument("--dynamic-shapes", metavar="JSON",
                        help='as torch.export takes them, nested like the inputs, e.g. {"input_ids": {"0": "batch", '
                             '"1": "seq"}, "past": [{"0": "batch", "2": "past"}, ...]}; equal names are equal dims')
    parser.add_argument("--timeout", type=positive_seconds, default=DEFAULT_JOB_TIMEOUT_S, metavar="SECONDS",
                        help=f"stop a job that shows no progress for this long (default {DEFAULT_JOB_TIMEOUT_S:g} s; "
                             "a job that keeps advancing is never stopped)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def positive_seconds(text: str) -> float:
    """argparse type for --timeout: a finite number of seconds above zero."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number of seconds above 0, e.g. --timeout 300")
    return value


def refuse_overwriting_inputs(args: argparse.Namespace) -> None:
    """Before any work: every file read is a regular file, and no output lands on an input or on
    another output (``fix m.py -o m.py`` would replace the model's source with the project)."""
    input_names, output_names = FILE_ROLES.get(args.command, ((), ()))
    inputs = {f"the {_flag(name)}": getattr(args, name) for name in input_names if getattr(args, name, None)}
    if args.command == "script" or getattr(args, "project", None) in inputs.values():
        inputs.update(_project_files(args.project))
    for role, path in inputs.items():
        if Path(path).exists() and not Path(path).is_dir():
            refuse_non_regular_file(Path(path), role.removeprefix("the "))
    claimed = {os.path.realpath(path): role for role, path in inputs.items()}
    for name in output_names:
        path = getattr(args, name, None)
        if not path:
            continue
        target = os.path.realpath(path)
        if target in claimed:
            raise FixportError(f"{_flag(name)} {path} is {claimed[target]} of this command: writing it would "
                               "destroy it. Nothing was written.", "Choose another output file name.")
        claimed[target] = f"the {_flag(name)}"


def _flag(name: str) -> str:
    return {"model": "model file", "project": "project (--project)", "inputs": "inputs file (--inputs)",
            "output": "output (-o)", "onnx": "--onnx file"}.get(name, f"--{name}")


def _project_files(project_path: str) -> dict[str, str]:
    """The files a project names: its model and its inputs file (an unreadable project is left to the command)."""
    from fixport.core.project.project import load_project

    if not Path(project_path).is_file():
        return {}
    try:
        project = load_project(project_path)
    except FixportError:
        return {}
    files = {"the project's model file": project.model_path}
    if project.input_file:
        files["the project's inputs file"] = str(Path(project_path).resolve().parent / project.input_file)
    return files


def model_request(args: argparse.Namespace):
    from fixport.core.project.model_files import existing_model_path
    from fixport.core.records.results import ModelRequest

    specs = [parse_input_spec(text) for text in args.input]
    return ModelRequest(path=str(existing_model_path(args.model)),
                        inputs=InputOptions(specs=specs, input_file=args.inputs, seed=args.seed),
                        trust=args.trust, search_paths=[str(Path(p).resolve()) for p in args.path],
                        task=args.task, component=args.component, dtype=getattr(args, "dtype", None))


def job_arguments(args: argparse.Namespace) -> tuple[Any, dict[str, Any], list]:
    """(model request, export options, fixes) from the flags and, with --project, the project:
    the project's fixes, inputs and options, with flags given on the command line winning."""
    from fixport.core.project.project import load_project

    request, options, mappings = model_request(args), export_overrides(args), []
    if getattr(args, "project", None):
        project = load_project(args.project)
        for note in project.load_notes:  # said once: saving the project keeps the converted text
            print(f"note: {note}", file=sys.stderr)
        options, mappings = {**project.export_options, **options}, list(project.mappings)
        if not args.input and not args.inputs:
            request.inputs = project.input_options()
        request.task, request.component = request.task or project.task, request.component or project.component
        request.dtype = request.dtype or project.dtype
    return request, options, mappings


def add_shapes_argument(parser: argparse.ArgumentParser) -> None:
    """--shapes: input shapes to check at besides the traced ones (instead of the derived ones)."""
    parser.add_argument("--shapes", action="append", default=[], metavar="NAME=DIMS[,NAME=DIMS]",
                        help="also run torch and ONNX Runtime at these input shapes, e.g. x=3x12 (repeatable: one "
                             "input set each; unnamed inputs keep their shape); default: a larger and a smaller "
                             "size of each dim declared in --dynamic-axes, and dims of one example size apart")


def shape_sets(args: argparse.Namespace) -> list[dict[str, tuple[int, ...]]]:
    return [parse_shape_set(text) for text in getattr(args, "shapes", [])]


def project_shapes(args: argparse.Namespace) -> list[dict[str, tuple[int, ...]]]:
    """The shapes to check saved in --project (set in the window, or by fix --shapes)."""
    from fixport.core.project.project import load_project

    return load_project(args.project).other_shapes() if getattr(args, "project", None) else []


def export_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Only the export options the user actually set; the model file's own fill the rest."""
    overrides: dict[str, Any] = {"opset": args.opset, "operator_export_type": args.export_type,
                                 "exporter": getattr(args, "exporter", None)}
    if args.no_constant_folding:
        overrides["do_constant_folding"] = False
    if args.no_autograd_inlining:
        overrides["autograd_inlining"] = False
    if args.input_names:
        overrides["input_names"] = [n.strip() for n in args.input_names.split(",")]
    if args.output_names:
        overrides["output_names"] = [n.strip() for n in args.output_names.split(",")]
    if args.dynamic_axes or getattr(args, "dynamic_shapes", None):
        overrides["dynamic_axes"] = _dynamic_axes(args)
    return {k: v for k, v in overrides.items() if v is not None}


def _dynamic_axes(args: argparse.Namespace) -> dict[str, dict[int, str]] | None:
    """--dynamic-axes and --dynamic-shapes (converted to axes by input name), merged."""
    axes: dict[str, dict[int, str]] = {}
    for flag, text, convert in (("--dynamic-shapes", getattr(args, "dynamic_shapes", None), dynamic_axes_from_shapes),
                                ("--dynamic-axes", args.dynamic_axes, normalised_dynamic_axes)):
        if not text:
            continue
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise FixportError(f"{flag} is not valid JSON: {exc}",
                               'Write it as JSON, e.g. {"x": {"0": "batch"}}.') from exc
        try:
            for name, dims in (convert(value) or {}).items():
                axes.setdefault(name, {}).update(dims)
        except FixportError as exc:
            raise FixportError(f"{flag}: {exc.message}", exc.hint) from exc
    return axes or None

