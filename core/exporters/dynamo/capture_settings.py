"""The dynamo exporter's side of torch's capture settings (``core.project.capture_settings``): what
each one changes in the capture, the decomposition and the grad mode they run in."""
from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager

import torch
from torch.onnx._internal.exporter import _capture_strategies

from fixport.core.project.capture_settings import CORE_ATEN, DEFERRED_ASSERTS, NO_GRAD, STRICT
from fixport.core.project.export_options import ExportOptions


def grad_mode_for(options: ExportOptions) -> AbstractContextManager[object]:
    """``torch.no_grad()`` around the whole export where the options ask for it: torch.export and
    torch.onnx's decompositions trace what autograd would need, which some models do not survive."""
    return torch.no_grad() if NO_GRAD in options.capture_settings else contextlib.nullcontext()


class DeferredAssertsStrategy(_capture_strategies.CaptureStrategy):
    """torch.export with runtime assertions in place of guards, strict where the options ask."""

    strict = False

    def _capture(self, model, args, kwargs, dynamic_shapes) -> torch.export.ExportedProgram:  # noqa: ANN001
        return torch.export.export(model, args, kwargs=kwargs, dynamic_shapes=dynamic_shapes, strict=self.strict,
                                   prefer_deferred_runtime_asserts_over_guards=True)


class StrictDeferredAssertsStrategy(DeferredAssertsStrategy):
    strict = True


def capture_strategies(options: ExportOptions) -> tuple[type, ...]:
    """torch.onnx's capture strategies, in torch's order (non-strict, then strict); strict alone
    where the options ask for it; with runtime assertions in place of guards where they ask that."""
    if DEFERRED_ASSERTS in options.capture_settings:
        return (StrictDeferredAssertsStrategy,) if STRICT in options.capture_settings else (
            DeferredAssertsStrategy, StrictDeferredAssertsStrategy)
    if STRICT in options.capture_settings:
        return (_capture_strategies.TorchExportStrictStrategy,)
    return (_capture_strategies.TorchExportNonStrictStrategy, _capture_strategies.TorchExportStrictStrategy)


def core_aten_first(program: torch.export.ExportedProgram, options: ExportOptions) -> torch.export.ExportedProgram:
    """``program`` decomposed to torch's core ATen ops where the options ask for it (torch.onnx
    itself decomposes only the ops its registry has no function for)."""
    return program.run_decompositions() if CORE_ATEN in options.capture_settings else program
