"""The dynamo exporter's side of torch's capture settings (``core.model.capture_settings``): what
each one changes in the capture, the decomposition and the grad mode they run in."""
from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager

import torch
from torch.onnx._internal.exporter import _capture_strategies

from fixport.core.model.capture_settings import CORE_ATEN, NO_GRAD, STRICT
from fixport.core.model.export_options import ExportOptions


def grad_mode_for(options: ExportOptions) -> AbstractContextManager[object]:
    """``torch.no_grad()`` around the whole export where the options ask for it: torch.export and
    torch.onnx's decompositions trace what autograd would need, which some models do not survive."""
    return torch.no_grad() if NO_GRAD in options.capture_settings else contextlib.nullcontext()


def capture_strategies(options: ExportOptions) -> tuple[type, ...]:
    """torch.onnx's capture strategies, in torch's order (non-strict, then strict); strict alone
    where the options ask for it."""
    if STRICT in options.capture_settings:
        return (_capture_strategies.TorchExportStrictStrategy,)
    return (_capture_strategies.TorchExportNonStrictStrategy, _capture_strategies.TorchExportStrictStrategy)


def core_aten_first(program: torch.export.ExportedProgram, options: ExportOptions) -> torch.export.ExportedProgram:
    """``program`` decomposed to torch's core ATen ops where the options ask for it (torch.onnx
    itself decomposes only the ops its registry has no function for)."""
    return program.run_decompositions() if CORE_ATEN in options.capture_settings else program
