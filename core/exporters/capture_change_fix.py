"""Capture failures' code changes as one fix that `fix --auto` tries and a project keeps (issue 46).

The mechanical changes of :mod:`capture_changes` (``torch.where`` for a branch on a value,
``torch._check`` for a check, ``.item()`` with ``torch._check`` for a size) are made to a copy of
each failing file's text, the model's own or a library's. Each changed method is taken out of
that copy into a dynamo template (``@fix(..., dynamo_only=...)``) of the family
``dynamo_code_change``: while the model is captured, its submodules run the changed methods (the
files stay as they are, as transformers' exporters patch modules for the export only), and torch's
outputs, which the ONNX file must match at other sizes and values, stay the original code's. The
template shows the change as a diff, so the user can make it in the code instead. No torch: the
window and the fix script read it as text.
"""
from __future__ import annotations

import ast
import re
import textwrap

from fixport.core.exporters.capture_changes import ChangedSource, CodeChange
from fixport.core.project.template_form import fix_decorator
from fixport.core.words.vocabulary import DYNAMO_CODE_CHANGE_FAMILY, TRACED_CODE_CHANGE_FAMILY

CODE_CHANGE_TEMPLATE_ID = "dynamo.capture_code_change"
TRACED_CODE_CHANGE_TEMPLATE_ID = "torchscript.traced_size_change"
# Each exporter's code-change fix: (template id, family, the exporter, the capture, what goes wrong, the
# lines it changes)
_FOR_CAPTURE = (CODE_CHANGE_TEMPLATE_ID, DYNAMO_CODE_CHANGE_FAMILY, "dynamo", "torch.export's capture",
                "torch.export stops where the model's Python depends on a tensor's value.",
                "The lines torch.export cannot capture")
_FOR_TRACE = (TRACED_CODE_CHANGE_TEMPLATE_ID, TRACED_CODE_CHANGE_FAMILY, "torchscript", "the TorchScript trace",
              "The TorchScript trace folds a size read into Python arithmetic into a constant.",
              "The lines whose sizes the TorchScript trace folds into constants")
DIFF_HEADING = "# The change, as a diff of the code:"
_SUPER_RE = re.compile(r"\bsuper\(\)")
_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod", "property"})  # not a method bound to an instance


def changed_function(changed: ChangedSource, change: CodeChange, new_name: str) -> str | None:
    """The plain top-level function ``change`` is in (class_name ''), from the changed text, renamed
    ``new_name`` (its decorators left off); None where there is none of that name."""
    tree = ast.parse(changed.after)
    function = next((node for node in tree.body if isinstance(node, ast.FunctionDef)
                     and node.name == change.method_name), None)
    if function is None:
        return None
    lines = changed.after.splitlines(keepends=True)[function.lineno - 1:function.end_lineno]
    return "".join(lines).replace(f"def {change.method_name}(", f"def {new_name}(", 1)


def changed_method(changed: ChangedSource, change: CodeChange, new_name: str) -> str | None:
    """The method ``change`` is in, from the changed text, dedented and renamed ``new_name``
    (``super()`` spelled out, as the function runs outside its class); None where it is no plain
    method of a top-level class. A change in a plain function: :func:`changed_function`."""
    if not change.class_name:
        return changed_function(changed, change, new_name)
    tree = ast.parse(changed.after)
    owner = next((node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == change.class_name),
                 None)
    method = next((node for node in (owner.body if owner else []) if isinstance(node, ast.FunctionDef)
                   and node.name == change.method_name), None)
    if method is None or not method.args.args:
        return None
    if any(isinstance(d, ast.Name) and d.id in _PLAIN_DECORATORS for d in method.decorator_list):
        return None
    lines = changed.after.splitlines(keepends=True)[method.lineno - 1:method.end_lineno]
    text = textwrap.dedent("".join(lines)).replace(f"def {change.method_name}(", f"def {new_name}(", 1)
    return _SUPER_RE.sub(f"super({change.class_name}, {method.args.args[0].arg})", text)


def code_change_template(changed_files: list[ChangedSource], kinds: list[str], traced: bool = False) -> str | None:
    """The dynamo template (with ``traced``: the TorchScript one) whose ``symbolic()`` lists each
    changed method of ``changed_files`` (every change of every file, one fix: they are captured
    together) with where it goes; ``kinds``: the problems it answers. None where a change is in no
    method it can set."""
    template_id, family, exporter, capture, stops, lines_of = _FOR_TRACE if traced else _FOR_CAPTURE
    functions: list[str] = []
    rows: list[str] = []
    done: set[tuple[str, str, str]] = set()
    for changed in changed_files:
        for change in changed.changes:
            where = (change.class_name, changed.path_name, change.method_name)
            if where in done:
                continue
            name = f"changed_{len(done) + 1}"
            text = changed_method(changed, change, name)
            if text is None:
                return None
            done.add(where)
            functions.append(f"# {_where(change)} of {changed.path_name}, changed:\n"
                             f"{text.rstrip()}\n")
            rows.append(f"        ({change.class_name!r}, {changed.path_name!r}, {change.method_name!r}, {name}),")
    if not functions:
        return None
    why = "\n".join(line for changed in changed_files for change in changed.changes
                    for line in textwrap.wrap(change.why, 98, initial_indent="# - ", subsequent_indent="#   "))
    diff = "".join(f"# {line}\n" if line.strip() else "#\n"
                   for changed in changed_files for line in changed.diff().splitlines())
    methods = ", ".join(dict.fromkeys(f"{_where(c)} ({changed.path_name})"
                                      for changed in changed_files for c in changed.changes))
    marked = fix_decorator({
        "id": template_id, "title": "Code changed for the capture",
        "description": f"{lines_of}, changed while the model is {'traced' if traced else 'captured'}: {methods}.",
        "family": family, "fits": sorted(set(kinds)), "min_opset": 1 if traced else 18,
        "notes": "To make the change in the code itself, apply the diff below, then drop this fix."},
        only=exporter, why=f"the model's code, changed for {capture}")
    return f'''"""The model's code changed for {capture} (generated by Fixport).

{stops} While the model is
captured, its parts run the changed methods below in place of their own ({methods}); the
files stay as they are. torch's outputs are still the original code's, and the ONNX file must
match them at the traced sizes, at the declared other sizes and at other values.
"""
from __future__ import annotations

import torch

from fixport.symbolics.api import fix

# Why each line changed:
{why}
#
{DIFF_HEADING}
{diff}

{chr(10).join(functions)}

{marked}def symbolic():
    """Each changed method: (its class, the file the class is defined in, the method, its new version);
    a plain function's class is ''."""
    return [
{chr(10).join(rows)}
    ]
'''


def _where(change: CodeChange) -> str:
    return f"{change.class_name}.{change.method_name}" if change.class_name else change.method_name


def diff_in(template: str) -> str:
    """The diff a code-change fix's source shows ('' where it shows none, or the user removed it)."""
    lines = template.splitlines()
    if DIFF_HEADING not in lines:
        return ""
    shown = []
    for line in lines[lines.index(DIFF_HEADING) + 1:]:
        if not line.startswith("#"):
            break
        shown.append(line[2:] if line.startswith("# ") else "")
    return "\n".join(shown)
