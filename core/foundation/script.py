"""The fix script's own work, for every exporter: open the model the way Fixport did, make its
example inputs, run the exporter's part (its ``export_with_fixes(job)``) and check what it wrote:
``onnx.checker``, then ONNX Runtime against torch at the example inputs, at build()'s other input
sets ("set 2", ...) and, where dynamic axes are declared, at the other sizes Fixport's ``check``
tries (a larger and a smaller size of each declared dim). Where build() gives several input sets
and the model file declares no dynamic dims, the dims that vary between the sets are declared
dynamic, as in Fixport.

The script calls :func:`main` with its settings, its fixes and the exporter part's export function.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import sys
import tempfile
import types
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import onnx
import onnxruntime as ort
import torch

from .bfloat16 import Bfloat16Session, bfloat16_values, has_bfloat16, widen_in_place
from .checkpoints.folder import load_checkpoint_folder
from .comparison import (
    DEFAULT_TOLERANCES,
    FALLBACK_DTYPE,
    as_real_layout,
    difference_metrics,
    flatten_outputs,
    to_numpy,
)
from .dynamic_dims import declared_dims
from .input_sets import dims_inferred_from_sets, flat_input_sets, proposed_dynamic_axes, several_input_sets
from .inputs import StructuredCall, flat_model, keyed_output_names, positional_names, random_inputs, split_inputs
from .low_precision import LOW_PRECISION_NAMES, float32_outputs, within_rounding
from .other_sizes import other_size_inputs
from .session_feeds import feeds_for

ORT_LOG_ERRORS = 3  # ONNX Runtime's own warnings would bury the lines the check prints
TRACED = " (traced)"  # ends the label of the example inputs' shapes
CANNOT_LOAD = "any shape (ONNX Runtime cannot load it)"


class ScriptFix(NamedTuple):
    """One of the project's fixes, as the fix script registers it."""

    function: Callable[..., Any]  # the template's ``symbolic``, its params set
    kind: str  # the op kind (TorchScript) or op overload (dynamo) it fixes
    instance: str | None = None  # only this node (instance key, or FX node name); None: every node
    python_op_name: str | None = None  # the autograd.Function a prim::PythonOp fix is for
    family: str | None = None  # the template's family (how the exporter's part registers it)
    complex_inputs: bool = False  # dynamo: an ONNX function for the op on complex values


class ScriptSettings(NamedTuple):
    """What Fixport chose for the export; the fix script writes them at its top."""

    model_path: str
    trust: bool  # open a pickled model with torch.load, which runs its code
    input_specs: Sequence[Any]  # random inputs (name, shape, dtype); empty: the model file's own
    input_file: str | None  # an .npz or .pt file of inputs, instead of random ones
    seed: int
    opset: int | None  # None: the model file's FIXPORT_EXAMPLE opset, else default_opset
    default_opset: int | None  # None: torch.onnx.export's own default for the exporter
    output: str  # the ONNX file to write (the command line's -o replaces it)
    export_options: dict[str, Any]  # as set in Fixport; the exporter's part takes what applies
    custom_opsets: dict[str, int]  # the fixes' custom domains and their versions
    task: str | None = None  # a checkpoint folder's task (None: from its config.json)
    component: str | None = None  # the component of a checkpoint folder to export (None: the first)
    dtype: str | None = None  # a checkpoint folder's export dtype (None: the checkpoint's own)


class ExportJob(NamedTuple):
    """One export, handed to the exporter's part (its ``export_with_fixes``)."""

    model: Any
    inputs: tuple[Any, ...]
    input_names: list[str]
    output: str
    opset: int | None  # None: torch.onnx.export's own default for the exporter
    model_file_options: dict[str, Any]  # the model file's own FIXPORT_EXAMPLE export_options
    export_options: dict[str, Any]
    custom_opsets: dict[str, int]
    fixes: list[ScriptFix]
    output_names: list[str] | None = None  # from the keys of a structured model's outputs, as in Fixport
    other_input_sets: Sequence[tuple[Any, ...]] = ()  # build()'s sets after the first, flat like ``inputs``
    # Filled by the exporter's part: each says why an input set is outside the sizes the export
    # declares ('' inside); the check skips those sets, as Fixport does.
    size_checks: list[Callable[[Sequence[Any]], str]] | None = None


def load_model(settings: ScriptSettings) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """The model in eval mode, its example inputs and the model file's own settings
    (``FIXPORT_EXAMPLE``), opened the way Fixport opened them."""
    model, inputs, model_file_settings, _ = load_model_and_sets(settings)
    return model, inputs, model_file_settings


def load_model_and_sets(settings: ScriptSettings
                        ) -> tuple[Any, tuple[Any, ...], dict[str, Any], list[tuple[Any, ...]]]:
    """:func:`load_model`, and build()'s input sets after the first, flat like its example inputs."""
    path = settings.model_path
    model_file_settings: dict[str, Any] = {}
    if os.path.isdir(path):  # a transformers checkpoint folder: the component, made as Fixport made it
        given = types.SimpleNamespace(specs=list(settings.input_specs), input_file=None, seed=settings.seed)
        model, inputs, names, model_file_settings, *_ = load_checkpoint_folder(
            pathlib.Path(path), given, settings.task, settings.component, settings.dtype)
        model_file_settings["export_options"]["input_names"] = names
        return model.eval(), tuple(inputs), model_file_settings, []
    other_sets: list[tuple[Any, ...]] = []
    if path.endswith(".py"):
        sys.path.insert(0, os.path.dirname(path))
        spec = importlib.util.spec_from_file_location("fixport_model", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load the model file {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules["fixport_model"] = module
        spec.loader.exec_module(module)
        model, *given = module.build() if hasattr(module, "build") else (module.model, module.example_inputs)
        # keyword, nested or cache inputs: the model called with its own structure from named tensors
        sets = several_input_sets(given)
        if sets:
            model, inputs, _, other_sets = flat_input_sets(model, sets, os.path.basename(path))
        else:
            model, inputs, _ = flat_model(model, *split_inputs(given), os.path.basename(path))
        model_file_settings = dict(getattr(module, "FIXPORT_EXAMPLE", {}))
        if other_sets and not hasattr(module, "dynamic_shapes"):
            _declare_varying_dims(model_file_settings, model, inputs, other_sets)
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
    if settings.input_file or settings.input_specs:  # the inputs given replace build()'s sets, as in Fixport
        other_sets = []
    return model.eval(), inputs, model_file_settings, other_sets


def _declare_varying_dims(model_file_settings: dict[str, Any], model: Any, inputs: tuple[Any, ...],
                          other_sets: list[tuple[Any, ...]]) -> None:
    """The dims that vary between build()'s input sets as the model file's dynamic axes, where it
    declares none (as Fixport's loader does)."""
    options = dict(model_file_settings.get("export_options", {}))
    if options.get("dynamic_axes"):
        return
    proposed = proposed_dynamic_axes(input_names(model, inputs, ()), [inputs, *other_sets])
    if proposed:
        model_file_settings["export_options"] = {**options, "dynamic_axes": proposed}


def input_names(model: Any, inputs: Sequence[Any], input_specs: Sequence[Any]) -> list[str]:
    """The ONNX input names Fixport used: the random inputs' names, else forward()'s parameters."""
    if input_specs:
        return [spec.name for spec in input_specs]
    if isinstance(model, StructuredCall):
        return list(model.structure.names)
    if isinstance(model, torch.jit.ScriptModule):
        names = [argument.name for argument in model.forward.schema.arguments[1:]][:len(inputs)]
        return names if len(names) == len(inputs) else [f"input_{i}" for i in range(len(inputs))]
    return positional_names(model, len(inputs))


def resolved_opset(settings: ScriptSettings, model_file_settings: dict[str, Any]) -> int | None:
    """The opset chosen in Fixport, else the model file's own, else the default (None: torch's own)."""
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


def open_export_job(settings: ScriptSettings, fixes: Sequence[ScriptFix], output: str
                    ) -> tuple[ExportJob, dict[str, Any]]:
    """The export to run, the model opened as Fixport opens it, and the model file's own settings."""
    model, inputs, model_file_settings, other_sets = load_model_and_sets(settings)
    job = ExportJob(model=model, inputs=inputs, input_names=input_names(model, inputs, settings.input_specs),
                    output=output, opset=resolved_opset(settings, model_file_settings),
                    model_file_options=dict(model_file_settings.get("export_options", {})),
                    export_options=dict(settings.export_options), custom_opsets=dict(settings.custom_opsets),
                    fixes=list(fixes), other_input_sets=other_sets, size_checks=[])
    job = job._replace(output_names=keyed_output_names(model, inputs, onnx_input_names(job)))
    return job, model_file_settings


def run_export(export: Callable[[ExportJob], None], job: ExportJob) -> str:
    """Export with ``export`` (the exporter's part) and run ``onnx.checker`` on what it wrote."""
    export(job)
    onnx.checker.check_model(job.output, full_check=True)
    return job.output


def export_fixed_model(export: Callable[[ExportJob], None], settings: ScriptSettings,
                       fixes: Sequence[ScriptFix], output: str) -> str:
    """Open the model, export it to ``output`` with ``export`` (the exporter's part) and check it."""
    job, _ = open_export_job(settings, fixes, output)
    return run_export(export, job)


def onnx_input_names(job: ExportJob) -> list[str]:
    """The names the export gave the ONNX inputs: the options' (the model file's under the project's),
    else the job's."""
    return list({**job.model_file_options, **job.export_options}.get("input_names") or job.input_names)


def _shapes(names: Sequence[str], inputs: Sequence[Any]) -> str:
    return ", ".join(f"{name}=" + ("x".join(str(d) for d in tensor.shape) or "scalar")
                     for name, tensor in zip(names, inputs))


def shapes_to_check(job: ExportJob) -> list[tuple[str, tuple[Any, ...]]]:
    """(label, inputs): the example inputs, build()'s other input sets, then the other sizes of the
    declared dynamic axes, made as Fixport's ``check`` makes them."""
    names, traced = onnx_input_names(job), tuple(job.inputs)
    dynamic_axes = {**job.model_file_options, **job.export_options}.get("dynamic_axes")
    others = other_size_inputs(declared_dims(dynamic_axes, names, [tuple(t.shape) for t in traced]), traced)
    if job.other_input_sets:  # the dims inferred from the sets: checked at the sets' own sizes, as in Fixport
        proposed = proposed_dynamic_axes(list(job.input_names), [traced, *job.other_input_sets])
        others = [] if dims_inferred_from_sets(dynamic_axes, proposed) else others
    sets = enumerate(job.other_input_sets, 2)
    return [(_shapes(names, traced) + TRACED, traced),
            *((f"set {number} ({_shapes(names, inputs)})", inputs) for number, inputs in sets),
            *((f"{label} ({_shapes(names, inputs)})", inputs) for label, inputs in others)]


def output_differences(expected: list[tuple[str, np.ndarray]], actual: Sequence[Any],
                       fix_tolerance: float | None) -> tuple[float, dict[str, str]]:
    """The largest absolute difference, and what is beyond tolerance, by output name. Fixport's
    rule: ``|onnx - torch| <= atol + rtol * |torch|`` with its per-dtype table (exact for ints and
    bools), the model file's ``fix_tolerance`` replacing atol; a shape or dtype that differs fails."""
    worst, wrong = 0.0, {}
    if len(actual) != len(expected):
        wrong["outputs"] = f"torch returns {len(expected)} outputs, ONNX Runtime {len(actual)}"
    for (name, reference), candidate in zip(expected, actual):
        candidate = np.asarray(candidate)
        reference = as_real_layout(reference, candidate)
        if reference.shape != candidate.shape:
            wrong[name] = f"{name}: shape differs: torch {list(reference.shape)}, ONNX {list(candidate.shape)}"
            continue
        if reference.dtype != candidate.dtype:
            wrong[name] = f"{name}: dtype differs: torch {reference.dtype}, ONNX {candidate.dtype}"
            continue
        rtol, atol = _tolerance(str(reference.dtype), fix_tolerance)
        metrics = difference_metrics(reference, candidate, rtol, atol)
        worst = max(worst, metrics["max_abs"])
        if metrics["mismatch_count"]:
            wrong[name] = (f"{name}: max abs diff {metrics['max_abs']:.3g} ({metrics['mismatch_count']} of "
                           f"{metrics['element_count']} beyond rtol {rtol:g}, atol {atol:g})")
    return worst, wrong


def _tolerance(dtype: str, fix_tolerance: float | None) -> tuple[float, float]:
    rtol, atol = DEFAULT_TOLERANCES.get(dtype, DEFAULT_TOLERANCES[FALLBACK_DTYPE])
    return rtol, (atol if fix_tolerance is None else float(fix_tolerance))


def half_precision_rounding(model: Any, inputs: Sequence[Any], expected: list[tuple[str, np.ndarray]],
                            actual: Sequence[Any], wrong: dict[str, str],
                            fix_tolerance: float | None) -> dict[str, str]:
    """Of the ``wrong`` float16/bfloat16 outputs, those within rounding of the model run in float32
    (Fixport's rule: ONNX Runtime no further from it than twice torch's own half-precision run),
    each with a line giving both distances."""
    failing = {index: name for index, (name, value) in enumerate(expected)
               if name in wrong and str(value.dtype) in LOW_PRECISION_NAMES and index < len(actual)
               and np.shape(actual[index]) == value.shape
               and np.asarray(actual[index]).dtype == value.dtype}  # a shape or dtype that differs stays wrong
    reference = float32_outputs(model, inputs) if failing else None
    if reference is None or len(reference) != len(expected):
        return {}
    accepted = {}
    for index, name in failing.items():
        dtype = str(expected[index][1].dtype)
        rounding, onnx_error, torch_error = within_rounding(expected[index][1], np.asarray(actual[index]),
                                                            reference[index][1], _tolerance(dtype, fix_tolerance)[1])
        if rounding:
            accepted[name] = (f"{name}: {dtype} rounding (against the model run in float32, ONNX Runtime is "
                              f"{onnx_error:.3g} off, torch's own {dtype} run {torch_error:.3g})")
    return accepted


def rounding_line(rounding: dict[str, str]) -> str:
    """The outputs off by rounding only, in one clause: the first's line, then how many more."""
    if not rounding:
        return ""
    lines = list(rounding.values())
    more = len(lines) - 1
    return f"; {lines[0]}" + (f"; {more} more output{'s' if more > 1 else ''} likewise" if more else "")


def check_shapes(job: ExportJob, fix_tolerance: float | None = None) -> list[str]:
    """Run the written file in ONNX Runtime (CPU) against torch at each of ``shapes_to_check``,
    printing a line per shape; the shapes where it fails or differs. A shape torch itself
    refuses is skipped, said so: the export cannot be blamed for it."""
    try:
        session = cpu_session(job.output)
    except Exception as exc:  # an op ONNX Runtime does not implement (a custom domain's, say)
        print(f"not checked: ONNX Runtime cannot load it: {_first_line(exc)}")
        return [CANNOT_LOAD]
    names = onnx_input_names(job)
    failed = []
    for label, inputs in shapes_to_check(job):
        try:
            with torch.no_grad():
                expected = flatten_outputs(job.model(*inputs))
        except Exception as exc:  # the model itself does not run there
            print(f"not checked at {label}: torch itself fails there ({type(exc).__name__}: {_first_line(exc)})")
            continue
        outside = next((why for check in job.size_checks or [] for why in [check(inputs)] if why), "")
        if outside:
            print(f"not checked at {label}: outside the sizes the export declares ({outside})")
            continue
        try:
            actual = session.run(None, feeds_for(session, names, [to_numpy(t) for t in inputs]))
        except Exception as exc:  # ONNX Runtime's own exception types
            print(f"checked at {label}: ONNX Runtime FAILED: {_first_line(exc)}")
            failed.append(label)
            continue
        worst, wrong = output_differences(expected, actual, fix_tolerance)
        rounding = half_precision_rounding(job.model, inputs, expected, actual, wrong, fix_tolerance)
        wrong = {name: text for name, text in wrong.items() if name not in rounding}
        verdict = f"MISMATCH {'; '.join(wrong.values())}" if wrong else f"max abs diff {worst:.2g}"
        print(f"checked at {label}: {verdict}" + rounding_line(rounding))
        failed += [label] if wrong else []
    return failed


def cpu_session(path: str) -> Any:
    """ONNX Runtime's CPU session of the written file, from its path so weights saved as external
    data load too. A bfloat16 model runs widened to float32, as Fixport runs it: ONNX Runtime's CPU
    provider has no bfloat16 kernels for most ops."""
    options = ort.SessionOptions()
    options.log_severity_level = ORT_LOG_ERRORS
    graph = onnx.load(path, load_external_data=False)
    if not has_bfloat16(graph):
        return ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])
    model = onnx.load(path)
    widen_in_place(model)
    with tempfile.TemporaryDirectory() as folder:
        widened_path = os.path.join(folder, "widened.onnx")
        onnx.save_model(model, widened_path, save_as_external_data=True, location="widened.onnx.data")
        del model
        session = ort.InferenceSession(widened_path, sess_options=options, providers=["CPUExecutionProvider"])
    print("note: ONNX Runtime's CPU provider has no bfloat16 kernels for most ops: the check runs the model "
          "with its bfloat16 tensors widened to float32 (exactly), rounded where the graph casts to bfloat16")
    return Bfloat16Session(session, bfloat16_values(graph))


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:300]


def main(export: Callable[[ExportJob], None], settings: ScriptSettings, fixes: Sequence[ScriptFix],
         argv: Sequence[str] | None = None) -> None:
    """The script's command line: ``[-o OUTPUT.onnx] [--no-check]``; exits 1 when the written
    file fails in ONNX Runtime or differs from torch at a shape it was checked at."""
    script_doc = getattr(sys.modules.get("__main__"), "__doc__", None) or ""  # the script's own first line
    parser = argparse.ArgumentParser(description=script_doc.strip().partition("\n")[0])
    parser.add_argument("-o", "--output", default=settings.output)
    parser.add_argument("--no-check", action="store_true",
                        help="do not run the written file in ONNX Runtime against torch")
    args = parser.parse_args(argv)
    job, model_file_settings = open_export_job(settings, fixes, args.output)
    print(f"Wrote {run_export(export, job)}")
    if args.no_check:
        return
    failed = check_shapes(job, model_file_settings.get("fix_tolerance"))
    if failed:
        print(f"{job.output} is written, but does not match torch at {'; '.join(failed)}. "
              f"{_advice(failed)} (--no-check skips this check.)", file=sys.stderr)
        sys.exit(1)


def _advice(failed: Sequence[str]) -> str:
    if CANNOT_LOAD in failed:
        return "A custom domain's op needs its ONNX Runtime implementation registered to run."
    if any(label.endswith(TRACED) for label in failed):
        return "It differs at the example inputs: a fix computes something else than the op it replaces."
    return ("It matches at the traced sizes only: the export turned a size into a constant (keep sizes as "
            "tensors: x.size(1) without int(), torch.narrow, reshape with -1), or drop the dynamic axis.")
