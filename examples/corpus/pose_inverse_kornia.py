"""Camera-to-world points with kornia: a 4x4 pose from R, t, inverted with torch.linalg.inv."""

from __future__ import annotations

import kornia
import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "kornia pose inversion (linalg_inv)",
    "description": (
        "Builds the 4x4 pose with kornia.geometry.conversions.Rt_to_matrix4x4, inverts it with "
        "torch.linalg.inv and transforms points: aten::linalg_inv has no symbolic (ONNX has no Inverse "
        "op; ONNX Runtime has one only in its contrib domain)."
    ),
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::linalg_inv", "reason": "no_symbolic", "count": 1},
    ],
    "fix_tolerance": 1e-3,
    "notes": "Small static matrices: an unrolled Gauss-Jordan elimination is exact enough.",
    "library": "kornia",
}


class WorldPoints(nn.Module):
    """Points in the camera frame -> world frame, through the inverted camera pose."""

    def forward(self, points: torch.Tensor, rotation: torch.Tensor, translation: torch.Tensor) -> torch.Tensor:
        pose = kornia.geometry.conversions.Rt_to_matrix4x4(rotation, translation)
        return kornia.geometry.linalg.transform_points(torch.linalg.inv(pose), points)


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Ten points, a rotation from an axis-angle and a translation."""
    torch.manual_seed(0)
    rotation = kornia.geometry.conversions.axis_angle_to_rotation_matrix(torch.tensor([[0.1, 0.2, 0.3]]))
    return WorldPoints().eval(), (torch.rand(1, 10, 3), rotation, torch.rand(1, 3, 1))
