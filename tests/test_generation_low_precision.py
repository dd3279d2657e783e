"""The generation check of a low-precision decoder (issue 45): identical tokens, or the step where
ONNX Runtime's tokens part from torch's, and whether torch's own bfloat16 run parts from float32 at
that step or before. A parting that torch's own rounding makes too is the dtype's, not the export's;
one where torch's bfloat16 run keeps float32's tokens is still a problem."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixport.core.records.generation_result import GenerationCheck, GenerationRun
from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest


def _run(onnx_parts: int | None, torch_parts: int | None, dtype: str = "bfloat16") -> GenerationRun:
    torch_tokens = [[5, 6, 7, 8]]
    onnx = list(torch_tokens[0]) if onnx_parts is None else [*torch_tokens[0][:onnx_parts], 99]
    wide = list(torch_tokens[0]) if torch_parts is None else [*torch_tokens[0][:torch_parts], 42, 43, 44, 45][:4]
    return GenerationRun(batch=1, prompt_length=4, torch_tokens=torch_tokens, onnx_tokens=[onnx],
                         max_logit_difference=[1e-3] * len(onnx), first_difference=onnx_parts,
                         low_precision=dtype, float32_tokens=[wide] if dtype else [],
                         torch_parts_from_float32=torch_parts if dtype else None,
                         float32_logit_difference=[2e-3] * (4 if torch_parts is None else torch_parts + 1))


@pytest.mark.parametrize(("onnx_parts", "torch_parts", "passed", "rounding"), [
    (None, None, True, False),  # identical, and torch's bfloat16 keeps float32's tokens
    (None, 1, True, False),  # identical to torch, which itself parts from float32
    (2, 1, True, True),  # parts after torch's own run parted from float32: rounding
    (2, 2, True, True),  # at the same step: rounding
    (1, 3, False, False),  # parts before torch's own run does: the export
    (1, None, False, False),  # parts while torch's own run keeps float32's tokens: the export
])
def test_a_parting_is_rounding_only_where_torchs_own_low_precision_run_parts_first(onnx_parts, torch_parts, passed,
                                                                                   rounding) -> None:
    check = GenerationCheck("torchscript", 4, [_run(onnx_parts, torch_parts)])
    assert (check.passed, check.rounding_only) == (passed, rounding)
    said = " ".join(check.lines(tokens=True))
    if onnx_parts is not None:
        assert f"tokens part at step {onnx_parts} (torch [{5 + onnx_parts}], ONNX Runtime [99])" in said, said
    if torch_parts is None:
        assert "torch's own bfloat16 run keeps float32's tokens throughout" in said, said
    else:
        assert f"torch's own bfloat16 run parts from float32 at step {torch_parts}" in said, said
    assert ("bfloat16 rounding, not the export" in said) is rounding
    assert "torch bfloat16 against float32: 2.0e-03" in said and "torch float32 " in said
    assert json.loads(json.dumps(check.to_json()))["runs"][0]["rounding_only"] is rounding


@pytest.mark.parametrize(("onnx_to_float32", "passed"), [
    ([1e-3, 3e-3], True),  # as close to float32 as torch's own bfloat16 run (2e-3 a step): rounding
    ([1e-3, 5e-2], False),  # much further from float32 than torch at the parting step: the export
])
def test_a_parting_while_torch_keeps_float32s_tokens_is_rounding_when_onnx_is_as_close_to_float32(
        onnx_to_float32, passed) -> None:
    """Flat logits (a random model): ONNX Runtime parts from torch at step 1 while torch's bfloat16 run keeps
    float32's tokens; the verdict is the output checks' one, distance to the float32 run against torch's own."""
    run = _run(1, None)
    run.onnx_float32_logit_difference = onnx_to_float32
    check = GenerationCheck("torchscript", 4, [run])
    said = " ".join(check.lines())
    assert (check.passed, check.rounding_only) == (passed, passed), said
    assert ("two tokens within bfloat16 rounding of each other" in said) is passed, said
    if passed:
        assert "ONNX Runtime's logits are 3.0e-03 from the float32 run's and torch's own bfloat16 run's 2.0e-03" in said


def test_a_float32_run_stopped_at_the_parting_step_claims_nothing_past_it() -> None:
    run = _run(1, None)
    run.float32_tokens = [run.float32_tokens[0][:2]]  # decoded in float32 up to the parting step only
    said = " ".join(GenerationCheck("torchscript", 4, [run]).lines())
    assert "torch's own bfloat16 run keeps float32's tokens through step 1" in said, said
    assert "throughout" not in said, said


def test_the_generation_verdict_keeps_the_output_checks_rounding_margin() -> None:
    from fixport.core.foundation.low_precision import ROUNDING_MARGIN as OUTPUT_CHECKS_MARGIN
    from fixport.core.records.generation_result import ROUNDING_MARGIN

    assert ROUNDING_MARGIN == OUTPUT_CHECKS_MARGIN


def test_a_float32_model_is_held_to_torchs_tokens_alone() -> None:
    check = GenerationCheck("torchscript", 4, [_run(2, None, dtype="")])
    assert not check.passed and "float32" not in " ".join(check.lines(tokens=True))


torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def parting_folder(tmp_path_factory) -> Path:
    """A bfloat16 Qwen2 (4 layers, vocabulary 1000) whose greedy tokens in bfloat16 part from float32's
    within 8 tokens at batch 3: ONNX Runtime (CPU: the graph widened to float32) parts from torch's
    bfloat16 tokens there too."""
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("generation") / "qwen2-bf16"
    transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
        vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, bos_token_id=1, eos_token_id=2,
        pad_token_id=0)).to(torch.bfloat16).save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_bfloat16_tokens_parting_where_torchs_own_run_parts_from_float32_are_clean(worker,
                                                                                  parting_folder: Path) -> None:
    result = worker.run(AnalyzeRequest(ModelRequest(str(parting_folder), component="decode")))
    check = result.generation
    assert result.unsupported == [], [p.message for p in result.unsupported]
    # Without the float32 run this check would fail: ONNX Runtime's tokens do part from torch's.
    parted = [run for run in check.runs if run.first_difference is not None]
    assert parted and all(run.rounding_only for run in parted), check.lines()
    assert all(run.torch_parts_from_float32 <= run.first_difference for run in parted)
    # float32 is decoded only where the tokens parted, and only up to that step (at real size each
    # float32 step widens every weight); identical tokens need no reference
    assert all(run.low_precision == "bfloat16" and len(run.float32_tokens) == run.batch
               and {len(row) for row in run.float32_tokens} == {run.first_difference + 1} for run in parted)
    assert all(run.float32_tokens == [] and run.low_precision == "" for run in check.runs if run.identical)
    assert check.passed and check.rounding_only and "bfloat16 rounding, not the export" in " ".join(check.lines())


@pytest.mark.slow
def test_compare_shows_the_tokens_the_parting_step_and_both_logit_differences(cli, parting_folder: Path) -> None:
    ran = cli("compare", str(parting_folder), "--component", "decode")
    assert ran.returncode == 0 and "PASS" in ran.stdout, ran.stdout + ran.stderr
    assert "Exported in bfloat16 (the checkpoint's own" in ran.stdout
    assert "where torch's own bfloat16 run parts from float32 at step" in ran.stdout
    assert "torch bfloat16 against float32:" in ran.stdout and "largest logit difference per step:" in ran.stdout
    assert "row 0: torch " in ran.stdout and "; ONNX Runtime " in ran.stdout and "; torch float32 " in ran.stdout
