"""The optimizers the guard runs, each with its own switches: ONNX Runtime's levels and
``disabled_optimizers``, onnxscript's rewrite rules, onnxslim's fusion patterns, onnxsim's switches.

One entry per tool (name, whether it is installed, the switches a bisection may turn off, and how
to apply it with some of them off), so a new optimizer is one more entry here.
"""
from __future__ import annotations

import importlib.util
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import onnx
import onnxruntime as ort

from fixport.core.words.optimizer_guard import ORT_TOOL

ORT_LEVEL_VALUES = {
    "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}
# ONNX Runtime's rewrite rules by name (onnxruntime/core/optimizer/graph_transformer_utils.cc):
# they run inside its RuleBasedTransformers, which its log names without saying which rule fired.
# ``disabled_optimizers`` takes these and the transformers' names; it ignores a name it does not know.
ORT_RULES = (
    "EliminateIdentity", "EliminateSlice", "UnsqueezeElimination", "EliminateDropout", "ExpandElimination",
    "CastElimination", "PreShapeNodeElimination", "NoopElimination", "DivMulFusion", "FuseReluClip",
    "GemmTransposeFusion", "NotWhereFusion", "ConvAddFusion", "ConvMulFusion", "ConvBNFusion", "ClipQuantFusion",
    "ReluQuantFusion", "LabelEncoderFusion",
)
ORT_VERBOSE = 0
MODIFIED = re.compile(r"GraphTransformer (\w+) modified: 1")
ONNXSCRIPT_FOLDING = "FoldConstants"
ONNXSIM_SWITCHES = ("fuse_bn", "constant_folding", "optimization")
GENERIC_RULE_FUNCTIONS = frozenset({"", "identity", "always_true"})  # onnxscript's no-op rules share these


@dataclass(frozen=True)
class OptimizerTool:
    """A post-export optimizer: its import name, its switch names, and how to run it with some off."""

    name: str
    module: str
    switches: Callable[[], list[str]]
    apply: Callable[[onnx.ModelProto, Sequence[str]], onnx.ModelProto]

    def installed(self) -> bool:
        return importlib.util.find_spec(self.module) is not None


def ort_session(model: onnx.ModelProto | bytes, level: str, disabled: Sequence[str] = ()) -> ort.InferenceSession:
    """A CPU session at ``level`` with ``disabled`` passes off (what a deployment would create)."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ORT_LEVEL_VALUES[level]
    options.log_severity_level = 3
    data = model if isinstance(model, bytes) else model.SerializeToString()
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"],
                                disabled_optimizers=list(disabled) or None)


def _onnxscript_rules() -> dict[str, Any]:
    """onnxscript's default rewrite rules by name (a rule without one is named by its condition or replacement)."""
    from onnxscript import rewriter

    rules: dict[str, Any] = {}
    for rule in rewriter._DEFAULT_REWRITE_RULES:  # noqa: SLF001 - the list optimize() applies, no public name
        replacement = _function_name(getattr(getattr(rule, "_replacement_pattern", None), "_function", None))
        condition = _function_name(getattr(rule, "_condition_function", None))
        name = rule.name or next((n for n in (replacement, condition) if n not in GENERIC_RULE_FUNCTIONS), "NoOp")
        unique, count = name, 2
        while unique in rules:
            unique, count = f"{name}_{count}", count + 1
        rules[unique] = rule
    return rules


def _function_name(function: Any) -> str:
    name = getattr(function, "__name__", "") or ""
    return "" if name == "<lambda>" else name


def _onnxscript_switches() -> list[str]:
    return [ONNXSCRIPT_FOLDING, *_onnxscript_rules()]


def _onnxscript_apply(model: onnx.ModelProto, disabled: Sequence[str]) -> onnx.ModelProto:
    """``onnxscript.optimizer.optimize``; with switches off, its steps (fold constants, the default
    rewrite rules, drop unused nodes; twice) without the disabled ones."""
    import onnxscript.optimizer
    from onnxscript import ir, rewriter

    copy = onnx.ModelProto.FromString(model.SerializeToString())
    if not disabled:
        return onnxscript.optimizer.optimize(copy)
    rules = [rule for name, rule in _onnxscript_rules().items() if name not in disabled]
    ir_model = ir.serde.deserialize_model(copy)
    for _ in range(2):
        if ONNXSCRIPT_FOLDING not in disabled:
            onnxscript.optimizer.fold_constants(ir_model)
        rewriter.rewrite(ir_model, pattern_rewrite_rules=rules)
        onnxscript.optimizer.remove_unused_nodes(ir_model)
    return ir.serde.serialize_model(ir_model)


def _onnxslim_switches() -> list[str]:
    from onnxslim.core.pattern.registry import DEFAULT_FUSION_PATTERNS

    return list(DEFAULT_FUSION_PATTERNS)


def _onnxslim_apply(model: onnx.ModelProto, disabled: Sequence[str]) -> onnx.ModelProto:
    import onnxslim

    copy = onnx.ModelProto.FromString(model.SerializeToString())
    return onnxslim.slim(copy, skip_fusion_patterns=list(disabled) or None)


def _onnxsim_apply(model: onnx.ModelProto, disabled: Sequence[str]) -> onnx.ModelProto:
    import onnxsim

    copy = onnx.ModelProto.FromString(model.SerializeToString())
    simplified, _ = onnxsim.simplify(copy, skip_fuse_bn="fuse_bn" in disabled,
                                     skip_constant_folding="constant_folding" in disabled,
                                     perform_optimization="optimization" not in disabled)
    return simplified


TOOLS: dict[str, OptimizerTool] = {
    "onnxscript": OptimizerTool("onnxscript", "onnxscript", _onnxscript_switches, _onnxscript_apply),
    "onnxslim": OptimizerTool("onnxslim", "onnxslim", _onnxslim_switches, _onnxslim_apply),
    "onnxsim": OptimizerTool("onnxsim", "onnxsim", lambda: list(ONNXSIM_SWITCHES), _onnxsim_apply),
}


def switches_of(tool: str, model: onnx.ModelProto | None = None, level: str = "all") -> list[str]:
    """The names a bisection of ``tool`` turns off: for ONNX Runtime, the transformers that changed
    ``model`` at ``level`` (its verbose log says which), each rule-based one with its rules."""
    if tool != ORT_TOOL:
        return TOOLS[tool].switches()
    names: list[str] = []
    for name in ort_transformers_applied(model, level) if model is not None else []:
        names += [name, *ORT_RULES] if name.endswith("RuleBasedTransformer") else [name]  # a rule wins a tie
    return list(dict.fromkeys(names)) or list(ORT_RULES)


def ort_transformers_applied(model: onnx.ModelProto, level: str) -> list[str]:
    """The graph transformers that modified ``model`` while ONNX Runtime made a session at ``level``,
    read from its verbose log (written by C++ to file descriptor 2, caught in a temporary file)."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ORT_LEVEL_VALUES[level]
    options.log_severity_level = ORT_VERBOSE
    with tempfile.TemporaryFile(mode="w+b") as log:
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
        try:
            ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        except Exception:  # ORT's own exception types: a model it refuses still logs what ran first
            pass
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        log.seek(0)
        text = log.read().decode("utf-8", "replace")
    return list(dict.fromkeys(MODIFIED.findall(text)))
