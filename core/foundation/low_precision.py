"""Float16 and bfloat16 outputs judged against a float32 run of the same model: a difference no
larger than torch's own rounding is the precision's, not the export's."""
from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch

from .comparison import flatten_outputs

LOW_PRECISION = (torch.float16, torch.bfloat16)
LOW_PRECISION_NAMES = ("float16", "bfloat16")
ROUNDING_MARGIN = 2.0  # ONNX Runtime may be this many times further from float32 than torch is


@contextlib.contextmanager
def widened_to_float32(module: torch.nn.Module) -> Iterator[int]:
    """``module`` with its float16/bfloat16 weights and buffers as float32 copies (exact) while inside;
    the original tensors put back after, untouched (a memory-mapped checkpoint stays mapped). Yields
    how many tensors were widened."""
    narrow = [(tensor, tensor.data) for tensor in itertools.chain(module.parameters(), module.buffers())
              if tensor.dtype in LOW_PRECISION]
    try:
        for tensor, original in narrow:
            tensor.data = original.float()
        yield len(narrow)
    finally:
        for tensor, original in narrow:
            tensor.data = original


@contextlib.contextmanager
def widened_where_used(module: torch.nn.Module) -> Iterator[int]:
    """``module`` running in float32 one submodule at a time: each submodule's own float16/bfloat16
    weights and buffers are widened (exactly) while its forward runs and put back after, so a model
    of N bytes in bfloat16 needs its largest layer in float32 beside it, not 2N more. A model that
    reads another module's weight outside that module's forward sees it narrow; run it under
    :func:`widened_to_float32` instead (:func:`in_float32` does both). Yields how many submodules
    hold such tensors."""
    held: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def own_tensors(owner: torch.nn.Module) -> list[torch.Tensor]:
        return [t for t in itertools.chain(owner.parameters(recurse=False), owner.buffers(recurse=False))
                if t is not None and t.dtype in LOW_PRECISION]

    def widen(owner: torch.nn.Module, *_: Any) -> None:
        for tensor in own_tensors(owner):
            held.setdefault(id(tensor), (tensor, tensor.data))
            tensor.data = tensor.data.float()

    def narrow(owner: torch.nn.Module, *_: Any) -> None:
        for tensor in itertools.chain(owner.parameters(recurse=False), owner.buffers(recurse=False)):
            if tensor is not None and id(tensor) in held:
                tensor.data = held.pop(id(tensor))[1]

    owners = [owner for owner in module.modules() if own_tensors(owner)]
    hooks = [hook for owner in owners for hook in (owner.register_forward_pre_hook(widen),
                                                    owner.register_forward_hook(narrow))]
    try:
        yield len(owners)
    finally:
        for hook in hooks:
            hook.remove()
        for tensor, original in held.values():  # a forward that raised skipped its restoring hook
            tensor.data = original


def in_float32(module: torch.nn.Module, run: Callable[[], Any]) -> Any:
    """``run()`` with ``module`` in float32: widened where used, or, when the model refuses that or
    its floating results come out narrow (it casts to a weight's dtype outside the weight's
    module), with all its weights widened at once. Raises what the model raises in float32."""
    try:
        with widened_where_used(module), torch.no_grad():
            result = run()
        if not _narrow_values(result):
            return result
    except Exception:  # noqa: BLE001 -- some models only run widened as a whole
        pass
    with widened_to_float32(module), torch.no_grad():
        return run()


def _narrow_values(value: Any) -> bool:
    """Whether ``value`` (tensors, in sequences, mappings or model outputs) holds a float16/bfloat16 tensor."""
    if isinstance(value, torch.Tensor):
        return value.dtype in LOW_PRECISION
    if isinstance(value, dict) or hasattr(value, "values") and callable(value.values):
        return any(_narrow_values(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(_narrow_values(item) for item in value)
    return False


def widened_input(value: Any) -> Any:
    """A float16/bfloat16 tensor as float32 (exact); anything else as it is."""
    return value.float() if isinstance(value, torch.Tensor) and value.dtype in LOW_PRECISION else value


def float32_outputs(module: torch.nn.Module, inputs: Sequence[Any]) -> list[tuple[str, np.ndarray]] | None:
    """The model's outputs with its float16/bfloat16 weights and inputs widened to float32 (exact);
    None when the model does not run that way."""
    try:
        return flatten_outputs(in_float32(module, lambda: module(*[widened_input(t) for t in inputs])))
    except Exception:  # a model that casts to its own dtype and then refuses float32: no verdict
        return None


def _max_abs(values: np.ndarray, exact: np.ndarray) -> float:
    if values.shape != exact.shape:
        return float("inf")
    difference = np.abs(values.astype(np.float64) - exact)
    return float(np.nanmax(difference)) if difference.size else 0.0


def within_rounding(torch_value: np.ndarray, onnx_value: np.ndarray, float32_value: np.ndarray,
                    atol: float) -> tuple[bool, float, float]:
    """Whether ONNX Runtime's half-precision output is no further from the float32 run than
    ROUNDING_MARGIN times torch's own (or than ``atol``); with both distances (ONNX Runtime's, torch's)."""
    exact = np.asarray(float32_value).astype(np.float64)
    torch_error = _max_abs(np.asarray(torch_value), exact)
    onnx_error = _max_abs(np.asarray(onnx_value), exact)
    return onnx_error <= max(ROUNDING_MARGIN * torch_error, atol), onnx_error, torch_error
