"""The optimizer fixes in the fix script: written by the project's script, standalone, and they avoid the pass."""
from __future__ import annotations

import runpy

import numpy as np
import onnx
import pytest

from fixport.core.deployment.optimizer_tools import switches_of
from fixport.core.fixing.fix_script import write_fix_script
from fixport.core.project.project import Project
from tests.optimizer_guard_models import layer_norm_model_file, refused_at_basic, refused_at_basic_inputs


def test_the_fix_scripts_deployed_session_avoids_the_pass(model_file, tmp_path) -> None:
    model_path = tmp_path / "refused.onnx"
    onnx.save(refused_at_basic(), model_path)
    model = model_file("layer_norm_by_hand.py", layer_norm_model_file(0))  # the script's model; not exported here
    project = Project(model_path=str(model),
                      optimizer_fixes=[{"tool": "ort", "level": "basic", "disabled": ["DivMulFusion"]}])
    script = write_fix_script(project, tmp_path / "fix_export.py", str(tmp_path / "out.onnx"))
    text = script.read_text()
    assert "OPTIMIZER_FIXES = [" in text and "ort:basic with disabled_optimizers=['DivMulFusion']" in text

    namespace = runpy.run_path(str(script), run_name="not_main")  # its functions, without exporting
    session = namespace["deployed_session"](str(model_path), "basic")
    feeds = refused_at_basic_inputs()
    np.testing.assert_allclose(session.run(None, feeds)[0], feeds["x"] / feeds["y"], rtol=1e-6)
    namespace["OPTIMIZER_FIXES"].clear()  # without the fix, the session fails as the guard found
    with pytest.raises(Exception, match="is not a graph input"):
        namespace["deployed_session"](str(model_path), "basic")


def test_the_script_names_onnxscripts_rules_as_the_guard_does(model_file, tmp_path) -> None:
    pytest.importorskip("onnxscript")
    model = model_file("layer_norm_by_hand.py", layer_norm_model_file(0))  # the script's model; not exported here
    project = Project(model_path=str(model),
                      optimizer_fixes=[{"tool": "onnxscript", "level": "", "disabled": ["CastCast"]}])
    script = write_fix_script(project, tmp_path / "fix_export.py", str(tmp_path / "out.onnx"))
    namespace = runpy.run_path(str(script), run_name="not_main")
    assert ["FoldConstants", *namespace["_onnxscript_rules"]()] == switches_of("onnxscript")
    onnx.save(refused_at_basic(), tmp_path / "model.onnx")
    optimized = namespace["optimized_model"](str(tmp_path / "model.onnx"), "onnxscript")
    assert isinstance(optimized, onnx.ModelProto) and len(optimized.graph.node) <= 3
