"""Issue 33 item 9: each exporter's own default opset. With no opset asked by the user or the model
file, the dynamo exporter exports at torch.onnx's own default for dynamo=True (read from torch),
the TorchScript exporter at Fixport's 17; an opset asked for is kept."""
from __future__ import annotations

import textwrap
from pathlib import Path

import onnx
import pytest
from torch.onnx import _constants as onnx_constants

from fixport.core.fixing.fix_script import fix_script_text
from fixport.core.project.project import Project
from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.vocabulary import DEFAULT_OPSET

SPLITTING_MODEL = """
    import torch

    class Splitting(torch.nn.Module):
        def forward(self, x):
            head, middle, tail = torch.split(x, [2, 3, 3], dim=1)
            return head.sum(1) + middle.sum(1) * tail.mean(1)

    def build():
        return Splitting(), (torch.randn(4, 8),)
"""


@pytest.mark.parametrize("options, expected", [
    ({"exporter": "dynamo"}, onnx_constants.ONNX_DEFAULT_OPSET),
    ({"exporter": "dynamo", "opset": 18}, 18),
    ({"exporter": "torchscript"}, DEFAULT_OPSET),
    ({"exporter": "torchscript", "opset": 13}, 13),
])
def test_the_opset_is_the_askers_else_the_exporters_own(worker, model_file, tmp_path: Path, options: dict,
                                                         expected: int) -> None:
    output = tmp_path / "model.onnx"
    result = worker.run(AnalyzeRequest(ModelRequest(str(model_file("split.py", SPLITTING_MODEL))),
                                       options=options, output=str(output)))
    assert result.unsupported == [] and result.options.opset == expected
    assert [o.version for o in onnx.load(str(output)).opset_import if o.domain in ("", "ai.onnx")] == [expected]


def test_the_model_files_opset_wins_over_the_dynamo_default(worker, model_file) -> None:
    model = model_file("split18.py", textwrap.dedent(SPLITTING_MODEL)
                       + "FIXPORT_EXAMPLE = {'title': 't', 'description': 'd', 'opset': 18}\n")
    result = worker.run(AnalyzeRequest(ModelRequest(str(model)), options={"exporter": "dynamo"}))
    assert result.options.opset == 18


@pytest.mark.parametrize("exporter, default", [("dynamo", "None"), ("torchscript", str(DEFAULT_OPSET))])
def test_the_fix_script_exports_at_the_same_default(exporter: str, default: str, model_file, tmp_path: Path) -> None:
    project = Project(model_path=str(model_file("split.py", SPLITTING_MODEL)), export_options={"exporter": exporter})
    text = fix_script_text(project, tmp_path / "fix_export.py", "out.onnx")
    assert f"\nDEFAULT_OPSET = {default}" in text  # None: torch.onnx.export's own default
