"""The runtime upscale factor under torch.export: an interpolate whose scale factor stays a tensor (issue 46).

A model that reads its factor with ``float(scale)`` stops torch.export (the value is data). The
dynamo capture change for that line (:mod:`fixport.core.exporters.capture_changes`) calls this op
instead, given the tensor: ``fixport::runtime_scale_interpolate``, a ``torch.library`` op whose
kernel is ``F.interpolate``'s own, whose output sizes are sizes of data (``new_dynamic_size``: a
float factor's product is no size torch.export can reason about), and whose ONNX translation is
``Resize`` with the runtime scale. Importing this module registers the op; part of the fix
script's support package.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

OP_NAME = "fixport::runtime_scale_interpolate"
ONNX_MODES = {"nearest": "nearest", "linear": "linear", "bilinear": "linear", "trilinear": "linear",
              "bicubic": "cubic"}


def _factors(scale: torch.Tensor, spatial: int) -> list[float]:
    values = [float(value) for value in scale.reshape(-1).tolist()]
    return values * spatial if len(values) == 1 else values


def _interpolate(x: torch.Tensor, scale: torch.Tensor, mode: str, align_corners: bool | None) -> torch.Tensor:
    return F.interpolate(x, scale_factor=_factors(scale, x.dim() - 2), mode=mode, align_corners=align_corners)


def _interpolate_fake(x: torch.Tensor, scale: torch.Tensor, mode: str, align_corners: bool | None) -> torch.Tensor:
    context = torch.library.get_ctx()
    return x.new_empty([*x.shape[:2], *(context.new_dynamic_size() for _ in range(x.dim() - 2))])


def _registered() -> Any:
    namespace = torch.ops.fixport
    if hasattr(namespace, "runtime_scale_interpolate"):  # this module imported again (the fix script, a reload)
        return namespace.runtime_scale_interpolate
    op = torch.library.custom_op(OP_NAME, _interpolate, mutates_args=(),
                                 schema="(Tensor x, Tensor scale, str mode, bool? align_corners) -> Tensor")
    op.register_fake(_interpolate_fake)
    return namespace.runtime_scale_interpolate


runtime_scale_interpolate = _registered()


def _resize(x: Any, scale: Any, mode: str = "nearest", align_corners: bool | None = None) -> Any:
    """ONNX ``Resize`` of ``x`` by ``scale`` read at run time (one factor, or one per spatial dim)."""
    from onnxscript import opset18 as op

    spatial = op.Sub(op.Size(op.Shape(x)), op.Constant(value_ints=[2]))
    factors = op.Expand(op.Cast(op.Reshape(scale, op.Constant(value_ints=[-1])), to=1), spatial)
    scales = op.Concat(op.Constant(value_floats=[1.0, 1.0]), factors, axis=0)
    if align_corners:
        transform = "align_corners"
    else:
        transform = "asymmetric" if mode == "nearest" else "pytorch_half_pixel"
    return op.Resize(x, None, scales, coordinate_transformation_mode=transform, cubic_coeff_a=-0.75,
                     mode=ONNX_MODES[mode], nearest_mode="floor")


def translations() -> dict[Any, Callable[..., Any]]:
    """The op's ONNX translation, as ``torch.onnx.export``'s ``custom_translation_table`` takes it."""
    return {runtime_scale_interpolate.default: _resize}
