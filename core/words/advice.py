"""What to do next about a problem, chosen from its record (reason, kind, place), never from its words.

A template replaces how one op converts, so "write one in the window (a stub is generated from its
schema)" fits an op of the model that no built-in fix handled, and nothing else: a capture failure
is answered in the model's code, a failure inside torch.onnx's own passes by the other exporter or
the line it names, an ONNX Runtime error that names no op of the model by another opset or
exporter. And advice never sends the user back to the step just taken: after ``fix --auto``, it
does not say to run ``fix --auto``. No torch import: the command line reads it too.
"""
from __future__ import annotations

from enum import Enum

from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import (
    EXPORTERS,
    IN_THE_MODELS_CODE_REASONS,
    PYTHON_OP_KIND,
    UNPLACED_KIND,
    ProblemReason,
)

# Namespaces of nodes the exporter made itself: no op of the model to give a template to.
_EXPORTER_MADE_NAMESPACES = ("onnx", "torch.export", "python", "(export)")
FIX_PROJECT = "fixes.fixport.json"
# Problems no template answers: the capture, the model's own code, a crash, torch.onnx's own passes
# (the exporter failing after every op converted, or dynamo's passes over the captured graph).
_NOT_ONE_OPS_CONVERSION = frozenset({*IN_THE_MODELS_CODE_REASONS, ProblemReason.CAPTURE_FAILED,
                                     ProblemReason.WORKER_CRASH, ProblemReason.EXPORT_FAILED})


class Step(Enum):
    """What has been done already about the problem (the advice never repeats it)."""

    CHECKED = "checked"  # found by check or by a compare without fixes: fix --auto not run yet
    AUTO_FIXED = "auto_fixed"  # fix --auto ran (or a project's fixes are applied) and it is still there


def _other_exporter(exporter: str) -> str:
    return next(name for name in EXPORTERS if name != exporter)


def _at(problem: UnsupportedNode) -> str:
    return f" at {problem.source}" if problem.source else ""


def takes_a_template(problem: UnsupportedNode) -> bool:
    """Whether ``problem`` is an op of the model a template can convert (a stub has its schema)."""
    if problem.reason in _NOT_ONE_OPS_CONVERSION:
        return False
    namespace = problem.kind.partition("::")[0]
    return problem.kind == PYTHON_OP_KIND or (problem.kind != UNPLACED_KIND
                                              and namespace not in _EXPORTER_MADE_NAMESPACES)


def advice_for(problem: UnsupportedNode, exporter: str, model_name: str, done: Step) -> str:
    """One sentence: what to do about ``problem`` next, given what was ``done`` already."""
    other = _other_exporter(exporter)
    if problem.reason == ProblemReason.CAPTURE_FAILED:
        return (f"change the model's code{_at(problem)} (its problem's message in `check` says how): torch.export "
                f"cannot capture it there, and no fix template changes a capture; or export with --exporter {other}")
    if problem.reason in IN_THE_MODELS_CODE_REASONS:
        return (f"change the model's code{_at(problem)} (its problem's message in `check` says how): no conversion "
                "changes what the model computes")
    if problem.reason == ProblemReason.WORKER_CRASH:
        return (f"torch crashed while exporting: run `python main.py check {model_name} --exporter {exporter}` "
                f"alone to see if it repeats, or try --exporter {other}")
    if problem.reason == ProblemReason.EXPORT_FAILED:
        where = f" at {problem.display_kind}" if problem.kind.startswith("aten::") else ""
        return (f"torch.onnx's own pass failed{where}, not one op's conversion, so no fix template changes it: "
                f"try --exporter {other}" + (f", or rewrite the line{_at(problem)}" if problem.source else ""))
    if problem.reason == ProblemReason.RUNTIME_ERROR and not takes_a_template(problem):
        what = ("ONNX Runtime's error names no node of the export" if problem.kind == UNPLACED_KIND else
                f"ONNX Runtime refuses the node {problem.onnx_node or problem.kind}, which the exporter made "
                "with no op of the model behind it")
        return f"{what}: try another --opset or --exporter {other}"
    if done == Step.CHECKED:
        return (f"run `python main.py fix {model_name} --exporter {exporter} --auto -o {FIX_PROJECT}`, then "
                f"compare with --project {FIX_PROJECT}")
    return "no built-in fix works for it: write one in the window (a stub is generated from its schema)"


def advice_without_a_list(model_name: str, exporter: str, done: Step) -> str:
    """What to do about an export that does not convert, where its problems were not listed."""
    if done == Step.CHECKED:
        return (f"run `python main.py fix {model_name} --exporter {exporter} --auto -o {FIX_PROJECT}` (or `check` "
                f"to list the nodes), then compare with --project {FIX_PROJECT}")
    return (f"the project's fixes leave nodes that do not convert: `python main.py check {model_name} --exporter "
            f"{exporter} --project PROJECT` lists them, with what to do about each")


def sentence(advice: str) -> str:
    """Advice as a hint on its own: capitalised, with a full stop."""
    return advice[:1].upper() + advice[1:] + ("" if advice.endswith(".") else ".")
