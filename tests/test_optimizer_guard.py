"""The optimizer guard on real ONNX Runtime sessions and optimizers: a model ORT's basic level refuses,
and a fusion that changes the outputs; each caught, its pass named, and the saved fix avoids it."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from fixport.core.deployment.optimizer_guard import Reference, guard_optimizers
from fixport.core.deployment.optimizer_tools import ort_session
from fixport.core.project.tolerances import ToleranceTable
from fixport.core.words.optimizer_guard import (
    CHANGED,
    PASSED,
    REFUSED,
    OptimizerFix,
    Variant,
    parse_optimize,
)
from tests.optimizer_guard_models import (
    LayerNormByHand,
    conv_batchnorm,
    fusion_changing_seed,
    layer_norm_export,
    layer_norm_input,
    refused_at_basic,
    refused_at_basic_inputs,
)


def _torch_reference(feeds: dict[str, np.ndarray]) -> list[tuple[str, np.ndarray]]:
    x, y = (torch.from_numpy(feeds[name]) for name in ("x", "y"))
    return [("out", (x / y).numpy())]


def test_a_model_basic_refuses_is_caught_and_the_pass_named() -> None:
    model, feeds = refused_at_basic(), refused_at_basic_inputs()
    report = guard_optimizers(model, parse_optimize("ort"), [Reference(0, feeds, _torch_reference(feeds))],
                              ToleranceTable(), latency_runs=2)
    by_name = {o.variant: o for o in report.outcomes}
    assert by_name["ort:disabled"].status == PASSED
    for level in ("basic", "extended", "all"):
        outcome = by_name[f"ort:{level}"]
        assert outcome.status == REFUSED and "is not a graph input" in outcome.message
        assert len(outcome.culprits) == 1 and outcome.culprits[0] in {"DivMulFusion", "CastElimination"}
        assert outcome.fix == OptimizerFix("ort", level, outcome.culprits)
        assert outcome.latency_ms is not None  # measured as fixed: it passes
    assert not report.passed and len(report.fixes) == 3
    # the saved fix, as a deployment would apply it, loads and matches torch
    fix = by_name["ort:basic"].fix
    session = ort_session(model, fix.level, fix.disabled)
    np.testing.assert_allclose(session.run(None, feeds)[0], _torch_reference(feeds)[0][1], rtol=1e-6)


def test_a_fusion_that_changes_outputs_is_caught_and_the_fix_matches(tmp_path) -> None:
    model = layer_norm_export(str(tmp_path / "layer_norm.onnx"))
    x = layer_norm_input(fusion_changing_seed())
    with torch.no_grad():
        expected = LayerNormByHand()(x).numpy()  # torch's layer_norm
    reference = Reference(0, {"x": x.numpy()}, [("out", expected)])
    report = guard_optimizers(model, [Variant("ort", "basic"), Variant("ort", "extended")], [reference],
                              ToleranceTable())
    basic, extended = report.outcomes
    assert basic.status == PASSED
    assert extended.status == CHANGED and "changes out" in extended.message
    assert extended.culprits == ["LayerNormFusionL2"]  # its name in ONNX Runtime 1.32's log
    assert extended.first_divergent_kind == "LayerNormalization"
    session = ort_session(model, "extended", extended.fix.disabled)
    np.testing.assert_allclose(session.run(None, {"x": x.numpy()})[0], expected, rtol=1e-3, atol=1e-5)


def test_a_post_export_optimizer_that_passes_is_measured() -> None:
    pytest.importorskip("onnxscript")
    model, feeds = refused_at_basic(), refused_at_basic_inputs()
    report = guard_optimizers(model, [Variant("onnxscript")], [Reference(0, feeds, _torch_reference(feeds))],
                              ToleranceTable(), latency_runs=1)
    outcome = report.outcomes[0]
    assert outcome.status == PASSED, outcome.message
    assert outcome.node_count is not None and outcome.file_bytes and outcome.latency_ms is not None


def test_optimize_names_parse_and_bad_ones_say_what_to_use() -> None:
    assert [v.name for v in parse_optimize("ort:basic,onnxslim")] == ["ort:basic", "onnxslim"]
    assert len(parse_optimize("all")) == 7
    with pytest.raises(ValueError, match="unknown optimizer 'tensorrt'.*ort:LEVEL"):
        parse_optimize("tensorrt")
    assert OptimizerFix.from_json({"tool": "ort", "level": "all", "disabled": ["X"], "new": 1}) == \
        OptimizerFix("ort", "all", ["X"])


def test_each_optimizer_is_bisected_with_its_own_switches() -> None:
    """Held to a tolerance between the unfused and the folded error (a user's tight --atol), each tool's
    BatchNorm folding is the pass named, by the name its own switch takes, and turning it off passes."""
    model, x, expected = conv_batchnorm()
    unfused = float(np.abs(ort_session(model, "disabled").run(None, {"x": x})[0] - expected).max())
    folded = float(np.abs(ort_session(model, "basic").run(None, {"x": x})[0] - expected).max())
    assert folded > unfused  # folding the statistics into the weights rounds differently
    tolerances = ToleranceTable(rtol=0.0, atol=(unfused + folded) / 2)
    report = guard_optimizers(model, parse_optimize("ort:disabled,ort:basic,onnxscript,onnxslim,onnxsim"),
                              [Reference(0, {"x": x}, [("out", expected)])], tolerances)
    by_name = {o.variant: o for o in report.outcomes}
    assert by_name["ort:disabled"].status == PASSED
    expected_culprits = {"ort:basic": ["ConvBNFusion"], "onnxscript": ["FuseBatchNormIntoConv"],
                         "onnxslim": ["FusionConvBN"],
                         "onnxsim": ["optimization"]}  # 0.8.1 folds it even with skip_fuse_bn: only this avoids it
    for variant, culprits in expected_culprits.items():
        outcome = by_name[variant]
        assert outcome.status == CHANGED, (variant, outcome.message)
        assert outcome.culprits == culprits, (variant, outcome.message)
        assert outcome.first_divergent_kind == "Conv"
        assert outcome.node_count == 2  # measured as fixed: Conv and BatchNormalization stay apart
