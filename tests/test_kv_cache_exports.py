"""A decoder with a KV cache, exported by Fixport, matches torch at other batch/seq/past sizes:
past passed as ``*past`` tensors, as a ``DynamicCache`` keyword, and as transformers calls the
model (issue 44). Other sizes keep the mask's total = seq + past, and names stay unique."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
import torch

from fixport.core.analysis.analysis import analyze
from fixport.core.foundation.inputs import distinct_names
from fixport.core.foundation.other_sizes import other_size_inputs
from fixport.core.loaders.loading import load_model, onnx_output_names
from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest

COMMON = '''
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM
from transformers.cache_utils import DynamicCache

LAYERS = 2
PAST_AXES = {0: "batch", 2: "past"}


def tiny_lm():
    torch.manual_seed(0)
    config = Qwen2Config(num_hidden_layers=LAYERS, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=128, max_position_embeddings=256)
    return Qwen2ForCausalLM(config).eval()


def tensors(batch, seq, past):
    generator = torch.Generator().manual_seed(batch * 100 + seq * 10 + past)
    ids = torch.randint(0, 128, (batch, seq), generator=generator)
    mask = torch.ones(batch, past + seq, dtype=torch.long)
    positions = torch.arange(past, past + seq).expand(batch, seq).contiguous()
    cache = [torch.randn(batch, 2, past, 16, generator=generator) for _ in range(2 * LAYERS)]
    return ids, mask, positions, cache


def filled_cache(config, flat):
    cache = DynamicCache(config=config)
    for layer in range(LAYERS):
        cache.update(flat[2 * layer], flat[2 * layer + 1], layer)
    return cache
'''

STAR_PAST = COMMON + '''

class Step(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lm = tiny_lm()

    def forward(self, input_ids, attention_mask, position_ids, *past):
        out = self.lm(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                      past_key_values=filled_cache(self.lm.config, past), use_cache=True)
        return (out.logits, *[t for layer in out.past_key_values.layers for t in (layer.keys, layer.values)])


FIXPORT_EXAMPLE = {"export_options": {"dynamic_axes": {
    "input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "total"},
    "position_ids": {0: "batch", 1: "seq"}, **{f"past.{i}": PAST_AXES for i in range(2 * LAYERS)}}}}


def build():
    ids, mask, positions, cache = tensors(2, 3, 3)  # seq == past: the sizes that fooled check
    return Step().eval(), (ids, mask, positions, *cache)
'''

CACHE_KEYWORD = COMMON + '''

class Step(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lm = tiny_lm()

    def forward(self, input_ids, attention_mask, past_key_values):
        out = self.lm(input_ids=input_ids, attention_mask=attention_mask, past_key_values=past_key_values,
                      use_cache=True)
        return out.logits


FIXPORT_EXAMPLE = {"export_options": {"dynamic_axes": {
    "input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "total"},
    **{f"past_key_values.{i}": PAST_AXES for i in range(2 * LAYERS)}}}}


def build():
    model = Step().eval()
    ids, mask, _, cache = tensors(2, 3, 4)
    return model, {"input_ids": ids, "attention_mask": mask,
                   "past_key_values": filled_cache(model.lm.config, cache)}
'''

AS_TRANSFORMERS_CALLS = COMMON + '''

FIXPORT_EXAMPLE = {"export_options": {"dynamic_axes": {
    "input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "total"},
    **{f"past_key_values.{i}": PAST_AXES for i in range(2 * LAYERS)}}}}


def build():
    model = tiny_lm()
    ids, mask, _, cache = tensors(2, 3, 4)
    return model, {"input_ids": ids, "attention_mask": mask,
                   "past_key_values": filled_cache(model.config, cache), "use_cache": True}
'''

OTHER_SIZES = [(3, 5, 8), (1, 1, 6), (4, 2, 1)]  # (batch, seq, past), none of them traced


def _feeds(flat: list[torch.Tensor], session: onnxruntime.InferenceSession) -> dict[str, np.ndarray]:
    return {i.name: t.numpy() for i, t in zip(session.get_inputs(), flat)}


def _exported(tmp_path: Path, source: str, exporter: str) -> tuple[Path, onnxruntime.InferenceSession]:
    model_file = tmp_path / "decoder.py"
    model_file.write_text(source)
    output = tmp_path / "decoder.onnx"
    result = analyze(AnalyzeRequest(ModelRequest(str(model_file)), {"exporter": exporter}, output=str(output)))
    assert not result.unsupported, [p.message for p in result.unsupported]
    assert output.exists()
    names = [v.name for v in [*onnx.load(str(output)).graph.input, *onnx.load(str(output)).graph.output]]
    assert len(names) == len(set(names)), names
    return model_file, onnxruntime.InferenceSession(str(output), providers=["CPUExecutionProvider"])


def _flat_torch_outputs(value: object) -> list[np.ndarray]:
    from fixport.core.foundation.comparison import flatten_outputs
    return [array for _, array in flatten_outputs(value)]


def _assert_close(expected: list[np.ndarray], actual: list[np.ndarray], where: tuple[int, int, int]) -> None:
    assert len(expected) == len(actual), where
    for want, got in zip(expected, actual):
        assert want.shape == got.shape, where
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-3, err_msg=str(where))


@pytest.mark.slow
@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_star_past_decoder_matches_torch_at_other_sizes(tmp_path: Path, exporter: str) -> None:
    model_file, session = _exported(tmp_path, STAR_PAST, exporter)
    namespace: dict = {}
    exec(compile(STAR_PAST, str(model_file), "exec"), namespace)
    model, _ = namespace["build"]()
    for sizes in OTHER_SIZES:
        ids, mask, positions, cache = namespace["tensors"](*sizes)
        flat = [ids, mask, positions, *cache]
        with torch.no_grad():
            expected = _flat_torch_outputs(model(*flat))
        _assert_close(expected, session.run(None, _feeds(flat, session)), sizes)


@pytest.mark.slow
@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
@pytest.mark.parametrize("source", [CACHE_KEYWORD, AS_TRANSFORMERS_CALLS], ids=["cache_keyword", "as_transformers"])
def test_dynamic_cache_decoder_matches_torch_at_other_sizes(tmp_path: Path, source: str, exporter: str) -> None:
    """The TorchScript tracer takes no returned DynamicCache: Fixport hands it the cache's tensors."""
    model_file, session = _exported(tmp_path, source, exporter)
    namespace: dict = {}
    exec(compile(source, str(model_file), "exec"), namespace)
    model, kwargs = namespace["build"]()
    for sizes in OTHER_SIZES:
        ids, mask, _, cache = namespace["tensors"](*sizes)
        call = {**kwargs, "input_ids": ids, "attention_mask": mask,
                "past_key_values": namespace["filled_cache"](model.config if hasattr(model, "config")
                                                             else model.lm.config, cache)}
        with torch.no_grad():
            expected = _flat_torch_outputs(model(**call))
        _assert_close(expected, session.run(None, _feeds([ids, mask, *cache], session)), sizes)


def test_other_sizes_keep_a_mask_over_the_past_and_the_new_tokens() -> None:
    dims = {"batch": [(0, 0), (1, 0), (2, 0)], "seq": [(0, 1)], "total": [(1, 1)], "past": [(2, 2)]}
    for seq, past in [(3, 3), (3, 5), (1, 4)]:
        example = (torch.zeros(2, seq), torch.zeros(2, seq + past), torch.zeros(2, 2, past, 16))
        for label, inputs in other_size_inputs(dims, example):
            assert inputs[1].shape[1] == inputs[0].shape[1] + inputs[2].shape[2], label


def test_an_output_never_takes_an_input_s_name() -> None:
    assert distinct_names(["logits", "past.0", "x"], ["x", "past.0"]) == ["logits", "output.past.0", "output.x"]
    assert distinct_names(["x", "x"], ["x", "output.x"]) == ["output.x_1", "output.x_2"]


RETURNS_ITS_CACHE = '''
import torch
from transformers import Qwen2Config
from transformers.cache_utils import DynamicCache


class Echo(torch.nn.Module):
    def forward(self, hidden, past_key_values):
        past_key_values.update(hidden, hidden, 0)
        return {"hidden": hidden * 2, "past_key_values": past_key_values}


def build():
    cache = DynamicCache(config=Qwen2Config(num_hidden_layers=1))
    cache.update(torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4), 0)
    return Echo(), {"hidden": torch.randn(1, 2, 1, 4), "past_key_values": cache}
'''


def test_a_returned_cache_is_named_present_and_no_name_is_defined_twice(tmp_path: Path) -> None:
    model_file = tmp_path / "echo.py"
    model_file.write_text(RETURNS_ITS_CACHE)
    loaded = load_model(model_file)
    names = onnx_output_names(loaded, None)
    assert names is not None and names[0] == "output.hidden"
    assert names[1:] == ["present.0", "present.1"]
    assert not set(names) & set(loaded.input_names)


@pytest.mark.slow
def test_sizes_torch_exports_own_program_refuses_are_a_note_not_a_problem(tmp_path: Path) -> None:
    """A mask shorter than past + seq: torch pads it, the captured program asserts against it, and
    the ONNX file (Fixport's or plain torch's) fails there. Not the export's fault: a note naming
    the assumption, no shape_specialised problem."""
    model_file = tmp_path / "decoder.py"
    model_file.write_text(STAR_PAST)
    short_mask = {"input_ids": (3, 5), "attention_mask": (3, 12), "position_ids": (3, 5),
                  **{f"past.{i}": (3, 2, 8, 16) for i in range(4)}}
    result = analyze(AnalyzeRequest(ModelRequest(str(model_file)), {"exporter": "dynamo"},
                                    other_shapes=[short_mask]))
    assert result.unsupported == []
    refused = [note for note in result.notes if "program refuses them" in note]
    assert len(refused) == 1 and "attention_mask.shape[1]" in refused[0], result.notes


@pytest.mark.slow
def test_a_cache_decoder_is_captured_once_and_no_size_is_said_pinned(tmp_path: Path, monkeypatch) -> None:
    """Every cache tensor's batch is the one dim "batch": torch.export giving them one symbol pins
    nothing, so no second capture looks for the guards that pinned it (at real size it costs as
    much as the first) and no SizeGuard warning is said."""
    import fixport.core.exporters.dynamo.exporter as dynamo_exporter
    import fixport.core.exporters.dynamo.specialising_guards as specialising_guards

    recaptured = []
    original = specialising_guards.recaptured_guards

    def counted(*args, **kwargs):
        recaptured.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(specialising_guards, "recaptured_guards", counted)
    monkeypatch.setattr(dynamo_exporter, "recaptured_guards", counted)
    model_file = tmp_path / "decoder.py"
    model_file.write_text(AS_TRANSFORMERS_CALLS)
    result = analyze(AnalyzeRequest(ModelRequest(str(model_file)), {"exporter": "dynamo"}))
    assert not result.unsupported, [p.message for p in result.unsupported]
    assert result.other_sizes_checked, result.notes
    assert not [w for w in result.warnings if w.startswith("SizeGuard")], result.warnings
    assert recaptured == []
