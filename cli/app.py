"""The headless command line: ``python main.py <command>``. Every GUI action is reachable here."""
from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path
from typing import Any, Callable, Sequence

from fixport.core.model.errors import FixportError
from fixport.core.model.inputs import InputOptions, parse_input_spec

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_ERROR = 2
ERROR_LOG = Path.home() / ".cache" / "fixport" / "last-error.log"

CommandHandler = Callable[[argparse.Namespace], int]
_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], CommandHandler]] = {}


def command(name: str, help_text: str, configure: Callable[[argparse.ArgumentParser], None]):
    """Register a sub-command; its module adds itself when imported by :func:`build_parser`."""
    def register(handler: CommandHandler) -> CommandHandler:
        _COMMANDS[name] = (help_text, configure, handler)
        return handler
    return register


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """MODEL plus the options that say how to open it and export it."""
    parser.add_argument("model", help="model file: .py with build(), .pt/.ts TorchScript, .pt2, pickled .pt, .onnx")
    parser.add_argument("--opset", type=int, help="ONNX opset (7-20); default: the file's own, else 17")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=DIMS[:DTYPE]",
                        help="random input, e.g. x=1x3x224x224:float32 (repeatable)")
    parser.add_argument("--inputs", metavar="FILE", help="inputs from a .npz or .pt file")
    parser.add_argument("--seed", type=int, default=0, help="seed for --input random values")
    parser.add_argument("--trust", action="store_true", help="allow unpickling a torch.save'd module (runs its code)")
    parser.add_argument("--path", action="append", default=[], metavar="DIR",
                        help="folder to import the model's source from (repeatable)")
    parser.add_argument("--export-type", choices=("ONNX", "ONNX_ATEN_FALLBACK", "ONNX_FALLTHROUGH"))
    parser.add_argument("--no-constant-folding", action="store_true")
    parser.add_argument("--no-autograd-inlining", action="store_true",
                        help="keep autograd.Functions as prim::PythonOp")
    parser.add_argument("--input-names", help="comma-separated ONNX input names")
    parser.add_argument("--output-names", help="comma-separated ONNX output names")
    parser.add_argument("--dynamic-axes", metavar="JSON", help='e.g. {"x": {"0": "batch"}}')
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a hung export is stopped")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def model_request(args: argparse.Namespace):
    from fixport.core.model.model_files import existing_model_path
    from fixport.core.model.results import ModelRequest

    specs = [parse_input_spec(text) for text in args.input]
    return ModelRequest(path=str(existing_model_path(args.model)),
                        inputs=InputOptions(specs=specs, input_file=args.inputs, seed=args.seed),
                        trust=args.trust, search_paths=[str(Path(p).resolve()) for p in args.path])


def job_arguments(args: argparse.Namespace) -> tuple[Any, dict[str, Any], list]:
    """(model request, export options, fixes) from the flags and, with --project, the project:
    the project's fixes, inputs and options, with flags given on the command line winning."""
    from fixport.core.model.project import load_project

    request, options, mappings = model_request(args), export_overrides(args), []
    if getattr(args, "project", None):
        project = load_project(args.project)
        options, mappings = {**project.export_options, **options}, list(project.mappings)
        if not args.input and not args.inputs:
            request.inputs = project.input_options()
    return request, options, mappings


def export_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Only the export options the user actually set; the model file's own fill the rest."""
    overrides: dict[str, Any] = {"opset": args.opset, "operator_export_type": args.export_type}
    if args.no_constant_folding:
        overrides["do_constant_folding"] = False
    if args.no_autograd_inlining:
        overrides["autograd_inlining"] = False
    if args.input_names:
        overrides["input_names"] = [n.strip() for n in args.input_names.split(",")]
    if args.output_names:
        overrides["output_names"] = [n.strip() for n in args.output_names.split(",")]
    if args.dynamic_axes:
        try:
            axes = json.loads(args.dynamic_axes)
            overrides["dynamic_axes"] = {name: {int(k): v for k, v in dims.items()} for name, dims in axes.items()}
        except (ValueError, AttributeError) as exc:
            raise FixportError(f"--dynamic-axes is not valid: {exc}",
                               'Write it as JSON, e.g. {"x": {"0": "batch"}}.') from exc
    return {k: v for k, v in overrides.items() if v is not None}


def print_json(payload: Any) -> None:
    json.dump(payload, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def build_parser() -> argparse.ArgumentParser:
    from fixport.cli import check_export, compare, fixing  # noqa: F401  (importing registers the commands)

    parser = argparse.ArgumentParser(prog="python main.py", description=(
        "Fixport: find and fix what torch.onnx.export cannot handle. "
        "Without a command, the workbench window opens on a built-in example."))
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (help_text, configure, handler) in _COMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        configure(sub)
        sub.set_defaults(handler=handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return EXIT_ERROR
    try:
        return args.handler(args)
    except FixportError as exc:
        print(f"error: {exc.user_text()}", file=sys.stderr)
        if exc.details:
            _save_error_log(exc.details)
            print(f"  (details: {ERROR_LOG})", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # a bug of ours: a clear line for the user, the traceback in the log
        _save_error_log(traceback.format_exc())
        print(f"error: unexpected {type(exc).__name__}: {exc}\n  → This is a Fixport bug; "
              f"the details are in {ERROR_LOG}.", file=sys.stderr)
        return EXIT_ERROR


def _save_error_log(text: str) -> None:
    try:
        ERROR_LOG.parent.mkdir(parents=True, exist_ok=True)
        ERROR_LOG.write_text(text, encoding="utf-8")
    except OSError:
        pass
