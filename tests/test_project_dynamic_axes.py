"""Issue 33 item 4: a project keeps its dynamic axes. JSON keys every axis by a string ("1"); every
way in (a project, --dynamic-axes, a model file) reaches torch with int axes, and a bad axis is
named, never a TypeError with a TorchScript graph in it."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import onnx
import pytest

from fixport.cli.arguments import export_overrides
from fixport.core.foundation.errors import FixportError
from fixport.core.project.export_options import ExportOptions, normalised_dynamic_axes
from fixport.core.project.project import load_project
from fixport.core.words.errors import ProjectError
from tests.conftest import slow_but_one

# A problem for each exporter: threshold(x, 0.1, 2.0) has no TorchScript symbolic, and the dynamo
# exporter writes Pow on int16, which ONNX Runtime refuses. The sequence length is dynamic.
TOKENS_MODEL = """
    import torch

    class Tokens(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(50, 8)
            self.proj = torch.nn.Linear(8, 8)

        def forward(self, input_ids):
            hidden = torch.nn.functional.threshold(self.proj(self.embed(input_ids)), 0.1, 2.0)
            levels = torch.round(hidden * 10).to(torch.int16)
            return torch.square(levels).to(torch.float32) / 100.0

    def build():
        torch.manual_seed(0)
        return Tokens().eval(), (torch.randint(0, 50, (2, 7)),)
"""


def test_axes_from_json_become_int_indices() -> None:
    axes = json.loads('{"input_ids": {"1": "seq", "-1": "last"}, "mask": [0, 1]}')
    assert normalised_dynamic_axes(axes) == {"input_ids": {1: "seq", -1: "last"},
                                             "mask": {0: "mask_dynamic_axes_1", 1: "mask_dynamic_axes_2"}}
    assert ExportOptions(dynamic_axes=axes).dynamic_axes["input_ids"] == {1: "seq", -1: "last"}


@pytest.mark.parametrize("axes, named", [
    ({"x": {"seq": "len"}}, "axis 'seq' of 'x' is not an axis index"),
    ({"x": {"1": 5}}, "needs a dim name"),
    ({"x": {"1.5": "len"}}, "axis '1.5' of 'x'"),
    ({"x": "0"}, "the axes of 'x' must be"),
    (["x"], "must map input or output names"),
])
def test_a_bad_axis_is_named(axes: object, named: str) -> None:
    with pytest.raises(FixportError, match="dynamic axes are not valid") as raised:
        normalised_dynamic_axes(axes)
    assert named in raised.value.message and raised.value.hint


def test_a_project_reads_back_int_axes_and_names_a_bad_one(tmp_path: Path) -> None:
    data = {"format_version": 3, "model_path": "m.py",
            "export_options": {"input_names": ["input_ids"], "dynamic_axes": {"input_ids": {"1": "seq"}}}}
    path = tmp_path / "p.fixport.json"
    path.write_text(json.dumps(data))
    assert load_project(path).export_options["dynamic_axes"] == {"input_ids": {1: "seq"}}

    data["export_options"]["dynamic_axes"] = {"input_ids": {"one": "seq"}}
    path.write_text(json.dumps(data))
    with pytest.raises(ProjectError, match="axis 'one' of 'input_ids' is not an axis index"):
        load_project(path)


def test_the_command_line_names_a_bad_axis() -> None:
    args = argparse.Namespace(opset=None, export_type=None, exporter=None, no_constant_folding=False,
                              no_autograd_inlining=False, input_names=None, output_names=None,
                              dynamic_axes='{"x": {"first": "batch"}}')
    with pytest.raises(FixportError, match="--dynamic-axes: .*axis 'first' of 'x'"):
        export_overrides(args)
    args.dynamic_axes = '{"x": {"0": "batch"}}'
    assert export_overrides(args)["dynamic_axes"] == {"x": {0: "batch"}}


@pytest.mark.parametrize("exporter", slow_but_one(["torchscript", "dynamo"], "torchscript"))
def test_fix_then_compare_and_export_from_the_project(cli, exporter: str, model_file, tmp_path: Path) -> None:
    model = str(model_file("tokens.py", TOKENS_MODEL))
    project = tmp_path / "tokens.fixport.json"
    fixed = cli("fix", model, "--auto", "--exporter", exporter, "--input-names", "input_ids",
                "--dynamic-axes", '{"input_ids": {"1": "seq"}}', "-o", str(project))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    saved = json.loads(project.read_text())["export_options"]
    assert saved["dynamic_axes"] == {"input_ids": {"1": "seq"}} and saved["exporter"] == exporter

    compared = cli("compare", model, "--project", str(project))
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "Input set seq=" in compared.stdout and "PASS" in compared.stdout  # checked at other lengths too

    onnx_path = tmp_path / "tokens.onnx"
    exported = cli("export", model, "--project", str(project), "-o", str(onnx_path))
    assert exported.returncode == 0, exported.stdout + exported.stderr
    batch, length = onnx.load(str(onnx_path)).graph.input[0].type.tensor_type.shape.dim
    assert batch.dim_value == 2 and length.dim_param == "seq"  # dynamic, under the project's name
