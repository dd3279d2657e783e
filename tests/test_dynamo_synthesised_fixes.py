"""The synthesised fix families on the dynamo route: Fixport's own decomposition of the op
torch.onnx decomposed into a prim, error checks torch.export wraps in effect tokens, static-shape
materialisation and the same-name ONNX op. Real torch.onnx exports, real ONNX Runtime sessions.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from fixport.core.loaders.loading import load_model
from fixport.core.project.project import FixMapping
from fixport.core.records.requests import AnalyzeRequest, AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.symbolics.library import parse_template_source
from fixport.symbolics.synthesis.standard_op import standard_op_function_template

DYNAMO = {"exporter": "dynamo"}

SPECIAL_FUNCTIONS = '''
import torch

FIXPORT_EXAMPLE = {"opset": 18}


class Special(torch.nn.Module):
    def forward(self, x):
        return torch.lgamma(x) + torch.special.i1(x) + torch.cumprod(x, dim=1)


def build():
    torch.manual_seed(0)
    return Special().eval(), (torch.rand(3, 5) * 4 + 0.1,)
'''

INVERSE = '''
import torch

FIXPORT_EXAMPLE = {"opset": 18}


class Inverse(torch.nn.Module):
    def forward(self, a):
        return torch.linalg.inv(a) @ a.transpose(-1, -2)


def build():
    torch.manual_seed(0)
    return Inverse().eval(), (torch.randn(2, 4, 4) + 4 * torch.eye(4),)
'''

POOL3D = '''
import torch

FIXPORT_EXAMPLE = {"opset": 18}


class Pool(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.adaptive_avg_pool3d(x, (3, 2, 3)) * 2


def build():
    torch.manual_seed(0)
    return Pool().eval(), (torch.randn(2, 3, 7, 5, 6),)
'''


def _onnx_matches_torch(path: Path, model: Path, atol: float = 1e-4) -> None:
    loaded = load_model(model)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), loaded.example_inputs)}
    (actual,) = session.run(None, feeds)
    with torch.no_grad():
        expected = loaded.module(*loaded.example_inputs).numpy()
    np.testing.assert_allclose(actual, expected, atol=atol, rtol=1e-4)


@pytest.mark.slow
def test_a_prim_torch_onnx_made_is_fixed_by_decomposing_the_captured_op(worker, model_file, tmp_path) -> None:
    """torch.onnx turns aten::lgamma into prims::lgamma, which has no ONNX function: the problem
    names the captured op, and Fixport's own decomposition of that op is chosen, tried on it alone."""
    model, output = model_file("special.py", SPECIAL_FUNCTIONS), tmp_path / "special.onnx"
    checked = worker.run(AnalyzeRequest(ModelRequest(str(model)), options=dict(DYNAMO)))
    origins = {p.kind: p.decomposed_from for p in checked.unsupported}
    assert origins["prims::lgamma.default"] == "aten::lgamma.default"
    assert origins["prims::bessel_i1.default"] == "aten::special_i1.default"
    assert origins["prims::prod.default"] == "aten::cumprod.default"
    assert "while decomposing aten::lgamma.default" in next(
        p.message for p in checked.unsupported if p.kind == "prims::lgamma.default")

    result = worker.run(AutoFixRequest(ModelRequest(str(model)), dict(DYNAMO), output=str(output)))
    assert result.after.unsupported == [], result.rejected
    assert {(c.kind, c.family) for c in result.choices} == {
        ("prims::lgamma.default", "decomposition_replay"), ("prims::bessel_i1.default", "decomposition_replay"),
        ("prims::prod.default", "decomposition_replay")}
    assert {m.replaced_kind for m in result.mappings} == {
        "aten::lgamma.default", "aten::special_i1.default", "aten::cumprod.default"}
    assert result.whole_model_trials == 0 and result.node_trials >= 3  # each decided on the captured op alone
    _onnx_matches_torch(output, model)


@pytest.mark.slow
def test_the_fix_script_replaces_the_captured_op(cli, model_file, tmp_path: Path) -> None:
    model, project = model_file("special.py", SPECIAL_FUNCTIONS), tmp_path / "special.fixport.json"
    fixed = cli("fix", str(model), "--exporter", "dynamo", "--auto", "-o", str(project))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    script = tmp_path / "special_export.py"
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    assert "'aten::lgamma.default'" in script.read_text()
    output = tmp_path / "from_script.onnx"
    completed = subprocess.run([sys.executable, str(script), "-o", str(output)], cwd=tmp_path,
                               capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    _onnx_matches_torch(output, model)


@pytest.mark.slow
def test_an_error_check_torch_export_wraps_in_effect_tokens_is_named_and_dropped(worker, model_file,
                                                                                tmp_path: Path) -> None:
    """linalg.inv checks its factorization (aten::_linalg_check_errors, an op with side effects that
    torch.export wraps in with_effects). The problem is named after the check, not the wrapper, and
    dropping it (ONNX has no errors) fixes the export."""
    model, output = model_file("inverse.py", INVERSE), tmp_path / "inverse.onnx"
    checked = worker.run(AnalyzeRequest(ModelRequest(str(model)), options=dict(DYNAMO)))
    kinds = {p.kind for p in checked.unsupported}
    assert "aten::_linalg_check_errors.default" in kinds and "python::with_effects" not in kinds

    result = worker.run(AutoFixRequest(ModelRequest(str(model)), dict(DYNAMO), output=str(output)))
    assert result.after.unsupported == [], result.rejected
    chosen = {c.kind: c for c in result.choices}
    assert chosen["aten::_linalg_check_errors.default"].template_id == "dynamo.inline_implementation"
    assert "drop the check" in chosen["aten::_linalg_check_errors.default"].why
    _onnx_matches_torch(output, model, atol=1e-4)


@pytest.mark.slow
def test_a_linear_op_is_materialised_at_static_shapes_and_refused_under_dynamic_ones(worker, model_file,
                                                                                     tmp_path: Path) -> None:
    model, output = model_file("pool3d.py", POOL3D), tmp_path / "pool3d.onnx"
    result = worker.run(AutoFixRequest(ModelRequest(str(model)), dict(DYNAMO), output=str(output)))
    assert result.after.unsupported == [], result.rejected
    (choice,) = result.choices
    assert (choice.kind, choice.family) == ("aten::_adaptive_avg_pool3d.default", "static_materialisation")
    _onnx_matches_torch(output, model, atol=1e-5)

    dynamic = dict(DYNAMO, dynamic_axes={"x": {0: "batch", 3: "height"}})
    refused = worker.run(AutoFixRequest(ModelRequest(str(model)), dynamic))
    assert refused.after.unsupported
    assert any("shapes are dynamic" in r.reason for r in refused.rejected), refused.rejected


def test_the_same_name_onnx_op_applies_as_a_translation(worker, model_file, tmp_path: Path) -> None:
    """The generated ONNX function for aten::cosh.default is Cosh; registered as a fix it is what
    the export writes, and it runs and matches torch."""
    source = standard_op_function_template("aten::cosh.default")
    assert source is not None and standard_op_function_template("aten::add.Tensor") is None
    info = parse_template_source(source)
    model = model_file("cosh.py", '''
import torch

FIXPORT_EXAMPLE = {"opset": 18}


class Cosh(torch.nn.Module):
    def forward(self, x):
        return torch.cosh(x) * 3


def build():
    return Cosh().eval(), (torch.randn(4, 5),)
''')
    output = tmp_path / "cosh.onnx"
    mapping = FixMapping(target_kind="aten::cosh.default", template_id=info.id, source=source)
    result = worker.run(AnalyzeRequest(ModelRequest(str(model)), dict(DYNAMO), [mapping], output=str(output)))
    assert result.unsupported == []
    import onnx

    assert [n.op_type for n in onnx.load(str(output)).graph.node] == ["Cosh", "Mul"]
    _onnx_matches_torch(output, model, atol=1e-5)


GAMMA_AND_SVDVALS = '''
import torch

FIXPORT_EXAMPLE = {"opset": 18}


class Gamma(torch.nn.Module):
    def forward(self, x):
        return torch.mvlgamma(x, p=3) + torch.linalg.svdvals(x[:3, :3]).sum()


def build():
    torch.manual_seed(0)
    return Gamma().eval(), (torch.rand(4, 5) * 3 + 2,)
'''

MASKED_MEAN = '''
import torch

FIXPORT_EXAMPLE = {"opset": 18}


class Mean(torch.nn.Module):
    def forward(self, x, mask):
        return torch.divide((x * mask).sum(-1), mask.sum(-1))


def build():
    torch.manual_seed(0)
    return Mean().eval(), (torch.randn(3, 5), torch.randint(1, 2, (3, 5)))
'''


@pytest.mark.slow
def test_nested_prims_unread_outputs_and_composite_kernels(worker, model_file, tmp_path: Path) -> None:
    """mvlgamma's decomposition calls lgamma, which becomes prims::lgamma: Fixport's lgamma (the op
    the prim is named after) replaces it. svdvals asks _linalg_svd for no vectors: the node alone is
    judged on the values the model reads. divide.Tensor is torch's own composite of div."""
    model, output = model_file("gamma.py", GAMMA_AND_SVDVALS), tmp_path / "gamma.onnx"
    result = worker.run(AutoFixRequest(ModelRequest(str(model)), dict(DYNAMO), output=str(output)))
    assert result.after.unsupported == [], result.rejected
    assert {m.target_kind: m.replaced_kind for m in result.mappings} == {
        "prims::lgamma.default": "aten::lgamma.default", "aten::_linalg_svd.default": "aten::_linalg_svd.default"}
    assert result.whole_model_trials == 0
    _onnx_matches_torch(output, model, atol=1e-4)

    model, output = model_file("mean.py", MASKED_MEAN), tmp_path / "mean.onnx"
    result = worker.run(AutoFixRequest(ModelRequest(str(model)), dict(DYNAMO), output=str(output)))
    assert "aten::divide.Tensor" in {p.kind for p in result.before.unsupported}
    assert result.after.unsupported == [], result.rejected
    _onnx_matches_torch(output, model, atol=1e-5)


COMPLEX_VALUES = '''
import torch

FIXPORT_EXAMPLE = {"opset": 18}


class Spectrum(torch.nn.Module):
    def forward(self, x, freqs):
        rotated = torch.view_as_complex(x) * torch.polar(torch.ones_like(freqs), freqs).unsqueeze(-1)
        return torch.view_as_real(rotated), torch.fft.fft2(torch.view_as_complex(x), s=(6, 4))


def build():
    torch.manual_seed(0)
    return Spectrum().eval(), (torch.randn(5, 3, 2), torch.randn(5))
'''


@pytest.mark.slow
def test_ops_on_complex_values_get_complex_templates_and_complex_outputs_compare(cli, worker, model_file,
                                                                                  tmp_path: Path) -> None:
    """unsqueeze and constant_pad_nd have no complex ONNX function in torch_lib; Fixport's, written
    for the (real, imag) layout, are registered for complex inputs only. A complex output (the FFT)
    is compared with ONNX's real layout of it. The fix script registers them the same way."""
    model, output = model_file("spectrum.py", COMPLEX_VALUES), tmp_path / "spectrum.onnx"
    result = worker.run(AutoFixRequest(ModelRequest(str(model)), dict(DYNAMO), output=str(output)))
    assert result.after.unsupported == [], result.rejected
    assert {c.kind: c.template_id for c in result.choices} == {
        "aten::unsqueeze.default": "onnx_function.complex_unsqueeze",
        "aten::constant_pad_nd.default": "onnx_function.complex_constant_pad_nd"}

    project = tmp_path / "spectrum.fixport.json"
    assert cli("fix", str(model), "--exporter", "dynamo", "--auto", "-o", str(project)).returncode == 0
    script = tmp_path / "spectrum_export.py"
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    from_script = tmp_path / "from_script.onnx"
    completed = subprocess.run([sys.executable, str(script), "-o", str(from_script)], cwd=tmp_path,
                               capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    loaded = load_model(model)
    for path in (output, from_script):
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), loaded.example_inputs)}
        rotated, spectrum = session.run(None, feeds)
        with torch.no_grad():
            expected_rotated, expected_spectrum = loaded.module(*loaded.example_inputs)
        np.testing.assert_allclose(rotated, expected_rotated.numpy(), atol=1e-5)
        np.testing.assert_allclose(spectrum, torch.view_as_real(expected_spectrum).numpy(), atol=1e-4)


def test_the_template_dock_offers_the_generated_dynamo_fixes(worker) -> None:
    """What fix --auto tries is what the dock lists: the same-name ONNX op first, the matrix last."""
    from fixport.core.records.requests import SynthesizeRequest

    offers = worker.run(SynthesizeRequest("aten::cosh.default", 18, "dynamo"))
    ids = [offer.template_id for offer in offers]
    assert ids[0] == "synthesized.standard_op.cosh" and ids[-1] == "synthesized.materialised.cosh.default"
    assert "dynamo.stub" in ids
