"""An LSTM is captured in a warm worker as in a fresh process.

torch.onnx registers its while_loop decomposition of the RNN ops for each capture without clearing
the ops' dispatch cache. After any earlier capture of the LSTM in the process (a draft_export, a
plain torch.export: what a previous job runs), the cached decomposition unrolled the recurrence
over the traced length: `check` said the dynamic time axis does not hold at the LSTM's line, and
EnCodec's export, fixed, failed at other lengths after its own check in the same worker."""
from __future__ import annotations

import torch

from fixport.core.analysis.analysis import analyze
from fixport.core.exporters.dynamo.rnn_dispatch import forget_rnn_dispatch
from fixport.core.loaders.loading import load_model
from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.vocabulary import ProblemReason

RECURRENT = '''
import torch
from torch import nn

FIXPORT_EXAMPLE = {"export_options": {"exporter": "dynamo", "input_names": ["frames"],
                                      "dynamic_axes": {"frames": {2: "time"}}}}


class Smoother(nn.Module):
    """EnCodec's LSTM block: channels-first frames through a sequence-first LSTM, plus a skip."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 8, 2)

    def forward(self, frames):
        x = frames.permute(2, 0, 1)
        y = self.lstm(x)[0] + x
        return y.permute(1, 2, 0)


def build():
    torch.manual_seed(0)
    return Smoother().eval(), (torch.randn(1, 8, 12),)
'''


def _problems(path: str) -> list[tuple[str, str]]:
    result = analyze(AnalyzeRequest(ModelRequest(path), {}))
    return sorted((p.kind, p.reason.value) for p in result.unsupported)


def test_an_earlier_capture_changes_nothing_in_the_next(model_file) -> None:
    path = str(model_file("smoother.py", RECURRENT))
    forget_rnn_dispatch()
    fresh = _problems(path)
    assert ProblemReason.CAPTURE_FAILED.value not in {reason for _, reason in fresh}, fresh

    loaded = load_model(path)  # another copy, captured the way a previous job or draft_export would
    torch.export.export(loaded.module, tuple(loaded.example_inputs), strict=False)
    assert torch.ops.aten.lstm.input._dispatch_cache, "the earlier capture left no dispatch to forget"
    assert _problems(path) == fresh
