"""The fix script's deployment section: the optimizer fixes as settings, and the two functions that
apply them (a session at a level with passes off; an optimizer run with its patterns or rules off).

Plain text, standalone (onnxruntime and the optimizer only), so a user ships it without Fixport.
"""
from __future__ import annotations

from typing import Any

from fixport.core.words.optimizer_guard import OptimizerFix

DEPLOYMENT_FUNCTIONS = '''

def deployed_session(onnx_path, level="all"):
    """An ONNX Runtime session on ``onnx_path`` at graph optimization ``level``, with the passes
    that break this export turned off (OPTIMIZER_FIXES; `compare --optimize` found and checked them)."""
    import onnxruntime as ort

    disabled = [name for fix in OPTIMIZER_FIXES if fix["tool"] == "ort" and fix["level"] == level
                for name in fix["disabled"]]
    options = ort.SessionOptions()
    options.graph_optimization_level = {
        "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL, "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED, "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[level]
    return ort.InferenceSession(onnx_path, options, providers=["CPUExecutionProvider"],
                                disabled_optimizers=disabled or None)


def optimized_model(onnx_path, tool):
    """``tool``'s (onnxscript, onnxslim or onnxsim) optimization of the export, with what breaks it off."""
    import onnx

    disabled = [name for fix in OPTIMIZER_FIXES if fix["tool"] == tool for name in fix["disabled"]]
    model = onnx.load(onnx_path)
    if tool == "onnxslim":
        import onnxslim

        return onnxslim.slim(model, skip_fusion_patterns=disabled or None)
    if tool == "onnxsim":
        import onnxsim

        return onnxsim.simplify(model, skip_fuse_bn="fuse_bn" in disabled,
                                skip_constant_folding="constant_folding" in disabled,
                                perform_optimization="optimization" not in disabled)[0]
    import onnxscript.optimizer
    from onnxscript import ir, rewriter

    if not disabled:
        return onnxscript.optimizer.optimize(model)
    rules = [rule for name, rule in _onnxscript_rules().items() if name not in disabled]
    ir_model = ir.serde.deserialize_model(model)
    for _ in range(2):
        if "FoldConstants" not in disabled:
            onnxscript.optimizer.fold_constants(ir_model)
        rewriter.rewrite(ir_model, pattern_rewrite_rules=rules)
        onnxscript.optimizer.remove_unused_nodes(ir_model)
    return ir.serde.serialize_model(ir_model)


def _onnxscript_rules():
    """onnxscript's default rewrite rules by the names Fixport gives them."""
    from onnxscript import rewriter

    generic, rules = {"", "identity", "always_true", "<lambda>"}, {}
    for rule in rewriter._DEFAULT_REWRITE_RULES:
        replacement = getattr(getattr(getattr(rule, "_replacement_pattern", None), "_function", None), "__name__", "")
        condition = getattr(getattr(rule, "_condition_function", None), "__name__", "")
        name = rule.name or next((n for n in (replacement, condition) if n not in generic), "NoOp")
        unique, count = name, 2
        while unique in rules:
            unique, count = f"{name}_{count}", count + 1
        rules[unique] = rule
    return rules
'''


def deployment_section(fixes: list[dict[str, Any]]) -> str:
    """The section for a project's ``optimizer_fixes`` (OptimizerFix.to_json each); "" for none."""
    if not fixes:
        return ""
    rows = "".join(f"    {OptimizerFix.from_json(fix).to_json()!r},  # {OptimizerFix.from_json(fix).summary()}\n"
                   for fix in fixes)
    return ("\n\n# ---- the export as deployed: optimizer passes that break it, turned off ----\n"
            f"OPTIMIZER_FIXES = [\n{rows}]\n" + DEPLOYMENT_FUNCTIONS)
