"""fix --auto tries each candidate on the failing node alone (issue 20): the node cut out of the
traced model with the values it saw, exported with the candidate, run in ONNX Runtime and
compared with torch; the whole model is exported once per round of fixes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from fixport.core.exporters.choice import exporter_for
from fixport.core.fixing.node_trials import verdict_on_node
from fixport.core.loaders.loading import load_model
from fixport.core.project.export_options import ExportOptions
from fixport.core.project.project import FixMapping
from fixport.core.records.fix_choices import Candidate
from fixport.core.records.requests import AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.examples.catalog import example_path

DIFF_MODEL = """
    import torch

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(8, 8)

        def forward(self, x):
            y = self.proj(x)
            return torch.diff(y, dim=-1) * y.size(0)

    def build():
        torch.manual_seed(0)
        return Model().eval(), (torch.randn(3, 8),)
"""

# Right at every shape but computes x[:-1] - x[1:]: the wrong sign.
WRONG_DIFF = """
from torch.onnx import symbolic_helper


def symbolic(g, x, n, dim, prepend, append):
    dim = symbolic_helper._get_const(dim, "i", "dim")
    starts = g.op("Constant", value_t=torch.tensor([0]))
    ends = g.op("Constant", value_t=torch.tensor([-1]))
    axes = g.op("Constant", value_t=torch.tensor([dim]))
    one = g.op("Constant", value_t=torch.tensor([1]))
    big = g.op("Constant", value_t=torch.tensor([2**62]))
    head = g.op("Slice", x, starts, ends, axes)
    tail = g.op("Slice", x, one, big, axes)
    return g.op("Sub", head, tail)
"""


def test_fix_auto_decides_on_the_node_and_exports_the_whole_model_once_per_round(worker, model_file,
                                                                                  tmp_path: Path) -> None:
    path = model_file("diff_model.py", DIFF_MODEL)
    onnx_path = tmp_path / "fixed.onnx"
    result = worker.run(AutoFixRequest(ModelRequest(str(path)), output=str(onnx_path)))
    assert result.after.unsupported == []
    (choice,) = result.choices
    assert choice.kind == "aten::diff" and choice.on_node and choice.max_abs is not None
    assert result.node_trials >= 1 and result.whole_model_trials == 0
    assert result.whole_model_exports == 2  # as it is, then with the fix (which wrote the file)
    loaded = load_model(path)
    with torch.no_grad():
        expected = loaded.module(*loaded.example_inputs).numpy()
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    (actual,) = session.run(None, {session.get_inputs()[0].name: loaded.example_inputs[0].numpy()})
    np.testing.assert_allclose(actual, expected, atol=1e-5)


@pytest.fixture
def diff_sample(model_file):
    path = model_file("diff_model.py", DIFF_MODEL)
    loaded = load_model(path)
    exporter = exporter_for("torchscript")
    (problem,) = exporter.export(loaded, ExportOptions(opset=17)).unsupported
    samples = exporter.node_samples(loaded, ExportOptions(opset=17), [problem])
    return loaded, exporter, problem, samples.sample_for(problem)


def test_the_node_alone_sees_the_values_that_flowed_into_it(diff_sample) -> None:
    loaded, _, _, sample = diff_sample
    assert sample is not None
    (given,) = sample.inputs  # the Linear's output; n, dim, prepend and append became constants
    with torch.no_grad():
        projected = loaded.module.proj(loaded.example_inputs[0])
    torch.testing.assert_close(given, projected)
    ((_, expected),) = sample.expected
    np.testing.assert_allclose(expected, torch.diff(projected, dim=-1).numpy())


def test_a_fix_with_wrong_numbers_is_refused_on_the_node_and_a_right_one_kept(diff_sample) -> None:
    loaded, exporter, problem, sample = diff_sample
    wrong = Candidate(FixMapping("aten::diff", "user.wrong_diff", "import torch\n" + WRONG_DIFF, edited=True),
                      "hand_written", "test")
    verdict = verdict_on_node(exporter, loaded, sample, wrong, [], ExportOptions(opset=17))
    assert isinstance(verdict, str) and verdict.startswith("wrong numbers on the node alone"), verdict
    library = exporter.profile.template_library()
    right = next(c for c in exporter.fix_candidates(problem, 17, library, False)
                 if c.mapping.template_id == "decompose.diff")
    assert verdict_on_node(exporter, loaded, sample, right, [], ExportOptions(opset=17)) == pytest.approx(0, abs=1e-6)


def test_nodes_on_complex_tensors_are_tried_on_the_whole_model_and_say_why(worker) -> None:
    result = worker.run(AutoFixRequest(ModelRequest(str(example_path("fft_token_mixer")))))
    assert result.after.unsupported == []
    assert result.whole_model_trials >= 2 and not any(c.on_node for c in result.choices)
    assert any("complex" in why for why in result.whole_model_why), result.whole_model_why


def test_the_fix_command_says_where_each_fix_was_verified(cli, model_file, tmp_path: Path) -> None:
    path = model_file("diff_model.py", DIFF_MODEL)
    ran = cli("fix", "--auto", str(path), "-o", str(tmp_path / "p.fixport.json"))
    assert ran.returncode == 0, ran.stderr
    assert "vs torch on the node alone" in ran.stdout
    assert "tried 1 candidate(s) on the failing node alone, 0 on the whole model; " \
           "exported the whole model 2 time(s)" in ran.stdout


@pytest.mark.slow  # test_a_dynamo_node_alone_calls_its_op_on_the_arguments_it_saw keeps dynamo node trials fast
@pytest.mark.parametrize("name", ["median_pooling_dynamo", "nan_gap_max_dynamo"])
def test_the_dynamo_exporter_decides_on_the_node_too(worker, name: str) -> None:
    """The FX node's op overload called alone on the arguments it saw: a missing ONNX function and
    a wrong-numbers translation are both fixed without a whole-model trial."""
    result = worker.run(AutoFixRequest(ModelRequest(str(example_path(name))), options={"exporter": "dynamo"}))
    assert result.after.unsupported == []
    assert result.choices and all(c.on_node for c in result.choices)
    assert result.whole_model_trials == 0 and result.whole_model_exports == 2


def test_a_dynamo_node_alone_calls_its_op_on_the_arguments_it_saw(model_file) -> None:
    path = model_file("median.py", """
        import torch

        class Model(torch.nn.Module):
            def forward(self, x):
                values, _ = torch.median(x * 2, dim=1)
                return values + 1

        def build():
            torch.manual_seed(0)
            return Model().eval(), (torch.randn(3, 5),)
    """)
    loaded = load_model(path)
    exporter = exporter_for("dynamo")
    options = ExportOptions(exporter="dynamo")
    (problem,) = exporter.export(loaded, options).unsupported
    sample = exporter.node_samples(loaded, options, [problem]).sample_for(problem)
    assert sample is not None
    (given,) = sample.inputs
    torch.testing.assert_close(given, loaded.example_inputs[0] * 2)
    ((_, values),) = sample.expected  # the model reads the values only: the indices are not judged
    expected = torch.median(loaded.example_inputs[0] * 2, dim=1)
    np.testing.assert_array_equal(values, expected.values.numpy())


def test_a_float16_model_is_fixed_on_the_node_and_keeps_its_dtype(worker, model_file, tmp_path: Path) -> None:
    path = model_file("half_diff.py", DIFF_MODEL.replace(
        "return Model().eval(), (torch.randn(3, 8),)",
        "return Model().eval().half(), (torch.randn(3, 8, dtype=torch.float16),)"))
    onnx_path = tmp_path / "half.onnx"
    result = worker.run(AutoFixRequest(ModelRequest(str(path)), output=str(onnx_path)))
    assert result.after.unsupported == [] and all(c.on_node for c in result.choices)
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    assert [o.type for o in session.get_outputs()] == ["tensor(float16)"]  # the fix kept the dtype
    loaded = load_model(path)
    (actual,) = session.run(None, {session.get_inputs()[0].name: loaded.example_inputs[0].numpy()})
    with torch.no_grad():
        expected = loaded.module(*loaded.example_inputs).numpy()
    assert actual.dtype == np.float16
    np.testing.assert_allclose(actual.astype(np.float32), expected.astype(np.float32), atol=1e-2, rtol=1e-2)


# Three problem kinds behind the model's own writes into slices, which the exporter's in-place
# removal turns into onnx::Placeholder nodes the TorchScript interpreter cannot run.
WRITES_THEN_THREE_KINDS = """
    import torch

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(8, 8)

        def forward(self, x):
            y = self.proj(x)
            y[:, 0] = y[:, 1] * 2  # a copy_ into a view
            y[1, 2:5] += 1.0  # an in-place add into a view
            y[y.abs() > 1.5] = 0.0  # an index_put_ with a mask
            counts = torch.histc(y, bins=4, min=-2, max=2)
            steps = torch.diff(y, dim=-1)
            rising = (steps > 0).cumsum(-1)
            return steps * rising + counts.sum()

    def build():
        torch.manual_seed(0)
        return Model().eval(), (torch.randn(3, 8),)
"""


def _written(x: torch.Tensor, proj: torch.nn.Module) -> torch.Tensor:
    """WRITES_THEN_THREE_KINDS's ``y`` after its writes, in eager torch."""
    y = proj(x)
    y[:, 0] = y[:, 1] * 2
    y[1, 2:5] += 1.0
    y[y.abs() > 1.5] = 0.0
    return y


def test_nodes_behind_writes_into_slices_see_the_values_written(model_file) -> None:
    loaded = load_model(model_file("writes.py", WRITES_THEN_THREE_KINDS))
    exporter = exporter_for("torchscript")
    problems = exporter.export(loaded, ExportOptions(opset=17)).unsupported
    assert sorted(p.kind for p in problems) == ["aten::cumsum", "aten::diff", "aten::histc"]
    samples = exporter.node_samples(loaded, ExportOptions(opset=17), problems)
    assert samples.undecided == {}
    with torch.no_grad():
        written = _written(loaded.example_inputs[0], loaded.module.proj)
    by_kind = {p.kind: samples.sample_for(p) for p in problems}
    torch.testing.assert_close(by_kind["aten::diff"].inputs[0], written)
    torch.testing.assert_close(by_kind["aten::histc"].inputs[0], written)
    (steps_rising,) = by_kind["aten::cumsum"].inputs
    torch.testing.assert_close(steps_rising, torch.diff(written, dim=-1) > 0)


def test_fix_auto_decides_every_kind_on_its_node_behind_writes_into_slices(worker, model_file,
                                                                           tmp_path: Path) -> None:
    path = model_file("writes.py", WRITES_THEN_THREE_KINDS)
    onnx_path = tmp_path / "fixed.onnx"
    result = worker.run(AutoFixRequest(ModelRequest(str(path)), output=str(onnx_path)))
    assert result.after.unsupported == []
    assert sorted(c.kind for c in result.choices) == ["aten::cumsum", "aten::diff", "aten::histc"]
    assert all(c.on_node for c in result.choices), result.whole_model_why
    assert result.node_trials >= 3 and result.whole_model_trials == 0 and result.whole_model_why == []
    assert result.whole_model_exports == 2
    loaded = load_model(path)
    with torch.no_grad():
        expected = loaded.module(*loaded.example_inputs).numpy()
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    (actual,) = session.run(None, {session.get_inputs()[0].name: loaded.example_inputs[0].numpy()})
    np.testing.assert_allclose(actual, expected, atol=1e-5)
