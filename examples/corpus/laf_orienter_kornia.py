"""kornia's LAFOrienter: the dominant gradient orientation of local features (a matching pipeline's step)."""

from __future__ import annotations

import kornia
import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "kornia LAFOrienter (affine_grid_generator, rad2deg)",
    "description": (
        "Orienting local affine frames samples a patch around each keypoint with F.affine_grid and "
        "converts the dominant angle with torch.rad2deg: aten::affine_grid_generator has a symbolic "
        "only from opset 20 (AffineGrid) and aten::rad2deg none at all."
    ),
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::affine_grid_generator", "reason": "no_symbolic", "count": 1},
        {"kind": "aten::rad2deg", "reason": "no_symbolic", "count": 1},
    ],
    "fix_tolerance": 1e-3,
    "notes": "Two fix families: a hand-written grid MatMul and onnxscript torch_lib's rad2deg.",
    "library": "kornia",
}


class OrientFeatures(nn.Module):
    """LAFs in, the same LAFs rotated to their patch's dominant gradient direction out."""

    def __init__(self) -> None:
        super().__init__()
        self.orienter = kornia.feature.LAFOrienter(19)

    def forward(self, lafs: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
        return self.orienter(lafs, image)


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Three keypoints of scale 4 on a random 32x32 grey image."""
    torch.manual_seed(0)
    centers = torch.tensor([[[10.0, 12.0], [20.0, 15.0], [16.0, 22.0]]])
    lafs = kornia.feature.laf_from_center_scale_ori(centers, torch.full((1, 3, 1, 1), 4.0), torch.zeros(1, 3, 1))
    return OrientFeatures().eval(), (lafs, torch.rand(1, 1, 32, 32))
