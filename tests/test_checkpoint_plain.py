"""The plain path for a checkpoint folder (issue 35): without transformers.exporters, or with
``--component model`` on a generative task, the model's forward is one component, ``model``, its
inputs made from the forward signature and the config. The checkpoints are tiny random ones."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

REPO = Path(__file__).resolve().parent.parent
# Put first on PYTHONPATH, it makes transformers.exporters unimportable in every process of the
# command (the CLI and its worker), as in a transformers older than 5.
EXPORTERS_BLOCKED = '''
import importlib.abc
import sys


class _WithoutTransformersExporters(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "transformers.exporters" or name.startswith("transformers.exporters."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _WithoutTransformersExporters())
'''


@pytest.fixture(scope="module")
def llama(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("plain") / "llama"
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=100, hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, bos_token_id=1, eos_token_id=2,
        pad_token_id=0)).save_pretrained(folder)
    return folder


def _exported_logits(path: Path, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    assert names == ["input_ids", "attention_mask"]
    outputs = [o.name for o in session.get_outputs()]
    return torch.from_numpy(session.run(None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})
                            [outputs.index("logits")])


def _torch_logits(folder: Path, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    model = transformers.LlamaForCausalLM.from_pretrained(folder).eval()
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=mask, use_cache=False).logits


def test_component_model_takes_the_plain_path_and_matches_torch_at_another_batch(worker, llama,
                                                                                  tmp_path: Path) -> None:
    out = tmp_path / "exported"
    result = worker.run(AnalyzeRequest(ModelRequest(str(llama), component="model"), output=str(out)))
    assert result.unsupported == [], [p.message for p in result.unsupported]
    assert (result.task, result.components, result.component) == ("text-generation", ["model"], "model")
    assert result.input_names == ["input_ids", "attention_mask"]
    assert any("the plain path (--component model)" in note for note in result.notes)
    assert any("batch=" in label and "seq=" in label for label in result.other_sizes_checked)
    assert result.generation is None  # no prefill and decode to decode with
    assert {p.name for p in out.iterdir()} >= {"model.onnx", "config.json"}
    assert not (out / "export.json").exists()  # no metadata of transformers' exporter to record
    ids = torch.randint(1, 100, (3, 5))  # the example is 2 x 7
    mask = torch.ones_like(ids)
    mask[1, -2:] = 0
    assert torch.allclose(_exported_logits(out / "model.onnx", ids, mask), _torch_logits(llama, ids, mask),
                          atol=1e-4)


def _without_exporters(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python main.py ARGS` where transformers.exporters cannot be imported."""
    blocker = tmp_path / "blocker"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text(EXPORTERS_BLOCKED)
    path = os.pathsep.join(p for p in (str(blocker), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=path)
    return subprocess.run([sys.executable, str(REPO / "main.py"), *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.subprocess
def test_without_transformers_exporters_a_folder_says_so_and_exports_on_the_plain_path(llama,
                                                                                       tmp_path: Path) -> None:
    probe = _without_exporters(tmp_path, "--help")  # the blocker is in place: nothing else tells
    assert probe.returncode == 0
    done = _without_exporters(tmp_path, "check", str(llama))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "has no transformers.exporters, so the plain path is used" in done.stdout
    assert "prefill" not in done.stdout.split("note:")[0]  # one component, not transformers' split
    refused = _without_exporters(tmp_path, "check", str(llama), "--component", "decode")
    assert refused.returncode == 2 and "no component 'decode'" in refused.stderr
    assert "--component model" in refused.stderr and "Traceback" not in refused.stderr
    out = tmp_path / "exported"
    written = _without_exporters(tmp_path, "export", str(llama), "-o", str(out))
    assert written.returncode == 0, written.stdout + written.stderr
    assert (out / "model.onnx").is_file() and (out / "config.json").is_file()
    ids = torch.randint(1, 100, (1, 4))
    mask = torch.ones_like(ids)
    assert torch.allclose(_exported_logits(out / "model.onnx", ids, mask), _torch_logits(llama, ids, mask),
                          atol=1e-4)


@pytest.mark.slow
def test_the_fix_script_reproduces_the_plain_component(llama, tmp_path: Path) -> None:
    import onnx

    from fixport.core.fixing.fix_script import write_fix_script
    from fixport.core.project.project import Project

    project = Project(model_path=str(llama), task="text-generation", component="model")
    script = write_fix_script(project, tmp_path / "fix_llama.py", str(tmp_path / "model.onnx"))
    assert "COMPONENT = 'model'" in script.read_text()
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "batch=3, seq=11" in done.stdout
    assert [i.name for i in onnx.load(str(tmp_path / "model.onnx")).graph.input] == ["input_ids", "attention_mask"]
