"""A checkpoint folder's components share one model in a process (compare's generation check loads the
second component beside the first: a 1.5 B bfloat16 folder held its weights twice, 3.1 GB); a folder
written again, or another dtype, loads afresh."""
from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from fixport.core.foundation.checkpoints.folder import load_checkpoint_folder
from fixport.core.project.inputs import InputOptions

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture()
def decoder_folder(tmp_path: Path) -> Path:
    torch.manual_seed(0)
    transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
        vocab_size=100, hidden_size=32, intermediate_size=37, num_hidden_layers=1, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, bos_token_id=1, eos_token_id=2,
        pad_token_id=0)).to(torch.bfloat16).save_pretrained(tmp_path / "qwen2")
    return tmp_path / "qwen2"


def _model_of(folder: Path, component: str, dtype: str | None = None) -> torch.nn.Module:
    return load_checkpoint_folder(folder, InputOptions(), None, component, dtype)[5].model


def test_the_prefill_and_the_decode_wrap_one_model(decoder_folder: Path) -> None:
    prefill = _model_of(decoder_folder, "prefill")
    decode = _model_of(decoder_folder, "decode")
    assert decode is prefill
    assert next(decode.parameters()).dtype == torch.bfloat16
    assert _model_of(decoder_folder, "decode", "float32") is not prefill  # another dtype is another model


def test_a_folder_written_again_loads_again(decoder_folder: Path) -> None:
    first = _model_of(decoder_folder, "prefill")
    weights = decoder_folder / "model.safetensors"
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 1_000_000_000))
    assert _model_of(decoder_folder, "prefill") is not first


def test_a_model_no_component_holds_is_not_kept(decoder_folder: Path) -> None:
    import weakref

    held = weakref.ref(_model_of(decoder_folder, "prefill"))
    gc.collect()
    assert held() is None
