"""Every supported model source loads; every bad file gives one clear message."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from fixport.core.foundation.errors import InputSpecError, ModelLoadError
from fixport.core.loaders.loading import load_model
from fixport.core.project.inputs import InputOptions, InputSpec, parse_input_spec
from fixport.core.words.errors import UntrustedFileError

SMALL_MODEL = """
    import torch

    class Small(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)

        def forward(self, image):
            return torch.relu(self.conv(image))

    def build():
        torch.manual_seed(0)
        return Small(), (torch.randn(1, 3, 8, 8),)
"""


@pytest.fixture
def small(model_file) -> Path:
    return model_file("small.py", SMALL_MODEL)


def _small_module(path: Path) -> torch.nn.Module:
    return load_model(path).module


def test_python_file_with_build(small: Path) -> None:
    loaded = load_model(small)
    assert loaded.source_kind == "python"
    assert loaded.input_names == ["image"]
    assert loaded.example_inputs[0].shape == (1, 3, 8, 8)
    assert not loaded.module.training


def test_python_file_with_module_level_model(model_file) -> None:
    path = model_file("plain.py", """
        import torch
        model = torch.nn.Linear(4, 2)
        example_inputs = (torch.randn(3, 4),)
    """)
    assert load_model(path).example_inputs[0].shape == (3, 4)


def test_torchscript_archive_runs_without_source(small: Path, tmp_path: Path) -> None:
    archive = tmp_path / "small.ts"
    torch.jit.save(torch.jit.trace(_small_module(small), (torch.randn(1, 3, 8, 8),)), str(archive))
    small.unlink()  # the archive must not need the source
    with pytest.raises(InputSpecError, match="--input"):
        load_model(archive)
    loaded = load_model(archive, InputOptions(specs=[parse_input_spec("image=2x3x8x8")], seed=1))
    assert loaded.source_kind == "torchscript"
    assert loaded.input_names == ["image"]
    assert loaded.example_inputs[0].shape == (2, 3, 8, 8)


def test_exported_program(small: Path, tmp_path: Path) -> None:
    program_path = tmp_path / "small.pt2"
    torch.export.save(torch.export.export(_small_module(small), (torch.randn(1, 3, 8, 8),)), str(program_path))
    loaded = load_model(program_path)
    assert loaded.source_kind == "exported_program"
    assert loaded.example_inputs[0].shape == (1, 3, 8, 8)
    assert any("ExportedProgram" in note for note in loaded.notes)


@pytest.mark.slow
def test_pickled_module_needs_trust_and_its_source_path(tmp_path: Path) -> None:
    source_dir = tmp_path / "src"
    source_dir.mkdir()
    (source_dir / "mynet.py").write_text(
        "import torch\nclass MyNet(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n")
    pickled = tmp_path / "model.pt"
    import subprocess
    import sys
    subprocess.run([sys.executable, "-c", f"import torch, mynet; torch.save(mynet.MyNet(), {str(pickled)!r})"],
                   cwd=source_dir, check=True)
    with pytest.raises(UntrustedFileError, match="--trust"):  # a record the window asks about, not a text
        load_model(pickled)
    with pytest.raises(ModelLoadError, match="--path"):
        load_model(pickled, trust=True)
    loaded = load_model(pickled, InputOptions(specs=[InputSpec("x", (2, 2))]), trust=True,
                        search_paths=[str(source_dir)])
    assert loaded.source_kind == "pickled_module"


KEYWORD_NET = """
from typing import Optional

import torch

class Embedder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.words = torch.nn.Embedding(10, 4)
        self.types = torch.nn.Embedding(2, 4)

    def forward(self, input_ids, attention_mask: Optional[torch.Tensor] = None,
                token_type_ids: Optional[torch.Tensor] = None, scale: float = 1.0):
        hidden = self.words(input_ids)
        if token_type_ids is not None:
            hidden = hidden + self.types(token_type_ids)
        if attention_mask is not None:
            hidden = hidden * attention_mask.unsqueeze(-1)
        return hidden * scale
"""


def test_archive_inputs_given_by_keyword_skip_parameters(tmp_path: Path) -> None:
    """input_ids and token_type_ids without attention_mask go to forward by name, not by position,
    for a pickled module and a TorchScript archive alike."""
    source_dir = tmp_path / "src"
    source_dir.mkdir()
    (source_dir / "embedder.py").write_text(KEYWORD_NET)
    pickled, archive = tmp_path / "model.pt", tmp_path / "model.ts"
    import subprocess
    import sys
    subprocess.run([sys.executable, "-c", "import torch, embedder; m = embedder.Embedder().eval(); "
                    f"torch.save(m, {str(pickled)!r}); torch.jit.save(torch.jit.script(m), {str(archive)!r})"],
                   cwd=source_dir, check=True)
    specs = [parse_input_spec("token_type_ids=1x5:int64"), parse_input_spec("input_ids=1x5:int64")]
    for path in (pickled, archive):
        loaded = load_model(path, InputOptions(specs=specs, seed=0), trust=True, search_paths=[str(source_dir)])
        assert loaded.input_names == ["input_ids", "token_type_ids"], path
        ids, types = loaded.example_inputs
        inner = loaded.module.model
        expected = inner(input_ids=ids % 10, token_type_ids=types % 2)
        torch.testing.assert_close(loaded.module(ids % 10, types % 2), expected)
        assert any("keyword" in note for note in loaded.notes)
    with pytest.raises(InputSpecError, match="its inputs are: input_ids, attention_mask, token_type_ids, scale"):
        load_model(pickled, InputOptions(specs=[parse_input_spec("mask=1x5")]), trust=True,
                   search_paths=[str(source_dir)])


def test_state_dict_is_recognised_without_unpickling_code(small: Path, tmp_path: Path) -> None:
    weights = tmp_path / "weights.pt"
    torch.save(_small_module(small).state_dict(), weights)
    with pytest.raises(ModelLoadError, match="state_dict"):
        load_model(weights)


def test_onnx_file_loads_for_inspection(small: Path, tmp_path: Path) -> None:
    onnx_path = tmp_path / "small.onnx"
    torch.onnx.export(_small_module(small), (torch.randn(1, 3, 8, 8),), str(onnx_path), dynamo=False)
    loaded = load_model(onnx_path)
    assert loaded.source_kind == "onnx" and loaded.module is None


@pytest.mark.parametrize("name, content, message", [
    ("missing.py", None, "not found"),
    ("corrupt.pt", b"\x00garbage", "not a PyTorch archive"),
    ("corrupt.onnx", b"garbage", "not a readable ONNX model"),
    ("model.h5", b"", "Unknown model file type"),
    ("syntax.py", b"def build(:\n", "Syntax error in syntax.py line 1"),
    ("nobuild.py", b"x = 1\n", "neither build()"),
    ("raises.py", b"def build():\n    raise ValueError('bad config')\n",
     "ValueError: bad config (at raises.py line 2)"),
    ("wrongtype.py", b"def build():\n    return 1, 2\n", "returned int as the model"),
])
def test_bad_files_give_one_clear_message(tmp_path: Path, name: str, content: bytes | None, message: str) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ModelLoadError) as info:
        load_model(path)
    assert message in info.value.message
    assert info.value.hint


def test_inputs_from_spec_and_files(small: Path, tmp_path: Path) -> None:
    spec = parse_input_spec("image=1x3x8x8:float32")
    first = load_model(small, InputOptions(specs=[spec], seed=3)).example_inputs[0]
    again = load_model(small, InputOptions(specs=[spec], seed=3)).example_inputs[0]
    assert torch.equal(first, again)
    npz = tmp_path / "inputs.npz"
    np.savez(npz, image=np.ones((1, 3, 8, 8), np.float32))
    assert load_model(small, InputOptions(input_file=str(npz))).example_inputs[0].sum() == 192
    pt = tmp_path / "inputs.pt"
    torch.save({"image": torch.zeros(1, 3, 8, 8)}, pt)
    assert load_model(small, InputOptions(input_file=str(pt))).example_inputs[0].sum() == 0


@pytest.mark.parametrize("text", ["x", "x=1xa", "x=1x3:complex7", "=1x3"])
def test_bad_input_specs(text: str) -> None:
    with pytest.raises(InputSpecError):
        parse_input_spec(text)
