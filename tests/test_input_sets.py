"""Several example input sets from build() (issue 34): the dims that vary between them are inferred
by torch's InputObserver and proposed as dynamic_shapes, declared for the export where the model
file declares none, and check, compare and the fix script run at every set ("set 2", ...)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import onnx
import pytest

from fixport.core.fixing.fix_script import write_fix_script
from fixport.core.foundation.errors import ModelLoadError
from fixport.core.loaders.input_sets import SETS_ONLY_NOTE
from fixport.core.loaders.loading import load_model
from fixport.core.project.dynamic_shapes import dynamic_axes_from_shapes
from fixport.core.project.project import Project
from fixport.core.project.proposed_shapes import proposed_shapes
from fixport.core.records.requests import AnalyzeRequest, CompareRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.vocabulary import ProblemReason
from tests.conftest import run_main

# A decoder step with a KV-style past: a prompt set (batch 2, 3 new tokens, past 5) and a decode set
# (batch 3, 1 new token, past 7): batch, seq and past vary, the hidden size does not.
DECODER_SETS = """
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

    def step(batch, seq, past):
        return (torch.randint(0, 50, (batch, seq)), torch.ones(batch, past),
                *(torch.randn(batch, past, 16) for _ in range(4)))

    def build():
        torch.manual_seed(0)
        return Step().eval(), [step(2, 3, 5), step(3, 1, 7)]
"""
PAST_NAMES = ["past.0", "past.1", "past.2", "past.3"]

# transformers' DynamicCache as a keyword argument, a prompt step and a decode step at another batch,
# the attention mask as long as past + new tokens (a relation sizes made up for each dim would break).
CACHE_SETS = """
    import torch
    from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lm = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                                                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                                   max_position_embeddings=64)).eval()

        def forward(self, input_ids, attention_mask, past_key_values):
            return self.lm(input_ids=input_ids, attention_mask=attention_mask, past_key_values=past_key_values).logits

    def step(model, batch, seq, past):
        cache = DynamicCache(config=model.lm.config)
        for layer in range(2):
            cache.update(torch.randn(batch, 2, past, 8), torch.randn(batch, 2, past, 8), layer)
        return {"input_ids": torch.randint(0, 64, (batch, seq)),
                "attention_mask": torch.ones(batch, past + seq, dtype=torch.long), "past_key_values": cache}

    def build():
        torch.manual_seed(0)
        model = Logits().eval()
        return model, [step(model, 1, 3, 5), step(model, 2, 1, 8)]
"""


def test_the_dims_that_vary_between_the_sets_are_proposed_one_name_per_dim(model_file) -> None:
    loaded = load_model(model_file("decoder_sets.py", DECODER_SETS))
    proposed = loaded.proposed_dynamic_axes
    assert [tuple(t.shape) for t in loaded.other_input_sets[0]] == [(3, 1), (3, 7), *[(3, 7, 16)] * 4]
    batch, seq, past = proposed["input_ids"][0], proposed["input_ids"][1], proposed["attention_mask"][1]
    assert len({batch, seq, past}) == 3  # three dims, each named once
    assert proposed == {"input_ids": {0: batch, 1: seq}, "attention_mask": {0: batch, 1: past},
                        **{name: {0: batch, 1: past} for name in PAST_NAMES}}  # the hidden size stays static
    assert loaded.settings["export_options"]["dynamic_axes"] == proposed  # nothing declared: the proposal is
    pasted = proposed_shapes(proposed)
    assert list(pasted) == ["input_ids", "attention_mask", "past"] and len(pasted["past"]) == 4
    assert dynamic_axes_from_shapes(json.loads(json.dumps(pasted))) == proposed  # as --dynamic-shapes reads it


@pytest.mark.parametrize("exporter", ["torchscript", pytest.param("dynamo", marks=pytest.mark.slow)])
def test_check_and_compare_run_at_every_set_with_the_proposal(worker, model_file, exporter) -> None:
    model = ModelRequest(str(model_file("decoder_sets.py", DECODER_SETS)))
    analysis = worker.run(AnalyzeRequest(model, {"exporter": exporter}))
    assert analysis.unsupported == [], [p.message for p in analysis.unsupported]
    assert analysis.other_sizes_checked == ["set 2"]  # the dims are the sets': checked at their sizes
    assert any(note.startswith("No dynamic dims are declared") for note in analysis.notes), analysis.notes
    assert analysis.proposed_dynamic_shapes["past"][0] == {"0": "input_ids_dim0", "1": "attention_mask_dim1"}
    compared = worker.run(CompareRequest(model, {"exporter": exporter}, runs=1))
    assert compared.passed, compared.to_json()
    assert compared.run_labels[:2] == ["example inputs", "set 2"], compared.run_labels


def test_a_varying_dim_left_static_is_named_and_fails_at_its_set(worker, model_file) -> None:
    """Dims declared (here on the command line) but not every one that varies: the note names the
    others, and the check fails at set 2, where they differ."""
    model = ModelRequest(str(model_file("decoder_sets.py", DECODER_SETS)))
    declared = {"input_ids": {1: "seq"}}
    analysis = worker.run(AnalyzeRequest(model, {"exporter": "dynamo", "dynamic_axes": declared}))
    note = next(note for note in analysis.notes if "not declared dynamic" in note)
    assert all(dim in note for dim in ("input_ids[0]", "attention_mask[1]", "past.3[1]")) and "input_ids[1]" not in note
    assert [p.reason for p in analysis.unsupported] == [ProblemReason.SHAPE_SPECIALISED]
    assert analysis.unsupported[0].message.startswith("At set 2 (inputs 3x1, 3x7, 3x7x16")


@pytest.mark.parametrize(("sets", "said"), [
    ("[step(2, 3, 5), step(3, 1, 7)[:4]]", "set 1 gives past.2, set 2 does not"),
    ("[step(2, 3, 5), (*step(3, 1, 7)[:1], step(3, 1, 7)[1].long(), *step(3, 1, 7)[2:])]",
     "attention_mask is float32 in set 1 and int64 in set 2"),
    ("[step(2, 3, 5), (step(2, 3, 5), {'scale': 2.0})]", "set 2 gives scale, set 1 does not"),
    ("[step(2, 3, 5), step(3, 1, 7), (step(3, 1, 7)[0][0], *step(3, 1, 7)[1:])]",
     "input_ids has 2 dims in set 1 (2x3) and 1 in set 3 (1)"),
])
def test_a_set_that_differs_in_more_than_sizes_is_refused_naming_the_set_and_the_input(model_file, sets, said) -> None:
    source = DECODER_SETS.replace("[step(2, 3, 5), step(3, 1, 7)]", sets)
    with pytest.raises(ModelLoadError) as refused:
        load_model(model_file("decoder_sets.py", source))
    assert said in refused.value.message, refused.value.message
    assert "only sizes may differ" in refused.value.hint


@pytest.mark.slow  # two processes
def test_check_prints_the_dynamic_shapes_to_paste_and_they_export(model_file) -> None:
    path = model_file("decoder_sets.py", DECODER_SETS)
    ran = run_main("check", str(path), "--json")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    pasted = json.loads(ran.stdout)["proposed_dynamic_shapes"]
    again = run_main("check", str(path), "--dynamic-shapes", json.dumps(pasted))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Every dim that varies between the 2 input sets of build() is declared dynamic." in again.stdout
    declared = run_main("check", str(path), "--dynamic-axes", '{"input_ids": {"0": "batch"}}')
    assert declared.returncode == 1 and "Also checked at other sizes: set 2; batch=" in declared.stdout
    assert f"--dynamic-shapes '{json.dumps(pasted)}'" in again.stdout


@pytest.mark.slow
def test_a_dynamic_cache_prompt_and_decode_step_export_with_their_dims(worker, model_file) -> None:
    model = ModelRequest(str(model_file("cache_sets.py", CACHE_SETS)))
    analysis = worker.run(AnalyzeRequest(model, {"exporter": "dynamo"}))
    shapes = analysis.proposed_dynamic_shapes
    batch, seq = shapes["input_ids"]["0"], shapes["input_ids"]["1"]
    assert all(layer == {"0": batch, "2": shapes["past_key_values"][0]["2"]} for layer in shapes["past_key_values"])
    assert len({batch, seq, shapes["attention_mask"]["1"], shapes["past_key_values"][0]["2"]}) == 4
    assert analysis.unsupported == [], [p.message for p in analysis.unsupported]
    assert analysis.other_sizes_checked == ["set 2"] and SETS_ONLY_NOTE in analysis.notes
    compared = worker.run(CompareRequest(model, {"exporter": "dynamo"}, runs=1, analyze_nodes=False))
    assert compared.run_labels[:2] == ["example inputs", "set 2"]
    assert compared.per_run[1] and all(stats.passed for stats in compared.per_run[1]), compared.to_json()


@pytest.mark.slow
@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_the_fix_script_exports_with_the_varying_dims_and_checks_every_set(tmp_path: Path, exporter: str) -> None:
    model = tmp_path / "decoder_sets.py"
    model.write_text(textwrap.dedent(DECODER_SETS), encoding="utf-8")
    script = write_fix_script(Project(model_path=str(model), export_options={"exporter": exporter}),
                              tmp_path / "fix.py", "out.onnx")
    ran = subprocess.run([sys.executable, str(script), "-o", "out.onnx"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    checked = [line for line in ran.stdout.splitlines() if line.startswith("checked at ")]
    assert len(checked) == 2, ran.stdout  # the traced inputs and set 2: the dims are the sets'
    assert checked[1].startswith("checked at set 2 (input_ids=3x1, attention_mask=3x7, past.0=3x7x16")
    assert all(": max abs diff " in line for line in checked), ran.stdout
    dims = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
            for i in onnx.load(str(tmp_path / "out.onnx")).graph.input}
    assert dims["past.0"][2] == 16 and isinstance(dims["past.0"][1], str) and dims["past.0"][0] == dims["input_ids"][0]


def test_a_list_of_tensors_after_the_model_is_still_one_set(model_file) -> None:
    loaded = load_model(model_file("pair.py", """
        import torch

        class Add(torch.nn.Module):
            def forward(self, x, y):
                return x + y

        def build():
            return Add(), [torch.ones(2, 3), torch.ones(2, 3)]
    """))
    assert loaded.input_names == ["x", "y"] and loaded.other_input_sets == []
    assert loaded.proposed_dynamic_axes is None


def test_suggest_dynamic_leaves_the_sets_out_of_its_one_dim_tries(worker, model_file) -> None:
    """--suggest-dynamic exports one dim dynamic at a time: at set 2, where every dim differs, each
    try would fail, so its analyses are not run there."""
    model = ModelRequest(str(model_file("decoder_sets.py", DECODER_SETS)))
    analysis = worker.run(AnalyzeRequest(model, {"dynamic_axes": {"input_ids": {1: "seq"}}}, at_input_sets=False))
    assert analysis.unsupported == [] and "set 2" not in analysis.other_sizes_checked
