"""The model's example inputs as Fixport makes them: random tensors from input specs (the same
values for the same seed), and a call with keyword, nested or cache inputs turned into a model of
named flat tensors."""
from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

import numpy as np
import torch
from torch.utils import _pytree as pytree


class InputSpec(Protocol):
    """One random input as Fixport's input specs give it: its name, shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str


class InputChoices(Protocol):
    """Where a model's example inputs come from: the user's specs and the seed of random ones."""

    specs: list[InputSpec]
    seed: int


def random_inputs(specs: list[InputSpec], seed: int) -> dict[str, np.ndarray]:
    """Reproducible random arrays: normal floats, small non-negative ints, random bools."""
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    for spec in specs:
        if spec.dtype.startswith("float"):
            arrays[spec.name] = rng.standard_normal(spec.shape).astype(spec.dtype)
        elif spec.dtype == "bool":
            arrays[spec.name] = rng.random(spec.shape) > 0.5
        else:
            arrays[spec.name] = rng.integers(0, 10, spec.shape).astype(spec.dtype)
    return arrays


CONSTANT_TYPES = (type(None), bool, int, float, str, torch.dtype, torch.device)


class UnsupportedInputError(ValueError):
    """An example input Fixport cannot take, with what to do (the loader words it for the user)."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message, self.hint = message, hint


class InputStructure(NamedTuple):
    """Where each example tensor sits in the model's call, and the values that are not tensors.
    (A NamedTuple, not a dataclass: the fix script carries this class by source.)"""

    spec: pytree.TreeSpec  # of (args, kwargs)
    leaves: list[Any]  # every leaf, tensors included (the constants are used as they are)
    tensor_positions: list[int]  # which leaves are the tensors, in the order of the flat inputs
    names: list[str]

    def rebuild(self, tensors: tuple[torch.Tensor, ...]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``(args, kwargs)`` with ``tensors`` in the tensors' places."""
        leaves = list(self.leaves)
        for position, tensor in zip(self.tensor_positions, tensors):
            leaves[position] = tensor
        args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return tuple(args), dict(kwargs)


class StructuredCall(torch.nn.Module):
    """The user's model, called with its own structure from a flat tuple of tensors."""

    def __init__(self, model: torch.nn.Module, structure: InputStructure) -> None:
        super().__init__()
        self.model = model
        self.structure = structure

    def forward(self, *tensors: torch.Tensor) -> Any:
        args, kwargs = self.structure.rebuild(tensors)
        output = self.model(*args, **kwargs)
        if torch.jit.is_tracing() and _holds_cache(output):
            # The TorchScript tracer takes tensors, tuples, lists and dicts only, not a returned
            # DynamicCache: its tensors, in the order torch.export flattens them (the output names').
            register_cache_pytrees(self.model, output)
            return tuple(leaf for leaf in pytree.tree_leaves(output) if isinstance(leaf, torch.Tensor))
        return output


def split_inputs(given: list[Any]) -> tuple[Any, dict[str, Any]]:
    """``args`` and ``kwargs`` from what build() returned after the model: ``[args]``,
    ``[kwargs]`` (a dict) or ``[args, kwargs]``; a single tensor is a one-tensor ``args``."""
    if len(given) == 2:
        args, kwargs = given
    elif isinstance(given[0], dict):
        args, kwargs = (), given[0]
    else:
        args, kwargs = given[0], {}
    if isinstance(args, torch.Tensor):
        args = (args,)
    if not isinstance(args, (tuple, list)) or not isinstance(kwargs, dict):
        raise UnsupportedInputError(
            f"The example inputs are {type(args).__name__} and {type(kwargs).__name__}.",
            "Return (model, args), (model, kwargs) or (model, args, kwargs): args a tuple, kwargs a dict.")
    return tuple(args), dict(kwargs)


def flat_model(model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], file_name: str
               ) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...], InputStructure | None]:
    """The module to export, its tensor inputs in order, and their structure (None for a tuple of tensors)."""
    if is_plain(args, kwargs):
        return model, tuple(args), None
    structure = structure_of(model, args, kwargs, file_name)
    leaves = pytree.tree_leaves((args, kwargs))
    return StructuredCall(model, structure), tuple(leaves[i] for i in structure.tensor_positions), structure


def is_plain(args: Any, kwargs: Mapping[str, Any] | None) -> bool:
    """A tuple of tensors and no keyword arguments: what Fixport has always taken."""
    return not kwargs and isinstance(args, (tuple, list)) and all(isinstance(a, torch.Tensor) for a in args)


def structure_of(model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any],
                 file_name: str) -> InputStructure:
    """The structure of ``model(*args, **kwargs)``; an UnsupportedInputError naming an input Fixport cannot take."""
    register_cache_pytrees(model, (args, kwargs))
    flat, spec = pytree.tree_flatten_with_path((args, kwargs))
    parameters = positional_names(model, len(args))
    leaves, positions, names = [], [], []
    for path, leaf in flat:
        name = leaf_name(path, parameters)
        if isinstance(leaf, torch.Tensor):
            positions.append(len(leaves))
            names.append(name)
        elif not isinstance(leaf, CONSTANT_TYPES):
            raise UnsupportedInputError(
                f"The example input {name} of {file_name} is a {type(leaf).__name__}, which torch.export "
                "cannot take apart into tensors.",
                "Pass tensors, or tuples, lists and dicts of them (None and numbers may stand beside them); "
                "register a custom class with torch.utils._pytree.register_pytree_node.")
        leaves.append(leaf)
    if not positions:
        raise UnsupportedInputError(f"The example inputs of {file_name} hold no tensor.",
                             "Give the model at least one torch.Tensor input.")
    return InputStructure(spec, leaves, positions, _unique(names))


def _holds_cache(value: Any) -> bool:
    """Whether a transformers cache object sits anywhere in tuples, lists and dicts (ModelOutputs)."""
    if isinstance(value, (tuple, list)):
        return any(_holds_cache(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_cache(v) for v in value.values())
    return type(value).__name__.endswith("Cache")


def register_cache_pytrees(model: torch.nn.Module, inputs: Any) -> None:
    """transformers' cache objects as pytrees, registered by transformers' own exporter, where the
    inputs hold one (torch.export does not know them: "Unsupported input type DynamicCache")."""
    if not _holds_cache(inputs):
        return
    try:
        from transformers.exporters.exporter_dynamo import register_cache_pytrees_for_model
    except ImportError as exc:
        raise UnsupportedInputError("The example inputs hold a cache object, and this transformers has no "
                             "transformers.exporters to take it apart into tensors.",
                             "Install transformers 5 or newer, or pass the cache's tensors instead.") from exc
    register_cache_pytrees_for_model(model)


def positional_names(model: torch.nn.Module, count: int) -> list[str]:
    """The names of the first ``count`` positional parameters of forward (``*past`` gives past.0, past.1, ...;
    input_0, input_1, ... where forward's signature cannot be read)."""
    try:
        parameters = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        return [f"input_{i}" for i in range(count)]
    names: list[str] = []
    for parameter in parameters:
        if parameter.kind == inspect.Parameter.VAR_POSITIONAL:
            names += [f"{parameter.name}.{i}" for i in range(count - len(names))]
            break
        if parameter.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            names.append(parameter.name)
    if len(names) < count:  # more inputs than forward names: none of the names can be trusted
        return [f"input_{i}" for i in range(count)]
    return names[:count]


def leaf_name(path: tuple[Any, ...], positional: list[str]) -> str:
    """``input_ids``, ``past_key_values.0.key``: the parameter, then the keys and indices below it."""
    top, where, *rest = path  # (args or kwargs, position or keyword, deeper keys...)
    head = positional[where.idx] if top.idx == 0 else str(where.key)
    return ".".join([head, *(_key_name(key) for key in rest)])


def _key_name(key: Any) -> str:
    if isinstance(key, pytree.SequenceKey):
        return str(key.idx)
    if isinstance(key, pytree.MappingKey):
        return str(key.key)
    if isinstance(key, pytree.GetAttrKey):
        return key.name
    return str(key).strip(".[]'\"")


def keyed_output_names(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...],
                       input_names: list[str] | tuple[str, ...] = ()) -> list[str] | None:
    """ONNX output names from the keys of what a :class:`StructuredCall` model returns (``logits``,
    ``last_hidden_state``), a returned cache's tensors as ``present.0``, ``present.1``, ... (the
    past comes in as ``past_key_values.*``), each distinct from ``input_names`` (ONNX refuses a
    model where an input and an output share a name); None for any other model, for outputs without
    keys (a tensor, plain tuples), or when forward() fails (the export then says why)."""
    if not isinstance(model, StructuredCall):
        return None
    try:
        with torch.no_grad():
            output = model(*inputs)
        register_cache_pytrees(model.model, output)
    except Exception:
        return None
    paths = [path for path, leaf in pytree.tree_flatten_with_path(output)[0] if isinstance(leaf, torch.Tensor)]
    if not any(isinstance(key, (pytree.MappingKey, pytree.GetAttrKey)) for path in paths for key in path):
        return None
    names = [".".join(_key_name(key) for key in _cache_as_present(output, path)) or "output" for path in paths]
    return distinct_names(_unique(names), input_names)


PRESENT = "present"  # a returned cache's tensors, as transformers' ONNX runners and ORT GenAI name them


def _cache_as_present(output: Any, path: tuple[Any, ...]) -> tuple[Any, ...]:
    """``path`` with its first key replaced by ``present`` where that key holds a cache object."""
    if not path:
        return path
    key = path[0]
    try:
        if isinstance(key, pytree.MappingKey):
            holder = output[key.key]
        elif isinstance(key, pytree.GetAttrKey):
            holder = getattr(output, key.name)
        elif isinstance(key, pytree.SequenceKey):
            holder = output[key.idx]
        else:
            return path
    except (KeyError, IndexError, AttributeError, TypeError):
        return path
    if type(holder).__name__.endswith("Cache"):
        return (pytree.MappingKey(PRESENT), *path[1:])
    return path


def distinct_names(output_names: list[str], input_names: list[str] | tuple[str, ...]) -> list[str]:
    """``output_names`` with each one an input also has renamed ``output.<name>`` (then numbered),
    so no ONNX value is defined twice."""
    taken = set(input_names)
    distinct = []
    for name in output_names:
        candidate, number = (f"output.{name}" if name in taken else name), 1
        while candidate in taken:
            candidate, number = f"output.{name}_{number}", number + 1
        taken.add(candidate)
        distinct.append(candidate)
    return distinct


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    unique = []
    for name in names:
        count = seen.get(name, 0)
        unique.append(name if count == 0 else f"{name}_{count}")
        seen[name] = count + 1
    return unique
