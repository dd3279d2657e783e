"""`compare --optimize`: the guard's table on the command line, its JSON, and its fix saved in the project."""
from __future__ import annotations

import json

import pytest

from fixport.core.project.project import Project, load_project, save_project
from tests.optimizer_guard_models import fusion_changing_seed, layer_norm_model_file

GUARDED = ("--runs", "1", "--no-node-analysis", "--latency-runs", "1", "--optimize", "ort:basic,ort:extended")


@pytest.mark.slow  # the JSON test below covers the same run in the fast tier
def test_compare_optimize_names_the_fusion_and_saves_its_fix(cli, model_file, tmp_path) -> None:
    model = model_file("layer_norm_by_hand.py", layer_norm_model_file(fusion_changing_seed()))
    project_path = tmp_path / "layer_norm.fixport.json"
    save_project(Project(model_path=str(model)), project_path)

    completed = cli("compare", str(model), "--project", str(project_path), *GUARDED)

    assert completed.returncode == 1, completed.stdout + completed.stderr
    # compare's own session runs at ONNX Runtime's default level, "all", which fuses the layer norm too
    assert "FAIL: see the outputs above." in completed.stdout
    rows = {line.split()[0]: line for line in completed.stdout.splitlines() if line.startswith("ort:")}
    assert "pass" in rows["ort:basic"] and " ms" in rows["ort:basic"]
    assert "changes outputs" in rows["ort:extended"] and rows["ort:extended"].endswith("LayerNormFusionL2")
    text = " ".join(completed.stdout.split())  # the notes wrap
    assert "First divergent node:" in text and "(LayerNormalization)" in text
    assert "Fix: ort:extended with disabled_optimizers=['LayerNormFusionL2'] (verified against torch)" in text
    assert load_project(project_path).optimizer_fixes == [
        {"tool": "ort", "level": "extended", "disabled": ["LayerNormFusionL2"]}]


def test_compare_optimize_json_and_a_bad_name(cli, model_file) -> None:
    model = model_file("layer_norm_by_hand.py", layer_norm_model_file(fusion_changing_seed()))
    completed = cli("compare", str(model), *GUARDED, "--json")
    report = json.loads(completed.stdout)["optimizers"]
    assert [v["variant"] for v in report["variants"]] == ["ort:basic", "ort:extended"]
    assert report["fixes"] == [{"tool": "ort", "level": "extended", "disabled": ["LayerNormFusionL2"]}]

    refused = cli("compare", str(model), "--runs", "1", "--optimize", "tensorrt")
    assert refused.returncode == 2
    assert "unknown optimizer 'tensorrt'" in refused.stderr + refused.stdout and "Traceback" not in refused.stderr
    both = cli("compare", str(model), "--exporters", "torchscript,dynamo", "--optimize", "ort")
    assert both.returncode == 2 and "--optimize and --exporters cannot be used together" in both.stderr + both.stdout
