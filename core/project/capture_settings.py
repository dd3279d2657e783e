"""torch's own capture settings, as fixes (issue 33): how the dynamo exporter captures and
decomposes the model, where a different setting exports what the default cannot.

SAM's vision attention fails in torch.onnx's own pass at ``aten::view`` with grad enabled and
exports, matching torch, under ``torch.no_grad()``. ``fix --auto`` tries each setting the
exporter offers (its profile's ``capture_settings``) like any other candidate: a whole-model
trial export, kept when what it was tried for is gone and the numbers still match. A chosen
setting is an export option (``ExportOptions.capture_settings``), so the project keeps it and
the fix script applies it. No torch here: the window and the command line read these names.
"""
from __future__ import annotations

from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason

NO_GRAD = "no_grad"
STRICT = "strict"
CORE_ATEN = "core_aten"
SIZE_SCALARS = "size_scalars"
DEFERRED_ASSERTS = "deferred_asserts"
DRAFT_EXPORT = "draft_export"
SUGGESTED_DIMS = "suggested_dims"
# Each setting and what it does, in the order fix --auto tries them (the smallest change first).
CAPTURE_SETTINGS: dict[str, str] = {
    NO_GRAD: "the whole export under torch.no_grad(): capture and decompose as inference, without autograd",
    STRICT: "torch.export's strict mode (TorchDynamo reads forward()) instead of non-strict",
    CORE_ATEN: "torch's core ATen decompositions on the captured program first (every op, not only those "
               "without an ONNX function)",
    SIZE_SCALARS: "sizes computed with tensor ops on 0-d integer buffers (persistent=False) kept symbolic while "
                  "captured, and range() over sizes",
    DEFERRED_ASSERTS: "torch.export with runtime assertions in place of guards "
                      "(prefer_deferred_runtime_asserts_over_guards=True)",
    DRAFT_EXPORT: "the program torch.export.draft_export captures where torch.export stops: what it cannot decide is "
                  "decided by the example's values, so the export is checked at other values of every input",
    SUGGESTED_DIMS: "each declared dynamic dim a torch.export.Dim with the range and relations torch.export's own "
                    "suggested fixes give (a guard on a size becomes the range the export declares; sizes outside it "
                    "are not the export's); refused where a suggested fix makes a declared dim static",
}
# What a capture setting may cure: the capture itself, torch.onnx's own passes, an op's translation.
SETTING_REASONS = frozenset({ProblemReason.CAPTURE_FAILED, ProblemReason.EXPORT_FAILED,
                             ProblemReason.TRANSLATION_FAILED, ProblemReason.NO_ONNX_FUNCTION})
# What each setting is tried for. A capture failure has been tried in strict mode already (the
# exporter tries both modes), and the decomposition table comes after the capture.
AFTER_CAPTURE = SETTING_REASONS - {ProblemReason.CAPTURE_FAILED}
# Where a capture failure's code change does not fit (issue 46), torch's own ways past it: tried
# after the code changes, for the capture failures no other setting is tried for.
FOR_CODE_FAILURES = (SIZE_SCALARS, DEFERRED_ASSERTS, DRAFT_EXPORT)
CAPTURE_ONLY = frozenset({ProblemReason.CAPTURE_FAILED})
TRIED_FOR: dict[str, frozenset[ProblemReason]] = {NO_GRAD: SETTING_REASONS, STRICT: AFTER_CAPTURE,
                                                  CORE_ATEN: AFTER_CAPTURE, SIZE_SCALARS: CAPTURE_ONLY,
                                                  DEFERRED_ASSERTS: CAPTURE_ONLY,
                                                  DRAFT_EXPORT: CAPTURE_ONLY,
                                                  SUGGESTED_DIMS: frozenset({ProblemReason.SHAPE_SPECIALISED})}
# Settings that decide at the capture what the model's code leaves to values: their export is
# checked at other values of every input.
DECIDED_AT_CAPTURE = frozenset({DEFERRED_ASSERTS, DRAFT_EXPORT})


# Capture failures that are the model code's (a branch on a value, dims that do not hold): only the
# settings for them (FOR_CODE_FAILURES) are tried, after their code change (core.exporters.capture_changes).
_CODE_FAILURE_WORDS = ("data_dependent", "DataDependent", "constraint_violation")


def may_cure(setting: str, problem: UnsupportedNode) -> bool:
    """Whether ``setting`` is worth a trial for ``problem``."""
    if problem.reason not in TRIED_FOR.get(setting, ()):
        return False
    return (problem.reason != ProblemReason.CAPTURE_FAILED or setting in FOR_CODE_FAILURES
            or not any(w in problem.kind for w in _CODE_FAILURE_WORDS))


def describe_setting(name: str) -> str:
    return CAPTURE_SETTINGS.get(name, name)
