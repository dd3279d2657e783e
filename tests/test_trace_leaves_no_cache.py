"""Issue 46: a TorchScript export leaves the model's caches as they were. A detection head caches its
anchors with the shape they were made for (ultralytics' Detect: ``if self.shape != shape``); the
trace's sizes are traced tensors, and the worker's loaded model is shared by every export, so a
dynamo check after a TorchScript one compared its sizes with a traced value and stopped on a
data-dependent guard that is no problem of the model (YOLO11n under `compare --exporters`)."""
from __future__ import annotations

import textwrap

import pytest
import torch

from fixport.core.foundation.kept_attributes import attributes_kept
from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest

DETECTOR = textwrap.dedent('''
    import torch
    from torch import nn

    FIXPORT_EXAMPLE = {"opset": 18, "export_options": {"input_names": ["images"],
                                                        "dynamic_axes": {"images": {2: "height", 3: "width"}}}}


    def grid_points(feature):
        """One (x, y) point per cell of the feature map, as detection heads make their anchors."""
        ys = torch.arange(feature.shape[2], dtype=feature.dtype) + 0.5
        xs = torch.arange(feature.shape[3], dtype=feature.dtype) + 0.5
        grid_y, grid_x = torch.meshgrid(ys, xs, indexing="ij")
        return torch.stack((grid_x, grid_y), -1).reshape(-1, 2)


    class Head(nn.Module):
        shape = None
        anchors = torch.empty(0)

        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(8, 2, 1)

        def forward(self, feature):
            shape = feature.shape
            if self.shape != shape:
                self.anchors = grid_points(feature)
                self.shape = shape
            return self.anchors.unsqueeze(0) + self.conv(feature).flatten(2).transpose(1, 2)


    class Detector(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Conv2d(3, 8, 3, stride=2, padding=1)
            self.head = Head()

        def forward(self, images):
            return self.head(self.backbone(images))


    def build():
        torch.manual_seed(0)
        return Detector().eval(), (torch.rand(1, 3, 32, 48),)
''')


def test_the_cache_a_forward_fills_is_taken_off_after_the_block() -> None:
    head = torch.nn.Module()
    head.shape, head.kept = None, [1]
    with attributes_kept(head):
        head.shape, head.anchors = (1, 2), torch.ones(2)
        head.kept.append(2)
    assert head.shape is None and not hasattr(head, "anchors") and head.kept == [1]


@pytest.mark.slow
def test_a_dynamo_check_after_a_torchscript_one_sees_the_model_as_it_is(worker, model_file) -> None:
    model = ModelRequest(str(model_file("detector.py", DETECTOR)))
    traced = worker.run(AnalyzeRequest(model, {"exporter": "torchscript"}, run_check=False))  # ends traced
    assert traced.unsupported == [], [p.message for p in traced.unsupported]
    captured = worker.run(AnalyzeRequest(model, {"exporter": "dynamo"}))  # the same loaded model
    assert captured.unsupported == [], [p.message for p in captured.unsupported]
