"""Export a module with exactly the inputs the user gave; forward()'s other parameters keep their defaults.

``torch.onnx.export(dynamo=False)`` appends the defaults of forward()'s remaining parameters to the
traced inputs (``torch.onnx.utils._decide_input_format``). The tracer turns a non-tensor default
into a tensor, so ``forward(x, is_causal: bool = False)`` (timm's EVA, many attention blocks) fails
inside the model with "argument 'is_causal' must be bool, not Tensor", although the model runs.
"""
from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def given_inputs_only(module: torch.nn.Module, input_count: int) -> Iterator[None]:
    """While exporting, ``module.forward`` shows only its first ``input_count`` parameters, so the
    exporter passes nothing else and forward() uses its own defaults for the rest."""
    trimmed = _trimmed_signature(module, input_count)
    if trimmed is None:
        yield
        return
    original = module.forward

    def forward(*inputs):
        return original(*inputs)

    forward.__signature__ = trimmed  # what inspect.signature (and so the exporter) reads
    module.forward = forward  # an instance attribute: the module's own scope and names stay as they are
    try:
        yield
    finally:
        del module.forward


def _trimmed_signature(module: torch.nn.Module, input_count: int) -> inspect.Signature | None:
    """forward()'s signature cut after the given inputs, or None where nothing needs cutting."""
    if isinstance(module, torch.jit.ScriptModule) or "forward" in vars(module):
        return None
    try:
        signature = inspect.signature(module.forward)
    except (TypeError, ValueError):
        return None
    parameters = list(signature.parameters.values())
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if len(parameters) <= input_count or any(p.kind not in positional for p in parameters[:input_count]):
        return None
    rest = parameters[input_count:]
    # A missing parameter without a default is the user's error: the call reports it in their words.
    if any(p.default is inspect.Parameter.empty and p.kind in positional for p in rest):
        return None
    return signature.replace(parameters=parameters[:input_count])
