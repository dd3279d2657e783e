"""Open a transformers checkpoint folder (save_pretrained, or a hub-cache snapshot), offline, on top of
transformers' own exporter (``transformers.exporters``).

The task comes from the config's architectures (``--task`` overrides); the model loads through the
task's auto class. A generative task is split as transformers' exporter splits it
(``decompose_for_generation``: prefill and decode, a multimodal model's parts), from a real
``generate()`` on example inputs; any other task is one ``model`` component called with its forward
inputs. Each component is one export: the chosen one becomes the LoadedModel, called through
transformers' ``prepare_for_export`` and its model patches, its inputs and outputs named by their
leaf paths as transformers' ONNX exporter names them, its dynamic dims found by capturing the
components a second time at another batch and sequence length.

Without ``transformers.exporters`` (a transformers older than 5), or with ``--component model`` on a
generative task, the folder takes the plain path (``plain.py``): the model's forward as one
component, ``model``.
"""
from __future__ import annotations

import traceback
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..errors import FixportError, InputSpecError, ModelLoadError
from ..inputs import InputChoices, flat_model
from .inputs import ExampleSizes, example_inputs
from .plain import PLAIN_COMPONENT, load_plain_checkpoint
from .shared_model import shared_model
from .tasks import GENERATION_TASKS, auto_class_for, task_of

SINGLE_COMPONENT = "model"  # transformers' name for a one-graph export
SECOND_SIZES = ExampleSizes(batch=3, sequence=5)  # the second capture: which dims follow batch and length
BATCH_DIM = "batch"
PROMPT_LENGTH_DIM = "seq"  # a prompt's (or a batch of text's) length
PAST_DIM = "past"  # the cache's length, growing as decoding goes
ENCODER_LENGTH_DIM = "encoder_seq"  # an encoder-decoder's encoded length, seen by every decode step
DECODE_COMPONENT = "decode"
ONNX_PATCHES = "onnx"  # transformers' patches for an export to ONNX, over its dynamo ones
LATER_STEP = 2  # the forward call of the second decode step (call 0 is the prefill)
AUTO_DTYPE = "auto"  # keep the checkpoint's own dtype, as transformers' exporter does
CHECKPOINT_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@dataclass
class CheckpointInfo:
    """What a LoadedModel opened from a checkpoint folder is: its task and which component it exports."""

    task: str
    component: str
    components: list[str]
    architecture: str
    config: Any = field(default=None, repr=False)  # transformers' config, for saving the export beside it
    generation_config: Any = field(default=None, repr=False)
    kwargs: dict[str, Any] = field(default_factory=dict, repr=False)  # the component's forward inputs
    model: torch.nn.Module | None = field(default=None, repr=False)  # the whole model (generation check)
    example_prompt: dict[str, Any] = field(default_factory=dict, repr=False)  # generate() inputs
    plain: bool = False  # the plain path: the model's forward as one component, without transformers' exporter
    dtype: str = "float32"  # the dtype its weights were exported in
    checkpoint_dtype: str = ""  # the checkpoint's own (its config's dtype), "" where the config names none
    chosen_dtype: str = AUTO_DTYPE  # what --dtype asked for


def exporters_module() -> Any | None:
    """transformers.exporters' utilities, or None where this transformers has no transformers.exporters."""
    try:
        import transformers.exporters.exporter_dynamo  # noqa: F401  (registers the model patches)
        import transformers.exporters.exporter_onnx  # noqa: F401  (registers the ONNX patches)
        import transformers.exporters.utils as exporter_utils
    except ImportError:
        return None
    return exporter_utils


def load_checkpoint_folder(path: Path, inputs: InputChoices, task: str | None, component: str | None,
                           dtype: str | None = None
                           ) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...], list[str], dict[str, Any], Any,
                                      CheckpointInfo, list[str]]:
    """(module, example tensors, input names, settings, structure, checkpoint info, notes) for one component,
    its weights in ``dtype`` (None or "auto": the checkpoint's own)."""
    exporter_utils = exporters_module()
    from transformers import AutoConfig
    from transformers.utils import logging as transformers_logging

    if hasattr(transformers_logging, "disable_progress_bar"):  # older transformers have no bars to disable
        transformers_logging.disable_progress_bar()  # "Loading weights" bars on stderr, in every command's output
    transformers_logging.set_verbosity_error()  # generate()'s advice on its own settings, at every capture

    try:
        config = AutoConfig.from_pretrained(path, local_files_only=True)
    except Exception as exc:
        raise ModelLoadError(f"Cannot read {path.name}/config.json: {_first_error_line(exc)}",
                             "Check that the folder was written by save_pretrained (or is a hub snapshot).",
                             details=traceback.format_exc()) from exc
    task = task or task_of(config)
    auto_class = auto_class_for(task, config)
    chosen = dtype or AUTO_DTYPE
    if chosen != AUTO_DTYPE and chosen not in CHECKPOINT_DTYPES:
        raise ModelLoadError(f"Unknown dtype {chosen!r} for {path.name}.",
                             f"Choose one of {AUTO_DTYPE}, {', '.join(CHECKPOINT_DTYPES)} with --dtype.")
    try:
        model = shared_model(path, auto_class, chosen, lambda: auto_class.from_pretrained(
            path, local_files_only=True, dtype=CHECKPOINT_DTYPES.get(chosen, AUTO_DTYPE)).eval())
    except Exception as exc:
        raise ModelLoadError(f"{auto_class.__name__} cannot load {path.name}: {_first_error_line(exc)}",
                             "Check that its weights (model.safetensors or pytorch_model.bin, sharded or not) are "
                             "complete, or choose another --task.", details=traceback.format_exc()) from exc
    generative = task in GENERATION_TASKS and model.can_generate()
    dtypes = _dtypes(model, config, chosen)
    if exporter_utils is None or (generative and component == PLAIN_COMPONENT):
        loaded = _plain_path(path, model, config, task, inputs, component, exporters_absent=exporter_utils is None)
        loaded[5].dtype, loaded[5].checkpoint_dtype, loaded[5].chosen_dtype = dtypes
        return loaded
    first = _components(model, config, ExampleSizes(), generative, inputs, exporter_utils)
    names = list(first)
    picked = component or names[0]
    if picked not in first:
        raise ModelLoadError(f"{path.name} has no component {picked!r}; transformers' exporter splits it into "
                             f"{', '.join(names)}.", f"Choose one with --component ({', '.join(names)}).")
    module, kwargs = first[picked]
    module, kwargs, output_flags = exporter_utils.prepare_for_export(module, kwargs)
    exporter_utils_register(module)
    wrapped = PatchedForExport(module, output_flags)
    flat, tensors, structure = flat_model(wrapped, (), dict(kwargs), path.name)
    input_names, output_names = _io_names(wrapped, kwargs, tensors, exporter_utils)
    split = (f"; component {picked} of {', '.join(names)}, as transformers.exporters decomposes it (--component "
             "to change)") if len(names) > 1 else ""
    notes = [f"Checkpoint folder: task {task} (--task to change), {type(model).__name__}{split}; called under "
             "transformers.exporters' patches (with the dynamo exporter, its ONNX patches too)."]
    axes = _dynamic_axes(model, config, generative, inputs, exporter_utils, picked, input_names, tensors, notes)
    settings = {"export_options": {"dynamic_axes": axes, "output_names": output_names}}
    prompt = example_inputs(model, config, ExampleSizes(), for_generation=True, given=inputs.specs,
                            seed=inputs.seed) if generative else {}
    info = CheckpointInfo(task, picked, names, type(model).__name__, config,
                          getattr(model, "generation_config", None) if generative else None, dict(kwargs), model,
                          prompt)
    info.dtype, info.checkpoint_dtype, info.chosen_dtype = dtypes
    return flat, tensors, input_names, settings, structure, info, notes


def _dtypes(model: torch.nn.Module, config: Any, chosen: str) -> tuple[str, str, str]:
    """(the dtype the weights are in, the checkpoint's own from its config ("" where it names none), --dtype)."""
    own = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    own_name = str(own).removeprefix("torch.") if own is not None else ""
    weights = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.get_default_dtype())
    return str(weights).removeprefix("torch."), own_name, chosen


def _plain_path(path: Path, model: torch.nn.Module, config: Any, task: str, inputs: InputChoices,
                component: str | None, *, exporters_absent: bool
                ) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...], list[str], dict[str, Any], Any, CheckpointInfo,
                           list[str]]:
    """The model's forward as one component, ``model``: where transformers' exporter is absent, or asked for."""
    if component not in (None, PLAIN_COMPONENT):
        import transformers

        raise ModelLoadError(f"{path.name} has no component {component!r}: transformers {transformers.__version__} "
                             "has no transformers.exporters to split it, so the plain path exports one component, "
                             f"{PLAIN_COMPONENT}.",
                             f"Leave out --component (or give --component {PLAIN_COMPONENT}); install "
                             "\"transformers>=5\" for transformers' exporter and its components.")
    flat, tensors, names, settings, structure, kwargs = load_plain_checkpoint(path, model, config, inputs)
    if exporters_absent:
        import transformers

        how = (f"transformers {transformers.__version__} has no transformers.exporters, so the plain path is used: "
               "the model's forward as one component, model, with inputs from its signature and config.json (no "
               'patches, no prefill/decode split, no generation check; install "transformers>=5" for those)')
    else:
        how = (f"the plain path (--component {PLAIN_COMPONENT}): the model's forward as one graph with its cache off, "
               "inputs from its signature and config.json; transformers' exporter splits it into components with the "
               "cache (--component prefill, decode)")
    notes = [f"Checkpoint folder: task {task} (--task to change), {type(model).__name__}; {how}."]
    info = CheckpointInfo(task, PLAIN_COMPONENT, [PLAIN_COMPONENT], type(model).__name__, config, None, kwargs, model,
                          plain=True)
    return flat, tensors, names, settings, structure, info, notes


def exporter_utils_register(module: torch.nn.Module) -> None:
    """transformers' cache classes (and the model's own) as pytrees, before the inputs are taken apart."""
    from transformers.exporters.exporter_dynamo import register_cache_pytrees_for_model

    register_cache_pytrees_for_model(module)


class PatchedForExport(torch.nn.Module):
    """A component called as transformers' exporter calls it: its model patches installed, its output
    flags (use_cache, return_dict) on the config, the stateful attributes reset, and its outputs as a
    flat dict of tensors named by their leaf paths (``logits``, ``cache.layers.0.keys``).

    While torch.export captures it, transformers' ONNX patches are installed too, as its
    ``OnnxExporter`` installs them over the dynamo ones: they rewrite torch calls whose ONNX
    translation differs from torch (an attention row masked at every key, which torch answers with
    zeros and torch_lib's boolean-mask attention with the mean of the values). They are written for
    torch.export (``torch._check``, ``guard_or_false``), so the TorchScript tracer and eager runs go
    without them.
    """

    def __init__(self, model: torch.nn.Module, output_flags: dict[str, Any]) -> None:
        super().__init__()
        self.model = model
        self.output_flags = output_flags

    def forward(self, **kwargs: Any) -> dict[str, torch.Tensor]:
        from transformers.exporters.utils import duplicate_leaf_tensors, get_leaf_tensors

        return get_leaf_tensors(duplicate_leaf_tensors(self.model_outputs(**kwargs)))

    def model_outputs(self, **kwargs: Any) -> Any:
        """What the model itself returns (a ModelOutput, its cache inside), under the exporter's patches."""
        from transformers.exporters.exporter_dynamo import patch_model_config, reset_model_state
        from transformers.exporters.utils import apply_patches

        with ExitStack() as stack:
            stack.enter_context(apply_patches("dynamo"))
            if torch.compiler.is_exporting():
                stack.enter_context(apply_patches(ONNX_PATCHES))
            stack.enter_context(reset_model_state(self.model))
            stack.enter_context(patch_model_config(self.model, self.output_flags))
            return self.model(**kwargs)


def _components(model: torch.nn.Module, config: Any, sizes: ExampleSizes, generative: bool, inputs: InputChoices,
                exporter_utils: Any) -> dict[str, tuple[torch.nn.Module, dict[str, Any]]]:
    """{name: (module, forward kwargs)} as transformers' exporter decomposes the model."""
    given = inputs.specs if sizes == ExampleSizes() else _resized(inputs, sizes)
    kwargs = example_inputs(model, config, sizes, for_generation=generative, given=given, seed=inputs.seed)
    if not generative:
        return {SINGLE_COMPONENT: (model, kwargs)}
    try:
        with torch.no_grad():
            return exporter_utils.decompose_for_generation(model, kwargs)
    except Exception as exc:
        cause = exc.__cause__ or exc
        raise InputSpecError(f"generate() on the example prompt failed ({', '.join(kwargs)}): "
                             f"{type(cause).__name__}: {_first_error_line(cause)}",
                             "Give the inputs generate() needs with --input NAME=DIMS[:DTYPE], or choose a task "
                             "without generation with --task.", details=traceback.format_exc()) from exc


def _resized(inputs: InputChoices, sizes: ExampleSizes) -> list:
    """The user's --input specs at the second capture's batch (their other dims as given)."""
    return [type(spec)(spec.name, (sizes.batch, *spec.shape[1:]), spec.dtype) if spec.shape else spec
            for spec in inputs.specs]


def _io_names(wrapped: PatchedForExport, kwargs: dict[str, Any], tensors: tuple[torch.Tensor, ...],
              exporter_utils: Any) -> tuple[list[str], list[str]]:
    """Input and output names as transformers' ONNX exporter gives them (leaf paths, ``input.``/``output.``
    where one name is both), so its runners feed the saved graphs."""
    leaves = exporter_utils.get_leaf_tensors(kwargs)
    with torch.no_grad():
        outputs = wrapped(**kwargs)
    input_names, output_names = exporter_utils.disambiguate_io_names(list(leaves), list(outputs))
    if len(input_names) != len(tensors) or any(a.shape != b.shape for a, b in zip(leaves.values(), tensors)):
        raise FixportError("transformers' leaf paths do not follow the inputs' pytree order.",
                           "This is a Fixport bug; please report it with the log file.")
    return input_names, output_names


def _dynamic_axes(model: torch.nn.Module, config: Any, generative: bool, inputs: InputChoices, exporter_utils: Any,
                  component: str, input_names: list[str], tensors: tuple[torch.Tensor, ...],
                  notes: list[str]) -> dict[str, dict[int, str]]:
    """The dims that follow the batch size, the prompt's length and, for a decode step, the decoding:
    the component captured again at another batch and length (and a decode one step later), each dim
    that moved named after what moved it (equal names are equal dims)."""
    try:
        second = _components(model, config, SECOND_SIZES, generative, inputs, exporter_utils)[component]
        later = _later_decode_step(model, config, inputs, exporter_utils) if component == DECODE_COMPONENT else None
    except FixportError:
        notes.append("The component could not be captured at a second size: every dim stays static.")
        return {}
    _, kwargs, _ = exporter_utils.prepare_for_export(second[0], second[1])
    by_prompt = [tuple(t.shape) for t in exporter_utils.get_leaf_tensors(kwargs).values()]
    by_step = [tuple(t.shape) for t in later.values()] if later is not None else [tuple(t.shape) for t in tensors]
    if len(by_prompt) != len(tensors) or len(by_step) != len(tensors):
        notes.append("The component takes other inputs at a second size: every dim stays static.")
        return {}
    stepping = [size for tensor, shape in zip(tensors, by_step) for size, moved in zip(tensor.shape, shape)
                if size != moved]
    first, axes = ExampleSizes(), {}
    for name, tensor, prompt_shape, step_shape in zip(input_names, tensors, by_prompt, by_step):
        for axis, (size, other_prompt, next_step) in enumerate(zip(tensor.shape, prompt_shape, step_shape)):
            if size != next_step:  # grows as the decoding goes: the past (and a mask one above it)
                dim = _offset_name(PAST_DIM, size - min(stepping))
            elif size == other_prompt:
                continue
            elif (size, other_prompt) == (first.batch, SECOND_SIZES.batch):
                dim = BATCH_DIM
            elif size - first.sequence == other_prompt - SECOND_SIZES.sequence:
                length = ENCODER_LENGTH_DIM if component == DECODE_COMPONENT else PROMPT_LENGTH_DIM
                dim = _offset_name(length, size - first.sequence)
            else:
                dim = f"{name}_dim{axis}"
            axes.setdefault(name, {})[axis] = dim
    return axes


def _offset_name(base: str, offset: int) -> str:
    """``past``, ``past_plus_1``: dims a fixed amount apart keep one base name (the other sizes move them together)."""
    return base if offset == 0 else f"{base}_plus_{offset}" if offset > 0 else f"{base}_minus_{-offset}"


def _later_decode_step(model: torch.nn.Module, config: Any, inputs: InputChoices,
                       exporter_utils: Any) -> dict[str, torch.Tensor]:
    """The leaves of the decode step after the one transformers' decomposition captures (same prompt):
    what grows as decoding goes (an encoder-decoder's decoder past does not follow the prompt)."""
    import copy

    prompt = example_inputs(model, config, ExampleSizes(), for_generation=True, given=inputs.specs, seed=inputs.seed)
    generation_config = copy.deepcopy(model.generation_config)
    generation_config.max_new_tokens = generation_config.min_new_tokens = LATER_STEP + 1
    try:
        with torch.no_grad(), exporter_utils._capture_forward(model) as calls:
            model.generate(**prompt, generation_config=generation_config)
    except Exception as exc:
        raise FixportError(f"generate() failed: {_first_error_line(exc)}") from exc
    if len(calls) <= LATER_STEP:
        raise FixportError("generate() stopped before a second decode step")
    call = calls[LATER_STEP]
    call.pop("logits_to_keep", None)
    _, call, _ = exporter_utils.prepare_for_export(model, call)
    return exporter_utils.get_leaf_tensors(call)


def _first_error_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
