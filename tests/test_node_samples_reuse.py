"""`fix --auto` samples the failing nodes' values from the program its own check captured: a
capture that fails runs draft_export, which takes most of a minute on some models (a bicubic
upscale by a factor read with ``.item()``), and sampling captured it all again. Another model
object, other options or other fixes capture again."""
from __future__ import annotations

from dataclasses import replace

from fixport.core.analysis.analysis import analyze_in
from fixport.core.analysis.job_context import open_job
from fixport.core.exporters.dynamo.exporter import DynamoExporter
from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest

SCALED = '''
import torch
from torch import nn

FIXPORT_EXAMPLE = {"export_options": {"exporter": "dynamo", "input_names": ["x", "count"]}}


class Head(nn.Module):
    def forward(self, x, count):
        if count.item() > 2:  # a branch on a value: torch.export cannot capture it
            return x.cumsum(0)
        return x


def build():
    return Head().eval(), (torch.randn(6, 4), torch.tensor(3))
'''


def test_the_values_are_sampled_from_the_program_the_check_captured(model_file, monkeypatch) -> None:
    exports: list[bool] = []
    original = DynamoExporter.export

    def counted(self, loaded, options, **kwargs):
        exports.append(kwargs.get("run_check", True))
        return original(self, loaded, options, **kwargs)

    monkeypatch.setattr(DynamoExporter, "export", counted)
    model = ModelRequest(str(model_file("head.py", SCALED)))
    context = open_job(model)
    checked = analyze_in(context, AnalyzeRequest(model, {}))
    assert checked.unsupported and exports == [True], checked.unsupported
    options = context.export_options()
    with context.exporter.fixes_applied([], options):
        context.exporter.node_samples(context.loaded, options, checked.unsupported)
    assert exports == [True], "sampling captured the model again"

    with context.exporter.fixes_applied([], options):
        context.exporter.node_samples(context.loaded, replace(options, opset=options.opset - 1),
                                      checked.unsupported)
    assert exports == [True, False], "other options sampled from the old program"
