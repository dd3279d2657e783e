"""Which input dims could be declared dynamic: each dim is exported dynamic on its own and checked
at other sizes (:mod:`fixport.core.checks.shape_check`); what blocks it is named with its line.

A dim generalises when the export with it dynamic is clean and matches torch at a larger and a
smaller size. It is blocked when the export then fails or is wrong at those sizes (the trace baked
the size, a capture guard specialised it). It cannot be told when torch itself refuses the other
sizes, or when the export already has problems at the traced shapes.
"""
from __future__ import annotations

from fixport.core.analysis.analysis import analyze
from fixport.core.checks.shape_check import baked_at
from fixport.core.exporters.choice import resolved_export_options
from fixport.core.loaders.model_cache import open_model
from fixport.core.records.requests import AnalyzeRequest, SuggestDynamicRequest
from fixport.core.records.results import DimVerdict
from fixport.core.words.cancel import CancelCallback, ProgressCallback, check_cancelled, report
from fixport.core.words.vocabulary import ProblemReason


def suggest_dynamic_dims(request: SuggestDynamicRequest, progress: ProgressCallback | None = None,
                         cancelled: CancelCallback | None = None) -> list[DimVerdict]:
    """One verdict per dim of every input, in input order."""
    loaded = open_model(request.model)
    options = resolved_export_options(loaded.settings, request.options)
    names = list(options.input_names or loaded.input_names)
    dims = [(name, axis, int(size)) for name, tensor in zip(names, loaded.example_inputs)
            for axis, size in enumerate(tensor.shape)]
    before = analyze(AnalyzeRequest(request.model, _without_dynamic_axes(request.options, names), request.mappings,
                                    at_input_sets=False), cancelled=cancelled)
    if before.unsupported:
        why = (f"the export has {len(before.unsupported)} problem(s) at the traced shapes: fix them first "
               "(`fix --auto`), then ask again")
        return [DimVerdict(name, axis, size, None, why) for name, axis, size in dims]
    verdicts = []
    for index, (name, axis, size) in enumerate(dims):
        check_cancelled(cancelled)
        report(progress, index / max(len(dims), 1), f"exporting with {name}[{axis}] dynamic ({index + 1}/{len(dims)})")
        options_with_dim = {**request.options, "input_names": names,
                            "dynamic_axes": {name: {axis: f"{name}_{axis}"}}}
        result = analyze(AnalyzeRequest(request.model, options_with_dim, request.mappings, at_input_sets=False),
                         cancelled=cancelled)
        verdicts.append(_verdict(name, axis, size, result))
    report(progress, 1.0, "done")
    return verdicts


def _without_dynamic_axes(options: dict, names: list[str]) -> dict:
    return {**options, "input_names": names, "dynamic_axes": {}}  # {}, not None: None keeps the file's own


def _verdict(name: str, axis: int, size: int, result) -> DimVerdict:
    """What one export with ``name[axis]`` dynamic showed."""
    if result.unsupported:
        first = next((p for p in result.unsupported if p.reason == ProblemReason.SHAPE_SPECIALISED),
                     result.unsupported[0])
        return DimVerdict(name, axis, size, False, first.message.split(". ")[0] + ".", _blocking_line(first))
    if not result.other_sizes_checked:
        refused = next((note for note in result.notes if "torch itself fails" in note), "")
        return DimVerdict(name, axis, size, None, refused or "no other size could be checked")
    return DimVerdict(name, axis, size, True)


def _blocking_line(problem) -> str:
    """The user's line that turned the size into a constant (named in the message), else the node's."""
    return baked_at(problem) or problem.source
