"""The export dtype of a checkpoint folder is the user's choice (issue 45): ``--dtype auto`` keeps the
checkpoint's own (a bfloat16 save_pretrained stays bfloat16, as transformers' exporter keeps it), the
others cast it, and the report says which dtype was exported and what each ONNX Runtime provider
does with it, read from the installed build's CPU kernel table."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixport.core.onnx_io.dtype_speed import COMPUTE_OPS, cpu_speed
from fixport.core.onnx_io.kernel_table import cpu_kernel_rows
from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def bfloat16_folder(tmp_path_factory) -> Path:
    """A tiny Qwen2 saved in bfloat16, as published LLM checkpoints are."""
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("dtype") / "qwen2-bf16"
    transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
        vocab_size=100, hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, bos_token_id=1, eos_token_id=2,
        pad_token_id=0)).to(torch.bfloat16).save_pretrained(folder)
    assert json.loads((folder / "config.json").read_text())["dtype"] == "bfloat16"
    return folder


def test_the_cpu_provider_is_read_from_its_own_kernel_table() -> None:
    rows = cpu_kernel_rows()
    assert rows, "the installed ONNX Runtime's kernel table could not be read"
    assert cpu_speed("float32", rows).fast and cpu_speed("float32", rows).runs_in == "float32"
    # This CPU build has no bfloat16 MatMul: a bfloat16 export does not run there as saved.
    bf16 = cpu_speed("bfloat16", rows)
    has_matmul = any(row[0] == "MatMul" and any("tensor(bfloat16)" in t for t in row[3].values()) for row in rows)
    assert bf16.fast is has_matmul and ("MatMul" in bf16.how) is not has_matmul, bf16
    fp16 = cpu_speed("float16", rows)
    assert not fp16.fast and fp16.runs_in == "float32" and "casts to float32" in fp16.how, fp16
    # A table with every compute op in bfloat16 is read as such (the answer follows the table).
    every = [(op, "", [1, 100], {"T": ["tensor(bfloat16)"]}) for op in COMPUTE_OPS]
    assert cpu_speed("bfloat16", every).fast


def _component(worker, folder: Path, dtype: str | None):
    return worker.run(AnalyzeRequest(ModelRequest(str(folder), component="decode", dtype=dtype),
                                     generation_check=False))


def _float_dtypes(result) -> set[str]:
    graph = result.onnx_graph
    return {graph.value(name).dtype for name in graph.outputs if name.endswith("logits") or "keys" in name}


@pytest.mark.slow
def test_auto_keeps_the_checkpoints_bfloat16_and_float32_casts_it(worker, bfloat16_folder: Path) -> None:
    auto = _component(worker, bfloat16_folder, None)
    assert auto.unsupported == [], [p.message for p in auto.unsupported]
    assert (auto.export_dtype.dtype, auto.export_dtype.checkpoint_dtype) == ("bfloat16", "bfloat16")
    assert _float_dtypes(auto) == {"bfloat16"}
    assert auto.export_dtype.line() == "Exported in bfloat16 (the checkpoint's own; --dtype to change)."
    assert [p.provider for p in auto.export_dtype.providers] == ["CPU", "CUDA"]

    wide = _component(worker, bfloat16_folder, "float32")
    assert wide.unsupported == [], [p.message for p in wide.unsupported]
    assert wide.export_dtype.dtype == "float32" and _float_dtypes(wide) == {"float32"}
    assert "--dtype float32; the checkpoint is bfloat16" in wide.export_dtype.line()
    assert wide.export_dtype.providers[0].fast


@pytest.mark.slow
def test_check_says_the_dtype_and_each_provider_once_and_in_json(cli, bfloat16_folder: Path) -> None:
    ran = cli("check", str(bfloat16_folder), "--component", "decode", "--dtype", "float16")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.count("Exported in float16 (--dtype float16; the checkpoint is bfloat16") == 1, ran.stdout
    assert "ONNX Runtime CPU:" in ran.stdout and "ONNX Runtime CUDA:" in ran.stdout
    ran = cli("check", str(bfloat16_folder), "--component", "decode", "--json")
    report = json.loads(ran.stdout)
    assert report["export_dtype"]["dtype"] == "bfloat16" and report["export_dtype"]["chosen"] == "auto"
    assert {p["provider"] for p in report["export_dtype"]["providers"]} == {"CPU", "CUDA"}


def test_dtype_on_a_model_file_is_refused_with_what_to_do(cli, model_file) -> None:
    path = model_file("relu.py", "import torch\n\ndef build():\n    return torch.nn.ReLU(), (torch.randn(2, 3),)\n")
    ran = cli("check", str(path), "--dtype", "bfloat16")
    assert ran.returncode == 2
    assert "--dtype bfloat16 applies to a checkpoint folder" in ran.stderr and "Traceback" not in ran.stderr


@pytest.mark.slow
def test_the_checkpoint_bars_dtype_box_exports_again_in_the_dtype_chosen(qtbot, window, bfloat16_folder: Path) -> None:
    from tests.test_gui_flow import run_job

    run_job(qtbot, window, lambda: window.open_path(bfloat16_folder))
    bar = window.checkpoint_bar
    assert window.workbench.analysis is not None, window.log.contents()
    assert bar.dtype.currentText() == "auto" and bar.exported.text().strip() == "exported in bfloat16"
    assert "ONNX Runtime CPU:" in bar.exported.toolTip()
    bar.dtype.setCurrentText("float32")
    run_job(qtbot, window, lambda: bar.dtype.activated.emit(bar.dtype.currentIndex()))
    assert window.workbench.project.dtype == "float32"
    analysis = window.workbench.analysis
    assert analysis.export_dtype.dtype == "float32" and analysis.component == bar.component.currentText()
    assert bar.dtype.currentText() == "float32" and bar.exported.text().strip() == "exported in float32"
