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


def _try(loaded: LoadedModel, template: str,
         recaptured: Callable[[], list[UnsupportedNode]]) -> tuple[str, list[UnsupportedNode]]:
    """('', []) when the changes hold (same torch outputs, and the capture succeeds), else why not
    and the capture failures left with them (the next lines torch.export stops at)."""
    try:
        changed = compile_template_source(template, {}, "<capture code change>")()
        with torch.no_grad():
            expected = loaded.module(*loaded.example_inputs)
        with methods_changed(loaded.module, changed):
            with torch.no_grad():
                got = loaded.module(*loaded.example_inputs)
            if not same_outputs(expected, got):
                return "torch's outputs change with it, so it is not the same model", []
            left = recaptured()
    except Exception as error:  # noqa: BLE001 -- the changed code can raise anything
        return f"it raises {type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}", []
    if not left:
        return "", []
    return "torch.export still fails: " + left[0].message.split(". ")[0], left


def _proposals(loaded: LoadedModel, problems: list[UnsupportedNode], changed_files: dict[str, ChangedSource],
               ) -> dict[int, tuple[ChangedSource, CodeChange]]:
    """Index in ``problems`` -> (the file's changes, the change proposed for it), each change added
    to ``changed_files`` (file name -> its changes so far; a change already there is not proposed again)."""
    found: dict[int, tuple[ChangedSource, CodeChange]] = {}
    for name, path in code_files(loaded, {p.source.rpartition(":")[0] for p in problems}).items():
        if not any(p.source.rpartition(":")[0] == name for p in problems):
            continue
        try:
            before = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        changed = changed_files.setdefault(name, ChangedSource(name, before))
        for index, change in proposals_for(before, name, problems).items():
            if any(c.start <= change.end and change.start <= c.end for c in changed.changes):
                continue  # a line already changed: the change did not answer it
            changed.changes.append(change)
            found[index] = (changed, change)
    return found


# How many times the capture is tried again with the changes for the lines it stopped at next: a
# library's early return often leads to another (torchvision's batched NMS, then its coordinate trick).
MAX_ROUNDS = 6


def with_code_changes(loaded: LoadedModel, problems: list[UnsupportedNode],
                      recaptured: Callable[[], list[UnsupportedNode]]) -> list[UnsupportedNode]:
    """``problems`` with a proposed change (``code_change``, a diff) on each capture failure that has
    one, and the fix that makes them all for the capture (``code_change_fix``) where they hold;
    ``recaptured()`` captures the model again and gives the capture failures left ([] when it
    captures). Where the capture then stops at a further line that has a change, it is added
    and the capture tried again, up to ``MAX_ROUNDS`` times: the fix makes every change."""
    if loaded.source_kind != "python" or loaded.module is None:
        return problems
    changed_files: dict[str, ChangedSource] = {}
    found = _proposals(loaded, problems, changed_files)
    if not found:
        return problems
    kinds = [problems[index].kind for index in found]
    further = 0  # changes made for the lines the capture stopped at after the first ones
    for _ in range(MAX_ROUNDS):
        files = [changed for changed in changed_files.values() if changed.changes]
        template = code_change_template(files, kinds)
        if template is None:
            outcome = "not tried: a line is not in a method of a class or a plain function"
            break
        outcome, left = _try(loaded, template, recaptured)
        more = _proposals(loaded, left, changed_files) if outcome and left else {}
        if not more:
            break
        kinds += [left[index].kind for index in more]
        further += len(more)
    updated = list(problems)
    for index, (changed, change) in found.items():
        problem = problems[index]
        together = f" (with the {len(found) + further} changes proposed here)" if len(found) + further > 1 else ""
        then = (f", {further} of them for the lines it stopped at next" if further and not outcome else "")
        verdict = f"{CHANGE_HOLDS}{together}{then}." if not outcome else f"{CHANGE_UNTRIED} ({outcome})."
        head, cut, _ = problem.message.partition("`. ")  # what torch could not decide, at which line
        what = f"{head}`." if cut else problem.message.rstrip()
        updated[index] = replace(problem, message=f"{what} {change.why} {verdict}",
                                 code_change=ChangedSource(changed.path_name, changed.before, [change]).diff(),
                                 code_change_fix=template if not outcome and template else "")
    return updated
