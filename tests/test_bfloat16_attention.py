"""bfloat16 attention under the TorchScript exporter (issue 45, item 1): torch's own conversion of
scaled_dot_product_attention with a Python scale, the hand-written SDPA fix and the torch_lib
bridge all give bfloat16 graphs that ONNX Runtime runs to torch's numbers."""
from __future__ import annotations

import io
import warnings

import ml_dtypes
import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto

from fixport.core.exporters.torchscript.bfloat16_casts import bfloat16_casts_renumbered
from fixport.core.exporters.torchscript.conversion_hooks import conversion_hooks
from fixport.core.foundation.torch_arrays import tensor_from_array
from fixport.core.onnx_io.onnx_graph import strip_provenance
from fixport.core.onnx_io.ort_session import create_session
from tests.fixport_export_helpers import Lambda, export, spec_for

OPSET = 17


def _attention(**options):
    return Lambda(lambda q, k, v, mask: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **options))


def _inputs(bool_mask: bool = False) -> list[torch.Tensor]:
    """bfloat16 query, key and value; a causal mask, additive bfloat16 or bool with a fully masked row."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 6, 16, dtype=torch.bfloat16) for _ in range(3))
    allowed = torch.ones(6, 6, dtype=torch.bool).tril()
    if bool_mask:
        allowed[2] = False  # torch gives 0 there, not the NaN of a softmax over -inf only
        return [q, k, v, allowed]
    return [q, k, v, torch.zeros(6, 6).masked_fill(~allowed, float("-inf")).to(torch.bfloat16)]


def _exported(model, inputs) -> onnx.ModelProto:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, tuple(inputs), buffer, dynamo=False, opset_version=OPSET)
    return onnx.load_from_string(buffer.getvalue())


def _assert_runs_to_torchs_numbers(model: onnx.ModelProto, torch_model, inputs) -> None:
    """ONNX Runtime's run is as close to the model in float32 as torch's own bfloat16 run (plus
    one bfloat16 step at the output's size): the export computes the same thing in bfloat16."""
    assert model.graph.output[0].type.tensor_type.elem_type == TensorProto.BFLOAT16
    session = create_session(model, "cpu").session
    feeds = {meta.name: np.asarray(value.float().numpy() if value.is_floating_point() else value.numpy())
             for meta, value in zip(session.get_inputs(), inputs)}
    (got,) = session.run(None, feeds)
    assert not np.isnan(np.asarray(got, np.float32)).any()
    with torch.no_grad():
        in_float32 = torch_model(*[t.float() if t.is_floating_point() else t for t in inputs]).numpy()
        in_bfloat16 = torch_model(*inputs).float().numpy()
    onnx_off = np.abs(np.asarray(got, np.float32) - in_float32).max()
    torch_off = np.abs(in_bfloat16 - in_float32).max()
    step = float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps) * np.abs(in_float32).max()
    assert onnx_off <= torch_off + step, (onnx_off, torch_off, step)


def test_torchs_bfloat16_attention_with_a_python_scale_is_written_with_bfloat16_casts() -> None:
    model, inputs = _attention(scale=0.3), _inputs()
    with pytest.raises(RuntimeError, match="ComplexDouble"):  # torch alone: its Cast names c10's type number
        _exported(model, inputs)
    with bfloat16_casts_renumbered():
        fixed = _exported(model, inputs)
    assert torch._C._jit_pass_onnx_scalar_type_analysis is not None  # restored, not left wrapped
    casts = [n for n in fixed.graph.node if n.op_type == "Cast"]
    assert all(a.i != TensorProto.COMPLEX128 for n in casts for a in n.attribute if a.name == "to")
    _assert_runs_to_torchs_numbers(fixed, model, inputs)


@pytest.mark.parametrize("bool_mask", [False, True], ids=["additive_mask", "bool_mask"])
def test_torchscript_exports_keep_bfloat16_attention_in_bfloat16(bool_mask) -> None:
    """The renumbered Casts, and a bool mask made bfloat16 (torch's symbolic widens the output to
    float32 with its float32 mask constants), in every export Fixport runs."""
    model, inputs = _attention(scale=0.3), _inputs(bool_mask)
    with conversion_hooks(diagnose=True, opset=OPSET, autograd_inlining=True):
        exported = _exported(model, inputs)
    strip_provenance(exported)  # the hooks' node tags, which the exporter strips too
    _assert_runs_to_torchs_numbers(exported, model, inputs)


@pytest.mark.parametrize("template_id", ["decompose.scaled_dot_product_attention", "bridge.torchlib"])
@pytest.mark.parametrize("scale", [None, 0.3], ids=["default_scale", "python_scale"])
def test_the_sdpa_fix_and_the_torchlib_bridge_write_bfloat16_constants(template_id, scale) -> None:
    model, inputs = _attention(**({} if scale is None else {"scale": scale})), _inputs()
    exported = export(model, inputs, [spec_for(template_id, "aten::scaled_dot_product_attention")], OPSET)
    _assert_runs_to_torchs_numbers(exported, model, inputs)


def test_bfloat16_arrays_become_torch_tensors_bit_for_bit() -> None:
    values = np.array([1.5, -2.25, 3.296875, np.inf], dtype=ml_dtypes.bfloat16)
    tensor = tensor_from_array(values)
    assert tensor.dtype == torch.bfloat16
    assert tensor.float().tolist() == values.astype(np.float32).tolist()
    assert tensor_from_array(np.arange(3, dtype=np.int64)).dtype == torch.int64
    # a scalar constant (a Range bound) stays a scalar, in either format
    assert tensor_from_array(np.array(7, dtype=np.int64)).shape == ()
    assert tensor_from_array(np.array(1.5, dtype=ml_dtypes.bfloat16)).shape == ()


@pytest.mark.slow
def test_a_bfloat16_qwen2_folder_checks_clean_with_torchscript(cli, tmp_path) -> None:
    """The folder issue 45 reported: each attention layer was symbolic_rejected (ComplexDouble)."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
        vocab_size=100, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, bos_token_id=1, eos_token_id=2,
        pad_token_id=0)).to(torch.bfloat16).save_pretrained(tmp_path / "qwen2")
    ran = cli("check", str(tmp_path / "qwen2"))
    said = " ".join(ran.stdout.split())
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "ComplexDouble" not in said and "symbolic_rejected" not in said
    assert said.count("OK: the model exports") == 2 and "same tokens as torch" in said


# The fix table's rows torch itself cannot run in bfloat16 (linalg.inv, FFTs, complex views, the
# antialiased resize's weights, grouped_mm's strides) or that ONNX has no bfloat16 for (opset 8),
# and pow_as_mul's known TorchScript failure: every other row must export in bfloat16.
NOT_IN_BFLOAT16 = ("linalg.", "fft.", "complex", "torchvision.", "autograd.", "custom", "aten_fallback", "dynamo.",
                   "decompose.upsample_bilinear2d_aa", "onnx_function.grouped_mm", "onnx_function.pow_as_mul",
                   "onnx_function.complex_")


def _bfloat16_rows() -> list:
    from tests.fix_library_table import CASES

    return [pytest.param(case, id=case.template_id) for case in CASES
            if case.forward and case.inputs and case.opset >= 13 and not case.template_id.startswith(NOT_IN_BFLOAT16)]


@pytest.mark.slow
@pytest.mark.parametrize("case", _bfloat16_rows())
def test_every_fix_exports_a_bfloat16_model_without_a_numpy_conversion_failing(case) -> None:
    torch.manual_seed(0)
    inputs = [t.bfloat16() if isinstance(t, torch.Tensor) and t.is_floating_point() else t
              for t in eval(case.inputs, {"torch": torch, "F": F})]
    model = Lambda(eval(f"lambda x=None, y=None, z=None: {case.forward}", {"torch": torch, "F": F}))
    specs = [spec_for(template_id, op.split(".")[0], **case.params) for template_id, op in case.ops()]
    exported = export(model, inputs, specs, case.opset)
    assert exported.graph.output  # it exported: no "can't convert np.ndarray of type ml_dtypes.bfloat16"
