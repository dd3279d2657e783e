"""Example inputs as torch.onnx.export takes them (issue 34): keyword arguments, nested tuples, lists
and dicts with None and numbers beside the tensors, ``*past`` and transformers' cache objects, each
tensor named from its place in the call, through both exporters, the comparison and the fix script."""
from __future__ import annotations

import subprocess
import sys

import onnx
import pytest

from fixport.core.foundation.errors import FixportError
from fixport.core.project.project import Project, save_project
from fixport.core.records.requests import AnalyzeRequest, CompareRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.graph import GRAPH_INPUT_KIND, display_graph
from tests.conftest import slow_but_one

KWARGS_BERT = """
    import torch
    from transformers import BertConfig, BertModel

    def build():
        torch.manual_seed(0)
        config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=64, max_position_embeddings=32)
        mask = torch.ones(2, 8, dtype=torch.long)
        mask[1, 5:] = 0
        return BertModel(config).eval(), {"input_ids": torch.randint(0, 100, (2, 8)), "attention_mask": mask}
"""

PAST_DECODER = """
    import torch
    from torch import nn

    class Step(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.out = nn.Embedding(50, 16), nn.Linear(16, 50)

        def forward(self, input_ids, attention_mask, *past):
            x = self.embed(input_ids)
            for key, value in zip(past[0::2], past[1::2]):
                scores = x @ key.transpose(-1, -2) / 4.0 + (attention_mask[:, None, :] - 1) * 1e4
                x = x + scores.softmax(-1) @ value
            return self.out(x)

    def build():
        torch.manual_seed(0)
        past = tuple(torch.randn(2, 5, 16) for _ in range(4))
        return Step().eval(), (torch.randint(0, 50, (2, 3)), torch.ones(2, 5), *past), {}
"""

CACHE_KWARGS = """
    import torch
    from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lm = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                                                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                                   max_position_embeddings=64)).eval()

        def forward(self, input_ids, attention_mask, past_key_values):
            return self.lm(input_ids=input_ids, attention_mask=attention_mask,
                           past_key_values=past_key_values).logits

    def build():
        torch.manual_seed(0)
        model = Logits().eval()
        cache = DynamicCache(config=model.lm.config)
        for layer in range(2):
            cache.update(torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8), layer)
        return model, {"input_ids": torch.randint(0, 64, (1, 3)), "attention_mask": torch.ones(1, 8, dtype=torch.long),
                       "past_key_values": cache}
"""

NESTED_KWARGS_WITH_A_FIX = """
    import torch
    from torch import nn

    class Model(nn.Module):
        def forward(self, x, *, offsets, extra=None, scale=2.0):
            y = torch.diff(x, dim=-1) * scale  # aten::diff: no TorchScript symbolic, a fix is needed
            if extra is not None:
                y = y + extra["bias"]
            return y + offsets[0] - offsets[1]

    def build():
        torch.manual_seed(0)
        return Model().eval(), (torch.randn(2, 6),), {"offsets": [torch.randn(2, 5), torch.randn(2, 5)],
                                                       "extra": {"bias": torch.randn(5)}, "scale": 3.0}
"""


@pytest.mark.parametrize("exporter", slow_but_one(["torchscript", "dynamo"], "torchscript"))
def test_a_bert_called_with_keyword_arguments_exports_and_compares(worker, model_file, exporter) -> None:
    model = ModelRequest(str(model_file("kwargs_bert.py", KWARGS_BERT)))
    analysis = worker.run(AnalyzeRequest(model, {"exporter": exporter}))
    assert analysis.unsupported == [] and analysis.input_names == ["input_ids", "attention_mask"]
    assert analysis.onnx_graph.outputs == ["last_hidden_state", "pooler_output"]  # the ModelOutput's keys
    compared = worker.run(CompareRequest(model, {"exporter": exporter}, runs=2))
    assert compared.passed, compared.to_json()


@pytest.mark.slow  # the fix script's own tier test runs one script in a new process
@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_the_fix_script_names_inputs_and_outputs_as_fixport_did(cli, model_file, tmp_path, exporter) -> None:
    path = model_file("kwargs_bert.py", KWARGS_BERT)
    project, script, onnx_file = tmp_path / "p.fixport.json", tmp_path / "fix_export.py", tmp_path / "out.onnx"
    save_project(Project(model_path=str(path), export_options={"exporter": exporter}), project)
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    ran = subprocess.run([sys.executable, str(script), "-o", str(onnx_file)], capture_output=True, text=True,
                         timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    graph = onnx.load(str(onnx_file)).graph
    assert [i.name for i in graph.input] == ["input_ids", "attention_mask"]
    assert [o.name for o in graph.output] == ["last_hidden_state", "pooler_output"]


@pytest.mark.parametrize("exporter", slow_but_one(["torchscript", "dynamo"], "torchscript"))
def test_a_decoder_step_with_star_past_names_each_cache_tensor(worker, model_file, exporter) -> None:
    model = ModelRequest(str(model_file("past_decoder.py", PAST_DECODER)))
    analysis = worker.run(AnalyzeRequest(model, {"exporter": exporter}))
    assert analysis.input_names == ["input_ids", "attention_mask", "past.0", "past.1", "past.2", "past.3"]
    assert analysis.unsupported == []
    shown = display_graph(analysis.source_graph)  # the source pane's inputs carry the same names
    assert [n.name for n in shown.nodes if n.kind == GRAPH_INPUT_KIND] == analysis.input_names
    assert worker.run(CompareRequest(model, {"exporter": exporter})).passed


@pytest.mark.slow
def test_a_dynamic_cache_keyword_argument_exports_with_dynamo_and_compares(worker, model_file) -> None:
    """transformers' own exporter registers the cache as a pytree: torch.export no longer refuses it."""
    model = ModelRequest(str(model_file("cache_kwargs.py", CACHE_KWARGS)))
    analysis = worker.run(AnalyzeRequest(model, {"exporter": "dynamo"}))
    assert analysis.unsupported == []
    assert analysis.input_names[:2] == ["input_ids", "attention_mask"]
    assert all(name.startswith("past_key_values.") for name in analysis.input_names[2:])
    assert len(analysis.input_names) == 6  # a key and a value per layer
    result = worker.run(CompareRequest(model, {"exporter": "dynamo"}))
    assert result.passed and result.node_analysis is not None and result.node_analysis.nodes, result.to_json()


@pytest.mark.slow
def test_nested_keyword_inputs_are_fixed_and_the_fix_script_reproduces_them(cli, model_file, tmp_path) -> None:
    """None, a float and a dict beside the tensors; the script rebuilds the call and names the inputs alike."""
    path = model_file("nested.py", NESTED_KWARGS_WITH_A_FIX)
    project, script, onnx_file = tmp_path / "p.fixport.json", tmp_path / "fix_export.py", tmp_path / "out.onnx"
    fixed = cli("fix", str(path), "--auto", "-o", str(project))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    ran = subprocess.run([sys.executable, str(script), "-o", str(onnx_file)], capture_output=True, text=True,
                         timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "max abs diff 0" in ran.stdout or "max abs diff" in ran.stdout
    assert [i.name for i in onnx.load(str(onnx_file)).graph.input] == ["x", "offsets.0", "offsets.1", "extra.bias"]


def test_an_input_that_is_no_pytree_is_named_with_what_to_do(worker, model_file) -> None:
    path = model_file("odd.py", """
        import torch

        class Settings:
            pass

        class Model(torch.nn.Module):
            def forward(self, x, settings):
                return x * 2

        def build():
            return Model(), (torch.ones(2),), {"settings": Settings()}
    """)
    with pytest.raises(FixportError) as raised:
        worker.run(AnalyzeRequest(ModelRequest(str(path))))
    assert "settings" in raised.value.message and "Settings" in raised.value.message
    assert "register_pytree_node" in raised.value.hint


PAST_DECODER_WITH_DIMS = PAST_DECODER + """
    from torch.export import Dim

    batch, past_length = Dim("batch", min=1, max=8), Dim("past", min=2, max=64)
    dynamic_shapes = {"input_ids": {0: batch, 1: Dim.DYNAMIC}, "attention_mask": {0: batch, 1: past_length},
                      "past": [{0: batch, 1: past_length}] * 4}
"""
DECODER_SHAPES = ('{"input_ids": {"0": "batch", "1": "seq"}, "attention_mask": {"0": "batch", "1": "past"}, '
                  '"past": [' + ", ".join(['{"0": "batch", "1": "past"}'] * 4) + "]}")


def test_dynamic_shapes_nested_like_the_inputs_become_axes_by_input_name() -> None:
    from fixport.core.project.dynamic_shapes import dynamic_axes_from_shapes

    shapes = {"input_ids": {"0": "batch", "1": "seq"}, "past": [{"0": "batch", "2": "past"}, None, {1: 8}],
              "extra": {"bias": {0: "n"}}}
    assert dynamic_axes_from_shapes(shapes) == {"input_ids": {0: "batch", 1: "seq"}, "past.0": {0: "batch", 2: "past"},
                                                "extra.bias": {0: "n"}}  # None and sizes stay static
    with pytest.raises(FixportError, match="'x'"):
        dynamic_axes_from_shapes({"x": {"0": ["batch"]}})


@pytest.mark.slow
def test_a_model_files_dynamic_shapes_with_torch_dims_are_checked_at_other_sizes(worker, model_file) -> None:
    model = ModelRequest(str(model_file("past_dims.py", PAST_DECODER_WITH_DIMS)))
    result = worker.run(CompareRequest(model, {"exporter": "dynamo"}))
    assert result.passed, result.to_json()
    assert len(result.run_labels) >= 3 and any("past=" in label for label in result.run_labels), result.run_labels


@pytest.mark.slow
def test_the_command_lines_dynamic_shapes_give_a_decoder_that_matches_at_other_sizes(cli, model_file) -> None:
    """The issue's KV-cache step with *past: torch's own conversion of dynamic axes failed on it."""
    path = model_file("past_decoder.py", PAST_DECODER)
    ran = cli("compare", str(path), "--exporter", "dynamo", "--dynamic-shapes", DECODER_SHAPES)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    said = " ".join(ran.stdout.split())
    assert "batch=3, seq=5, past=8" in said and "PASS" in said
