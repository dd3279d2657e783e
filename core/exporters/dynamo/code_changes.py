"""Capture failures answered with a code change, tried on the loaded model before it is proposed.

For each capture failure at a line of the model's code -- its own file, or a library's a part of
it is an instance of (transformers, torchvision) -- :func:`fixport.core.exporters.capture_changes.propose_change`
reads the statement there. The changes are tried together without reloading the weights, the way
the fix that keeps them runs (:mod:`fixport.core.exporters.capture_change_fix`): the model's parts run
the changed methods while it is captured (``script_part.methods_changed``). The change holds when
torch gives the same outputs as before and torch.export captures the model; each problem then
carries its diff, and the fix `fix --auto` tries (``code_change_fix``).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import torch

from fixport.core.exporters.capture_change_fix import code_change_template
from fixport.core.exporters.capture_changes import ChangedSource, CodeChange, proposals_for
from fixport.core.exporters.code_files import code_files
from fixport.core.exporters.template_compiler import compile_template_source
from fixport.core.exporters.torch_export.same_outputs import same_outputs
from fixport.core.foundation.changed_methods import methods_changed
from fixport.core.loaders.loading import LoadedModel
from fixport.core.words.problems import UnsupportedNode

CHANGE_HOLDS = ("Tried on the loaded model: with the change below torch.export captures it, and torch's outputs "
                "stay the same")
CHANGE_UNTRIED = "The change below may answer it"


def _try(loaded: LoadedModel, template: str, recaptured: Callable[[], str]) -> str:
    """'' when the changes hold (same torch outputs, and the capture succeeds), else why not."""
    try:
        changed = compile_template_source(template, {}, "<capture code change>")()
        with torch.no_grad():
            expected = loaded.module(*loaded.example_inputs)
        with methods_changed(loaded.module, changed):
            with torch.no_grad():
                got = loaded.module(*loaded.example_inputs)
            if not same_outputs(expected, got):
                return "torch's outputs change with it, so it is not the same model"
            return recaptured()
    except Exception as error:  # noqa: BLE001 -- the changed code can raise anything
        return f"it raises {type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"


def with_code_changes(loaded: LoadedModel, problems: list[UnsupportedNode],
                      recaptured: Callable[[], str]) -> list[UnsupportedNode]:
    """``problems`` with a proposed change (``code_change``, a diff) on each capture failure that has
    one, and the fix that makes them all for the capture (``code_change_fix``) where they hold;
    ``recaptured()`` captures the model again and says what still fails ('' when nothing)."""
    if loaded.source_kind != "python" or loaded.module is None:
        return problems
    found: dict[int, tuple[ChangedSource, CodeChange]] = {}
    changed_files: list[ChangedSource] = []
    for name, path in code_files(loaded, {p.source.rpartition(":")[0] for p in problems}).items():
        if not any(p.source.rpartition(":")[0] == name for p in problems):
            continue
        try:
            before = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        proposals = proposals_for(before, name, problems)
        if proposals:
            changed_files.append(ChangedSource(name, before, list(dict.fromkeys(proposals.values()))))
            found.update({index: (changed_files[-1], change) for index, change in proposals.items()})
    if not found:
        return problems
    template = code_change_template(changed_files, [problems[index].kind for index in found])
    outcome = (_try(loaded, template, recaptured) if template is not None
               else "not tried: a line is not in a method of a class or a plain function")
    updated = list(problems)
    for index, (changed, change) in found.items():
        problem = problems[index]
        together = f" (with the {len(found)} changes proposed here)" if len(found) > 1 else ""
        verdict = f"{CHANGE_HOLDS}{together}." if not outcome else f"{CHANGE_UNTRIED} ({outcome})."
        what = problem.message.partition("`. ")[0] + "`."  # what torch could not decide, at which line
        updated[index] = replace(problem, message=f"{what} {change.why} {verdict}",
                                 code_change=ChangedSource(changed.path_name, changed.before, [change]).diff(),
                                 code_change_fix=template if not outcome and template else "")
    return updated
