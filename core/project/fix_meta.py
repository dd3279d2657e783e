"""A fix's template metadata, kept with the saved fix (torch's ``OnnxDecompMeta`` kept beside each
registered function): read once from the template's source when the fix is made, so no exporter
builds a library or reads the source again to export it.

The reading itself is here, with ``ast`` only (no import, no exec): ``@fix(*fits, **metadata)`` above
``def symbolic`` (``fixport.symbolics.api.fix``), or the older literal ``TEMPLATE`` dict, read as it
is until :func:`fixport.core.project.template_form.in_current_form` converts it.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

REQUIRED_KEYS = ("id", "title", "description", "family", "fits", "min_opset", "max_opset",
                 "params", "runs_in_onnxruntime", "custom_opsets", "notes")
FIX_DECORATOR = "fix"  # fixport.symbolics.api.fix, which this torch-free module cannot import
# @fix's keywords saying only one exporter takes the fix (and why), by exporter; neither: both take it.
ONLY_KEYWORDS = {"torchscript": "torchscript_only", "dynamo": "dynamo_only"}
_reads = [0]  # sources read for metadata in this process (tests count them: an export reads none)


class FixMetaError(ValueError):
    """A template whose metadata cannot be read, with the 1-based line when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message, self.line = message, line


def metadata_reads() -> int:
    """How many template sources this process has read for their metadata."""
    return _reads[0]


def template_metadata(source: str, path: str = "<template>") -> tuple[dict[str, Any], ast.Module, int]:
    """A template's metadata (TEMPLATE's keys, all present), its tree and the line of ``symbolic``."""
    _reads[0] += 1
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as error:
        raise FixMetaError(f"syntax error: {error.msg}", error.lineno) from error
    meta: dict[str, Any] | None = None
    symbolic_line = 0
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "TEMPLATE" for t in node.targets):
            try:
                meta = ast.literal_eval(node.value)
            except ValueError as error:
                raise FixMetaError("TEMPLATE must be a literal dict", node.lineno) from error
        elif isinstance(node, ast.FunctionDef) and node.name == "symbolic":
            symbolic_line = node.lineno
    if meta is None:
        meta, symbolic_line = fix_decorator_metadata(tree)
    if not isinstance(meta, dict):
        raise FixMetaError("no TEMPLATE = {...} dict and no @fix(...) on symbolic", 1)
    missing = [key for key in REQUIRED_KEYS if key not in meta]
    if missing:
        raise FixMetaError(f"the metadata lacks {', '.join(missing)} (give them to @fix(...))", 1)
    if not symbolic_line:
        raise FixMetaError("no function named 'symbolic'", 1)
    return meta, tree, symbolic_line


def fix_decorator_metadata(tree: ast.Module) -> tuple[dict[str, Any] | None, int]:
    """The TEMPLATE a ``@fix(*fits, **metadata)`` above ``def symbolic`` amounts to, and its line
    (None, 0 where there is none)."""
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name == "symbolic"):
            continue
        for decorator in node.decorator_list:
            called = decorator.func if isinstance(decorator, ast.Call) else None
            name = called.id if isinstance(called, ast.Name) else getattr(called, "attr", None)
            if name != FIX_DECORATOR or not isinstance(decorator, ast.Call):
                continue
            try:
                fits = [ast.literal_eval(arg) for arg in decorator.args]
                given = {kw.arg: ast.literal_eval(kw.value) for kw in decorator.keywords if kw.arg}
            except ValueError as error:
                raise FixMetaError("@fix(...) takes literal arguments only", decorator.lineno) from error
            if "strategy" not in given:
                raise FixMetaError("@fix(...) lacks strategy", decorator.lineno)
            only = [name for name, keyword in ONLY_KEYWORDS.items() if given.get(keyword)]
            if len(only) > 1:
                raise FixMetaError(f"@fix(...) takes one of {', '.join(ONLY_KEYWORDS.values())}", decorator.lineno)
            meta = {"max_opset": None, "params": {}, "runs_in_onnxruntime": True, "custom_opsets": {},
                    "notes": "", **given, "fits": fits, "family": given.pop("strategy"),
                    "exporters": only or list(ONLY_KEYWORDS)}
            return meta, node.lineno
    return None, 0


@dataclass(frozen=True)
class FixMeta:
    """What an exporter needs of a fix's template, besides its code."""

    template_id: str
    family: str  # the kind of fix: decompose, dynamo_decomposition, traced_value_input, ...
    fits: tuple[str, ...]  # the ops it targets
    exporters: tuple[str, ...] = ()  # the exporters that take it; () where only its folder's library does
    params: dict[str, dict[str, Any]] = field(default_factory=dict)  # the params' spec (the form's fields)
    min_opset: int = 1
    max_opset: int | None = None
    complex_inputs: bool = False  # dynamo: the function is for the op on complex values
    custom_opsets: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of_source(cls, source: str) -> FixMeta | None:
        """The metadata a template's source declares; None where it has none readable (a fix
        without metadata is registered as a translation at any opset)."""
        try:
            meta, _, _ = template_metadata(source)
        except FixMetaError:
            return None
        return cls.from_metadata(meta)

    @classmethod
    def from_metadata(cls, meta: dict[str, Any]) -> FixMeta:
        return cls(template_id=str(meta["id"]), family=str(meta["family"]), fits=tuple(meta["fits"]),
                   exporters=tuple(meta.get("exporters", ())), params=dict(meta["params"]),
                   min_opset=int(meta["min_opset"]), max_opset=meta["max_opset"],
                   complex_inputs=bool(meta.get("complex_inputs", False)),
                   custom_opsets=dict(meta["custom_opsets"]))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FixMeta:
        """Read back from a project file (lists where the record keeps tuples)."""
        return cls(**{**data, "fits": tuple(data.get("fits", ())), "exporters": tuple(data.get("exporters", ()))})

    def opset_ok(self, opset: int) -> bool:
        return self.min_opset <= opset and (self.max_opset is None or opset <= self.max_opset)
