"""The real-model corpus (examples/corpus/): for every architecture, one diagnosing export finds
exactly the declared problems, and `fix --auto` leaves nothing unsupported with a model that
plain ONNX Runtime (CPU) runs and that matches torch within the case's tolerance."""
from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from fixport.core.loaders.loading import load_model
from fixport.core.records.requests import AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.examples.corpus import CorpusCase, list_corpus
from tests.conftest import run_main

CASES = list_corpus()
LIBRARIES = ("transformers", "timm", "torchvision", "kornia")
MIN_CASES = 20


def _param(case: CorpusCase):
    missing = importlib.util.find_spec(case.library) is None
    return pytest.param(case, id=case.name, marks=[
        pytest.mark.skipif(missing, reason=f"{case.library} is not installed (pip install -e '.[test]')"),
        pytest.mark.timeout(300)])


def _declared(case: CorpusCase) -> Counter:
    return Counter({(e["kind"], e["reason"]): e["count"] for e in case.info.expected_unsupported})


def max_abs_error_in_ort(onnx_path: Path, model_path: Path) -> float:
    """Run the exported file in plain ONNX Runtime (CPU) on the model's example inputs; max |ORT - torch|."""
    loaded = load_model(model_path)
    with torch.no_grad():
        expected = loaded.module(*loaded.example_inputs)
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), loaded.example_inputs)}
    actual = session.run(None, feeds)[0]
    assert actual.shape == tuple(expected.shape), (actual.shape, expected.shape)
    return float(np.max(np.abs(actual - expected.numpy()))) if actual.size else 0.0


def test_the_corpus_has_twenty_real_architectures_from_four_libraries() -> None:
    assert len(CASES) >= MIN_CASES
    assert {case.library for case in CASES} == set(LIBRARIES)
    for case in CASES:
        assert case.info.expected_unsupported, f"{case.name} declares no problem: not a failing architecture"
        assert case.info.fix_tolerance <= 1e-3, case.name


@pytest.mark.slow
@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_check_finds_the_declared_problems_and_fix_auto_matches_torch(worker, case: CorpusCase,
                                                                      tmp_path: Path) -> None:
    onnx_path = tmp_path / "fixed.onnx"
    result = worker.run(AutoFixRequest(ModelRequest(str(case.info.path)), output=str(onnx_path)))
    # `before` is the diagnosing export `check` runs: exactly the declared problems, at the declared opset
    found = Counter((p.kind, p.reason) for p in result.before.unsupported)
    assert found == _declared(case)
    assert result.before.options.opset == case.info.opset
    assert result.after.unsupported == [], [f"{p.display_kind}: {p.message[:200]}" for p in result.after.unsupported]
    assert result.opset_raised is None, "fixed at the opset the model asks for"
    assert all(choice.runs_in_onnxruntime for choice in result.choices)
    assert max_abs_error_in_ort(onnx_path, case.info.path) <= case.info.fix_tolerance


@pytest.mark.slow
def test_the_command_line_checks_and_fixes_a_corpus_model(tmp_path: Path) -> None:
    """The user's path for one case: `check --json` lists the problem, `fix --auto` writes a model ORT runs."""
    case = next(c for c in CASES if c.name == "llama_lm")
    if importlib.util.find_spec(case.library) is None:
        pytest.skip(f"{case.library} is not installed")
    checked = run_main("check", str(case.info.path), "--json")
    assert checked.returncode == 1, checked.stderr
    report = json.loads(checked.stdout)
    assert Counter((p["kind"], p["reason"]) for p in report["unsupported"]) == _declared(case)
    onnx_path = tmp_path / "llama.onnx"
    fixed = run_main("fix", str(case.info.path), "--auto", "-o", str(tmp_path / "llama.fixport.json"),
                     "--onnx", str(onnx_path))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "aten::diff" in fixed.stdout
    assert max_abs_error_in_ort(onnx_path, case.info.path) <= case.info.fix_tolerance
