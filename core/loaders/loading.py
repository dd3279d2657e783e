"""Open a model file: a Python model file, a TorchScript archive, an ExportedProgram, a
pickled module (with --trust), or an ONNX file. Every failure becomes a ModelLoadError."""
from __future__ import annotations

import importlib.util
import inspect
import logging
import re
import sys
import traceback
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fixport.core.foundation.checkpoints.folder import CheckpointInfo, load_checkpoint_folder
from fixport.core.foundation.errors import InputSpecError, MissingInputsError, ModelLoadError
from fixport.core.foundation.input_sets import flat_input_sets, proposed_dynamic_axes, several_input_sets
from fixport.core.foundation.inputs import (
    InputStructure,
    UnsupportedInputError,
    distinct_names,
    flat_model,
    keyed_output_names,
    positional_names,
    random_inputs,
    split_inputs,
)
from fixport.core.foundation.torch_arrays import tensor_from_array
from fixport.core.loaders.input_tensors import load_input_file
from fixport.core.project.dynamic_shapes import dynamic_axes_from_shapes
from fixport.core.project.inputs import InputOptions, InputSpec
from fixport.core.project.model_files import (
    EXPORTED_PROGRAM_SUFFIXES,
    ONNX_SUFFIXES,
    PYTHON_SUFFIXES,
    existing_model_path,
)
from fixport.core.words.errors import ExportError, UntrustedFileError
from fixport.core.words.vocabulary import AUTO_DTYPE


@dataclass
class LoadedModel:
    """A model ready to trace and export (``module`` is None for an ONNX-only file)."""

    path: Path
    source_kind: str  # "python", "torchscript", "exported_program", "pickled_module", "onnx", "checkpoint"
    module: torch.nn.Module | None
    example_inputs: tuple[torch.Tensor, ...]
    input_names: list[str]
    settings: dict[str, Any] = field(default_factory=dict)  # the file's FIXPORT_EXAMPLE, if any
    notes: list[str] = field(default_factory=list)
    memo: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)  # results worth keeping per model
    # Where the example tensors sit in the model's own call (None: a plain tuple of tensors);
    # ``module`` is then a StructuredCall that rebuilds it.
    structure: InputStructure | None = None
    # build()'s other input sets (set 2, 3, ...), flat like example_inputs, and the dynamic dims
    # they show (None: one set given)
    other_input_sets: list[tuple[torch.Tensor, ...]] = field(default_factory=list)
    proposed_dynamic_axes: dict[str, dict[int, str]] | None = None
    checkpoint: CheckpointInfo | None = None  # a transformers checkpoint folder: its task and component


def onnx_output_names(loaded: LoadedModel, given: list[str] | None) -> list[str] | None:
    """The names the export gives the ONNX outputs: the user's, else the keys of a structured model's
    outputs (computed once per model), else None (the exporter's own)."""
    if given:
        return distinct_names(list(given), list(loaded.input_names))
    if "keyed_output_names" not in loaded.memo and loaded.module is not None:
        loaded.memo["keyed_output_names"] = keyed_output_names(loaded.module, loaded.example_inputs,
                                                               list(loaded.input_names))
    return loaded.memo.get("keyed_output_names")


def load_model(path: str | Path, inputs: InputOptions | None = None, *, trust: bool = False,
               search_paths: list[str] | None = None, task: str | None = None,
               component: str | None = None, dtype: str | None = None) -> LoadedModel:
    """Load any supported model file (or checkpoint folder, its weights in ``dtype``) and settle its example inputs."""
    path = existing_model_path(path)
    if path.is_dir():
        return _load_checkpoint(path, inputs or InputOptions(), task, component, dtype)
    if dtype not in (None, AUTO_DTYPE):
        raise InputSpecError(f"--dtype {dtype} applies to a checkpoint folder, not to the model file {path.name}: "
                             "a model file's build() chooses its own dtype.",
                             f"Leave out --dtype, or cast in build() (model.to(torch.{dtype})).")
    with _extra_sys_path([str(path.parent), *(search_paths or [])]):
        loaded = _load_by_format(path, trust)
        if loaded.module is not None:
            loaded.module.eval()
    return _apply_input_options(loaded, inputs or InputOptions())


def _load_checkpoint(path: Path, inputs: InputOptions, task: str | None, component: str | None,
                     dtype: str | None) -> LoadedModel:
    """A transformers checkpoint folder: one component, inputs made from its config (``--input`` fills
    or replaces them by name; an inputs file is for model files)."""
    if inputs.input_file:
        raise InputSpecError("--inputs FILE does not apply to a checkpoint folder: its inputs are made from its "
                             "config.json.", "Give an input's size with --input NAME=DIMS[:DTYPE] instead.")
    module, tensors, names, settings, structure, info, notes = load_checkpoint_folder(path, inputs, task, component,
                                                                                      dtype)
    module.eval()
    return LoadedModel(path, "checkpoint", module, tensors, names, settings=settings, notes=notes,
                       structure=structure, checkpoint=info)


def _load_by_format(path: Path, trust: bool) -> LoadedModel:
    suffix = path.suffix.lower()
    if suffix in PYTHON_SUFFIXES:
        return _load_python_model_file(path)
    if suffix in ONNX_SUFFIXES:
        return _load_onnx_file(path)
    if suffix in EXPORTED_PROGRAM_SUFFIXES:
        return _load_exported_program(path)
    return _load_torch_archive(path, trust)


def _load_python_model_file(path: Path) -> LoadedModel:
    module_name = f"fixport_model_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ModelLoadError(f"Cannot import {path.name} as Python.", "Check that it is a .py file.")
    namespace = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = namespace  # dataclasses and pickling inside the file need it
    try:
        spec.loader.exec_module(namespace)
        if hasattr(namespace, "build"):
            built = namespace.build()
        elif hasattr(namespace, "model") and hasattr(namespace, "example_inputs"):
            built = (namespace.model, namespace.example_inputs)
        else:
            raise ModelLoadError(
                f"{path.name} defines neither build() nor `model` and `example_inputs`.",
                "Add `def build(): return model, (example_input, ...)` to the file.")
    except ModelLoadError:
        raise
    except SyntaxError as exc:
        where = Path(exc.filename).name if exc.filename and Path(exc.filename) != path else path.name
        line = f" line {exc.lineno}" if exc.lineno else ""
        raise ModelLoadError(f"Syntax error in {where}{line}: {exc.msg}", "Fix the file and open it again.",
                             details=traceback.format_exc()) from exc
    except SystemExit as exc:
        raise ModelLoadError(f"{path.name} called sys.exit({exc.code!r}) while loading{_user_line(exc, path)}.",
                             "A model file must not exit: put script code under "
                             "`if __name__ == \"__main__\":`.", details=traceback.format_exc()) from exc
    except BaseException as exc:  # the user's code may raise anything
        raise ModelLoadError(f"{path.name} raised {type(exc).__name__}: {exc}{_user_line(exc, path)}",
                             "Fix the model file's code and open it again.",
                             details=traceback.format_exc()) from exc
    model, example_inputs, structure, other_sets = _check_built(built, path)
    settings = getattr(namespace, "FIXPORT_EXAMPLE", {})
    settings = dict(settings) if isinstance(settings, dict) else {}
    _declare_dynamic_shapes(settings, getattr(namespace, "dynamic_shapes", None), path)
    names = structure.names if structure else _forward_argument_names(model, len(example_inputs))
    loaded = LoadedModel(path, "python", model, example_inputs, names, settings=settings, structure=structure,
                         other_input_sets=other_sets)
    if other_sets:
        _propose_dynamic_axes(loaded)
    if structure:
        loaded.notes.append(f"The model is called with its own arguments; its {len(names)} tensor input(s) are "
                            f"named from them: {', '.join(names)}.")
    return loaded


def _declare_dynamic_shapes(settings: dict[str, Any], shapes: Any, path: Path) -> None:
    """A model file's ``dynamic_shapes`` (torch.export's, a dict or a function returning one) as the
    dynamic axes of its export options, unless those name their own."""
    if shapes is None:
        return
    try:
        axes = dynamic_axes_from_shapes(shapes() if callable(shapes) else shapes)
    except ExportError as exc:
        raise ModelLoadError(f"dynamic_shapes in {path.name}: {exc.message}", exc.hint) from exc
    options = dict(settings.get("export_options", {}))
    options.setdefault("dynamic_axes", axes)
    settings["export_options"] = options


def _propose_dynamic_axes(loaded: LoadedModel) -> None:
    """The dims that vary between build()'s input sets; the export's dynamic axes where the model
    file declares none (``core/loaders/input_sets.py``)."""
    try:
        proposed = proposed_dynamic_axes(loaded.input_names, [loaded.example_inputs, *loaded.other_input_sets])
    except Exception as exc:  # noqa: BLE001 -- torch's inference; the sets are still checked and compared
        loaded.notes.append(f"The dims that vary between the input sets could not be inferred: {exc}")
        return
    loaded.proposed_dynamic_axes = proposed
    options = dict(loaded.settings.get("export_options", {}))
    if proposed and not options.get("dynamic_axes"):
        options["dynamic_axes"] = proposed
        loaded.settings["export_options"] = options


def _check_built(built: Any, path: Path) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...], InputStructure | None,
                                                  list[tuple[torch.Tensor, ...]]]:
    """The module to export, its example tensors, their structure where the model's call is more
    than a tuple of tensors (the module is then a StructuredCall), and the tensors of build()'s
    other input sets, when it gives a list of them."""
    shapes = "(model, args), (model, kwargs) or (model, args, kwargs)"
    if not (isinstance(built, tuple) and len(built) in (2, 3)):
        raise ModelLoadError(f"build() in {path.name} must return {shapes}.",
                             "Return a tuple: the nn.Module, then its example inputs as torch.onnx.export takes them.")
    model, *given = built
    if not isinstance(model, torch.nn.Module):
        raise ModelLoadError(f"build() in {path.name} returned {type(model).__name__} as the model.",
                             "Return a torch.nn.Module first.")
    try:
        sets = several_input_sets(given)
        if sets:
            return flat_input_sets(model, sets, path.name)
        args, kwargs = split_inputs(given)
        return (*flat_model(model, args, kwargs, path.name), [])
    except UnsupportedInputError as exc:
        raise ModelLoadError(f"build() in {path.name}: {exc.message}", exc.hint) from exc


def _user_line(exc: BaseException, path: Path) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
    return f" (at {path.name} line {frames[-1].lineno})" if frames else ""


def _load_onnx_file(path: Path) -> LoadedModel:
    from fixport.core.onnx_io.onnx_files import read_model_file

    read_model_file(path, "model file")
    return LoadedModel(path, "onnx", None, (), [], notes=["ONNX file: inspect and compare only, no export."])


def _load_exported_program(path: Path) -> LoadedModel:
    hint = "Save it with torch.export.save(exported_program, path)."
    if not zipfile.is_zipfile(path):
        raise ModelLoadError(f"{path.name} is not a readable ExportedProgram: it is not a .pt2 (zip) archive.", hint)
    # torch.export.load logs a full traceback as a warning before it raises; the error below says it all.
    export_logger = logging.getLogger("torch.export")
    level = export_logger.level
    export_logger.setLevel(logging.ERROR)
    try:
        program = torch.export.load(str(path))
    except Exception as exc:
        reason = str(exc).splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        if "warnings above" in reason:  # torch's text points at the log lines silenced above
            reason = "the archive holds no exported program"
        raise ModelLoadError(f"{path.name} is not a readable ExportedProgram: {reason}.", hint,
                             details=traceback.format_exc()) from exc
    finally:
        export_logger.setLevel(level)
    args: tuple[torch.Tensor, ...] = ()
    example = getattr(program, "example_inputs", None)
    if example and all(isinstance(t, torch.Tensor) for t in example[0]):
        args = tuple(example[0])
    names = [spec.arg.name for spec in program.graph_signature.input_specs
             if spec.kind.name == "USER_INPUT"]
    # ep.module() refuses train()/eval(), which the exporter calls; the unflattened module
    # accepts them and keeps the module hierarchy that torch.export preserved.
    try:
        module = torch.export.unflatten(program)
        note = "ExportedProgram: traced through torch.export.unflatten(ep), which restores its module hierarchy."
    except Exception:
        module = _InferenceOnly(program.module())
        note = ("ExportedProgram: traced through ep.module(); torch.export flattened its module "
                "hierarchy, so every node shows at the top level.")
    return LoadedModel(path, "exported_program", module, args, names, notes=[note])


class _InferenceOnly(torch.nn.Module):
    """Hides a module whose train()/eval() raise (ep.module()) from the exporter's mode switch."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        object.__setattr__(self, "_inner", inner)  # not a child: train() must not reach it

    def forward(self, *args: Any) -> Any:
        return self._inner(*args)


def _load_torch_archive(path: Path, trust: bool) -> LoadedModel:
    entries = _zip_entries(path)
    if any(name.endswith("constants.pkl") or "/code/" in name for name in entries):
        try:
            module = torch.jit.load(str(path), map_location="cpu")
        except Exception as exc:
            raise ModelLoadError(f"{path.name} is not a loadable TorchScript archive: {exc}",
                                 "Save it with torch.jit.save(torch.jit.script(model), path).") from exc
        names = [arg.name for arg in module.forward.schema.arguments[1:]]
        return LoadedModel(path, "torchscript", module, (), names, notes=[
            "TorchScript archive: runs without the model's source."])
    if not entries:
        raise ModelLoadError(f"{path.name} is not a PyTorch archive (not a zip file).",
                             "Open a file written by torch.save, torch.jit.save or torch.export.save.")
    safe = _load_weights_only(path)
    if isinstance(safe, dict):
        raise ModelLoadError(f"{path.name} holds a state_dict (weights only), not a model.",
                             "Write a Python model file whose build() creates the model and loads it.")
    if safe is not None:
        raise ModelLoadError(f"{path.name} holds a {type(safe).__name__}, not a model.",
                             "Save the model itself with torch.save(model, path).")
    if not trust:
        raise UntrustedFileError(
            f"{path.name} is a pickled file (torch.save). Unpickling it runs code stored in the file.",
            "If you trust where it came from, open it again with --trust "
            "(and --path DIR if its classes live in your own source folder).")
    try:
        obj = torch.load(str(path), map_location="cpu", weights_only=False)
    except Exception as exc:
        raise ModelLoadError(f"Cannot unpickle {path.name}: {exc}",
                             "Its classes must be importable: pass their source folder with --path DIR.",
                             details=traceback.format_exc()) from exc
    if isinstance(obj, dict):
        raise ModelLoadError(f"{path.name} holds a state_dict (weights only), not a model.",
                             "Write a Python model file whose build() creates the model and loads it.")
    if not isinstance(obj, torch.nn.Module):
        raise ModelLoadError(f"{path.name} holds a {type(obj).__name__}, not an nn.Module.",
                             "Save the model itself with torch.save(model, path).")
    return LoadedModel(path, "pickled_module", obj, (), _forward_argument_names(obj, 0))


def _load_weights_only(path: Path) -> Any:
    """The file's content if it unpickles safely (tensors, dicts, lists), else None."""
    try:
        return torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception:  # it holds arbitrary objects (a pickled module): not safe to load
        return None


def _zip_entries(path: Path) -> list[str]:
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.namelist()
    except (zipfile.BadZipFile, OSError):
        return []


def _forward_argument_names(model: torch.nn.Module, count: int) -> list[str]:
    """ONNX input names from forward's parameters (``*past`` gives past.0, past.1, ...); with no
    example inputs (an archive's dialog asks for them), every positional parameter's name."""
    if count:
        return positional_names(model, count)
    try:
        return [p.name for p in inspect.signature(model.forward).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return []


def _apply_input_options(loaded: LoadedModel, options: InputOptions) -> LoadedModel:
    if loaded.source_kind == "onnx":
        return loaded
    arrays: dict[str, np.ndarray] | None = None
    if options.input_file:
        arrays = load_input_file(options.input_file)
    elif options.specs:
        specs = _specs_in_model_order(options.specs, loaded)
        arrays = random_inputs(specs, options.seed)
    if arrays is not None:
        tensors = {name: tensor_from_array(a) for name, a in arrays.items()}
        if loaded.structure is None and _needs_keywords(list(tensors), loaded):
            _call_with_keywords(loaded, tensors)
        else:
            loaded.example_inputs = tuple(tensors.values())
            loaded.input_names = list(tensors)
        if loaded.other_input_sets:
            loaded.notes.append(f"The inputs given on the command line replace the {len(loaded.other_input_sets) + 1} "
                                "input sets of build(): only they are checked and compared.")
            loaded.other_input_sets, loaded.proposed_dynamic_axes = [], None
    elif not loaded.example_inputs:
        wanted = ", ".join(loaded.input_names) or "x"
        raise MissingInputsError(
            f"{loaded.path.name} carries no example inputs.",
            f"Give them with --input NAME=1x3x224x224[:float32] (inputs: {wanted}) or --inputs FILE.npz.")
    if len(loaded.input_names) != len(loaded.example_inputs):
        loaded.input_names = [f"input_{i}" for i in range(len(loaded.example_inputs))]
    return loaded


def _needs_keywords(given: list[str], loaded: LoadedModel) -> bool:
    """Whether the inputs given must be passed by keyword: they skip a positional parameter
    (``input_ids`` and ``token_type_ids`` without ``attention_mask``) or name a keyword-only one."""
    positional = loaded.input_names
    return bool(given) and set(given) != set(positional[:len(given)]) and set(given) <= set(_parameter_names(loaded))


def _call_with_keywords(loaded: LoadedModel, tensors: dict[str, torch.Tensor]) -> None:
    """Call the model as ``model(name=tensor, ...)``: the module becomes a StructuredCall over the keywords."""
    assert loaded.module is not None
    keywords = {name: tensors[name] for name in _parameter_names(loaded) if name in tensors}
    module, flat, structure = flat_model(loaded.module, (), keywords, loaded.path.name)
    loaded.module, loaded.example_inputs, loaded.structure = module, flat, structure
    loaded.input_names = structure.names if structure else list(keywords)
    loaded.notes.append(f"The model is called with keyword arguments: {', '.join(loaded.input_names)}.")


def _parameter_names(loaded: LoadedModel) -> list[str]:
    """Every parameter of forward a tensor can be passed to by name, in order."""
    module = loaded.module
    if module is None:
        return []
    schema = getattr(getattr(module, "forward", None), "schema", None)
    if schema is not None:  # a TorchScript archive's forward
        return [argument.name for argument in schema.arguments[1:]]
    try:
        parameters = inspect.signature(module.forward).parameters.values()
    except (TypeError, ValueError):
        return list(loaded.input_names)
    return [p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _specs_in_model_order(specs: list[InputSpec], loaded: LoadedModel) -> list[InputSpec]:
    """The --input specs in forward()'s order; an error when one names no input of the model
    (a typo would otherwise pass its tensor to the wrong argument, or be silently ignored)."""
    known = [name for name in _parameter_names(loaded) or loaded.input_names if not re.fullmatch(r"input_\d+", name)]
    if not known:  # forward(*args): the names carry no meaning, keep the order given
        return list(specs)
    unknown = [spec.name for spec in specs if spec.name not in known]
    if unknown:
        raise InputSpecError(
            f"{loaded.path.name} has no input named {', '.join(repr(n) for n in unknown)}; "
            f"its inputs are: {', '.join(known)}.",
            f"Name the inputs as forward() does, e.g. --input {known[0]}=1x3x224x224.")
    return sorted(specs, key=lambda spec: known.index(spec.name))


class _extra_sys_path:
    """Temporarily put folders first on sys.path so model files import their neighbours."""

    def __init__(self, folders: list[str]) -> None:
        self.folders = [f for f in folders if f not in sys.path]

    def __enter__(self) -> None:
        sys.path[:0] = self.folders

    def __exit__(self, *exc_info: object) -> None:
        for folder in self.folders:
            if folder in sys.path:
                sys.path.remove(folder)
