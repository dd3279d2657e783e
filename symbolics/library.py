"""The template library: built-in templates plus the user's own, ranked per op kind.

Templates are plain Python modules with a docstring and a ``symbolic`` function under
``@fix(...)`` (see :mod:`fixport.core.project.template_form`; an older ``TEMPLATE`` dict is
converted as it is read). Metadata is read with ``ast`` so listing never imports torch. Built-ins
come from the namespace folders and from the templates written for the example models; user
templates live in their own folder and override built-ins with the same id; ``reset(id)`` removes
the override (torch's SymbolicRegistry keeps custom symbolics apart the same way). ``get(id)`` is
the one lookup by id.
"""
from __future__ import annotations

import ast
import importlib.util
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from fixport.core.project.fix_meta import REQUIRED_KEYS, FixMetaError, template_metadata
from fixport.core.project.template_form import in_current_form
from fixport.core.words.vocabulary import split_python_op

# The hand-written fixes, one folder per op namespace as torch_lib lays out its ops; ``any_op`` holds
# the generic ones (fits ``*``). Each library offers those written for its exporter (for_exporter).
NAMESPACE_DIRS = tuple(Path(__file__).parent / name for name in ("aten", "torchvision", "quantized", "prim", "any_op"))
# Templates written for one example model each live beside the examples (fixport.examples).
EXAMPLE_TEMPLATES_DIR = Path(__file__).parent.parent / "examples" / "templates"
BUILTIN_DIRS = (*NAMESPACE_DIRS, EXAMPLE_TEMPLATES_DIR)
DEFAULT_USER_DIR = Path(os.path.expanduser("~/.config/fixport/templates"))
KIND_PARAM = "kind"  # a template's param that Fixport fills with the op it fixes (one file for several ops)
PARAM_TYPES = frozenset({"str", "int", "float", "bool", "choice"})
TORCHLIB_MIN_OPSET = 18  # torch_lib functions are written against ONNX opset 18 (replayed lower)
BRIDGE_TEMPLATE_ID = "bridge.torchlib"
STUB_TEMPLATE_ID = "stub"

# Ranking tiers, best first.
TIER_EXACT_READY, TIER_EXACT_CUSTOM, TIER_NAMESPACE, TIER_EXACT_OPSET = 0, 1, 2, 3
TIER_BRIDGE, TIER_GENERIC, TIER_STUB = 4, 5, 6


class TemplateFormatError(ValueError):
    """A template file whose metadata cannot be read."""

    def __init__(self, message: str, path: str = "", line: int | None = None) -> None:
        super().__init__(f"{path}:{line or 0}: {message}" if path else message)
        self.message, self.path, self.line = message, path, line


@dataclass
class TemplateInfo:
    """One template's metadata and source, read without executing it."""

    id: str
    title: str
    description: str
    family: str
    fits: list[str]
    min_opset: int
    max_opset: int | None
    params: dict[str, dict[str, Any]]
    runs_in_onnxruntime: bool
    custom_opsets: dict[str, int]
    notes: str
    source: str
    path: str = ""
    docstring: str = ""
    builtin: bool = True
    symbolic_line: int = 0
    # Optional: the fix is built for the traced sizes (a baked matrix or index), so it is
    # right at other sizes only by chance; ranked after the fixes that keep shapes open.
    shape_specialised: bool = False
    # Optional (dynamo): the ONNX function is for the op on complex values, which the
    # exporter carries as real tensors with a trailing (real, imag) axis of 2.
    complex_inputs: bool = False
    # The exporters that take it: both for an ONNX function, one under torchscript_only or
    # dynamo_only; () for a TEMPLATE-dict file not yet converted, which only the library whose
    # folder holds it offers (it is converted for that library's exporter as it loads).
    exporters: tuple[str, ...] = ()
    torchscript_only: str = ""  # why only TorchScript can express it (a g.op fix in the shared library)
    tolerance: tuple[float, float] | None = None  # (rtol, atol) the fix promises against torch

    def for_exporter(self, exporter: str) -> bool:
        """Whether the ``exporter`` (``torchscript``, ``dynamo``) library may offer it."""
        return not self.exporters or exporter in self.exporters

    def default_params(self) -> dict[str, Any]:
        return {name: spec.get("default") for name, spec in self.params.items()}

    def opset_ok(self, opset: int) -> bool:
        return self.min_opset <= opset and (self.max_opset is None or opset <= self.max_opset)


@dataclass
class RankedTemplate:
    """An offer for one op kind: a template (None for the stub), its rank and why."""

    template_id: str
    tier: int
    why: str
    template: TemplateInfo | None = None
    extra_params: dict[str, Any] = field(default_factory=dict)


def parse_template_source(source: str, path: str = "<template>") -> TemplateInfo:
    """Read a template's metadata with ``ast`` + ``literal_eval`` (no import, no exec)."""
    try:
        meta, tree, symbolic_line = template_metadata(source, path)
    except FixMetaError as error:
        raise TemplateFormatError(error.message, path, error.line) from error
    for name, spec in meta["params"].items():
        if spec.get("type") not in PARAM_TYPES:
            raise TemplateFormatError(f"param {name!r}: type must be one of {sorted(PARAM_TYPES)}", path, 1)
    return TemplateInfo(**{key: meta[key] for key in REQUIRED_KEYS}, source=source, path=path,
                        docstring=ast.get_docstring(tree) or "", symbolic_line=symbolic_line,
                        shape_specialised=bool(meta.get("shape_specialised", False)),
                        complex_inputs=bool(meta.get("complex_inputs", False)),
                        exporters=tuple(meta.get("exporters", ())), torchscript_only=meta.get("torchscript_only", ""),
                        tolerance=tuple(meta["tolerance"]) if meta.get("tolerance") else None)


def fit_strength(fit: str, kind: str, python_op_name: str | None) -> str | None:
    """'exact', 'namespace', 'generic' or None for how ``fit`` matches an op."""
    if fit == "*":
        return "generic"
    fit_kind, fit_name = split_python_op(fit)
    if fit_name is not None:
        return "exact" if kind == fit_kind and python_op_name == fit_name else None
    if fit == kind or "." not in kind and fit.partition(".")[0] == kind:  # TorchScript kinds have no overload
        return "exact"
    if fit.endswith("::*") and kind.startswith(fit[:-1]):
        return "namespace"
    return None


@lru_cache(maxsize=1)
def torchlib_kinds() -> frozenset[str]:
    """Op names torch_lib implements, found by scanning its sources (no torch import)."""
    spec = importlib.util.find_spec("onnxscript")
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    ops_dir = Path(list(spec.submodule_search_locations)[0]) / "function_libs" / "torch_lib" / "ops"
    names: set[str] = set()
    decorator = re.compile(r"@torch_op\(\s*(\([^)]*\)|\"[^\"]+\")", re.S)
    for path in ops_dir.glob("*.py"):
        for match in decorator.finditer(path.read_text(encoding="utf-8")):
            for name in re.findall(r"\"([^\"]+)\"", match[1]):
                names.add(name)
                names.add(name.split(".", 1)[0] if name.count("::") == 1 else name)
    return frozenset(names)


_parsed_files: dict[Path, tuple[tuple[int, int], TemplateInfo]] = {}


def _parsed_template(path: Path) -> TemplateInfo:
    """A copy of ``path``'s metadata, parsed again only when the file changed (every export lists them)."""
    stat = path.stat()
    version = (stat.st_mtime_ns, stat.st_size)
    cached = _parsed_files.get(path)
    if cached is None or cached[0] != version:
        cached = (version, parse_template_source(path.read_text(encoding="utf-8"), str(path)))
        _parsed_files[path] = cached
    return replace(cached[1])


class TemplateLibrary:
    """Built-in templates plus user templates (which override built-ins by id)."""

    exporter = "torchscript"  # the exporter whose fixes it offers

    def __init__(self, user_dir: str | os.PathLike[str] | None = None,
                 builtin_dirs: Iterable[str | os.PathLike[str]] | None = None) -> None:
        self.user_dir = Path(user_dir) if user_dir is not None else DEFAULT_USER_DIR
        self.builtin_dirs = [Path(d) for d in (builtin_dirs if builtin_dirs is not None else BUILTIN_DIRS)]
        self._builtins: dict[str, TemplateInfo] = {}
        self._user: dict[str, TemplateInfo] = {}
        self.errors: list[TemplateFormatError] = []
        self.notes: list[str] = []  # user templates read in an older form and converted (see reload)
        self.reload()

    def reload(self) -> None:
        """Read every folder again; a user template in an older form is converted to the current one
        as it is read (its file is left as it is), and ``notes`` says so."""
        self.errors, self.notes = [], []
        self._builtins = {}
        for folder in self.builtin_dirs:
            self._builtins.update(self._load_folder(folder, builtin=True))
        self._user = self._load_folder(self.user_dir, builtin=False)

    def _load_folder(self, folder: Path, *, builtin: bool) -> dict[str, TemplateInfo]:
        found: dict[str, TemplateInfo] = {}
        if not folder.is_dir():
            return found
        for path in sorted(folder.rglob("*.py")):
            if path.name.startswith("_"):  # __init__.py: the folders are packages
                continue
            try:
                info = _parsed_template(path)
            except TemplateFormatError as error:
                self.errors.append(error)
                continue
            if not info.for_exporter(self.exporter):
                continue
            converted, note = in_current_form(info.source, self.exporter)
            if note:
                info = parse_template_source(converted, str(path))
                self.notes.append(f"{path}: {note}; write the file in that form (docs/writing-a-fix.md) "
                                  "to keep it current.")
            info.builtin = builtin
            found[info.id] = info
        return found

    # -- lookup ---------------------------------------------------------------------------
    def all(self) -> list[TemplateInfo]:
        """Effective templates: user overrides replace built-ins with the same id."""
        merged = {**self._builtins, **self._user}
        return sorted(merged.values(), key=lambda t: (t.family, t.id))

    def get(self, template_id: str) -> TemplateInfo:
        """The template in effect for ``template_id``: the user's version, else the built-in."""
        found = self._user.get(template_id) or self._builtins.get(template_id)
        if found is None:
            raise KeyError(f"no template {template_id!r}")
        return found

    def __contains__(self, template_id: object) -> bool:
        return template_id in self._user or template_id in self._builtins

    def is_overridden(self, template_id: str) -> bool:
        return template_id in self._user and template_id in self._builtins

    # -- user edits -----------------------------------------------------------------------
    def save_user_template(self, source: str) -> TemplateInfo:
        """Validate and write a user template as '<id>.py' in the user folder."""
        info = parse_template_source(source, "<user template>")
        self.user_dir.mkdir(parents=True, exist_ok=True)
        path = self.user_dir / f"{info.id}.py"
        path.write_text(source, encoding="utf-8")
        info.path, info.builtin = str(path), False
        self._user[info.id] = info
        return info

    def reset(self, template_id: str) -> None:
        """Drop the user's version of ``template_id`` so the built-in applies again."""
        info = self._user.pop(template_id, None)
        if info is not None and info.path and os.path.exists(info.path):
            os.remove(info.path)

    # -- ranking --------------------------------------------------------------------------
    def templates_for(self, kind: str, opset: int,
                      python_op_name: str | None = None) -> list[RankedTemplate]:
        """Ranked offers for an op kind; never empty (the schema stub is always last)."""
        kind, bracket_name = split_python_op(kind)
        python_op_name = python_op_name or bracket_name
        offers: list[RankedTemplate] = []
        for info in self.all():
            if info.id == BRIDGE_TEMPLATE_ID:
                continue
            strengths = {fit_strength(fit, kind, python_op_name) for fit in info.fits} - {None}
            if not strengths:
                continue
            offers.append(self._rank(info, strengths, opset))
        if BRIDGE_TEMPLATE_ID in self and kind in torchlib_kinds():
            bridge = self.get(BRIDGE_TEMPLATE_ID)
            why = "onnxscript torch_lib implements " + kind + (
                "" if opset >= TORCHLIB_MIN_OPSET else
                f" (written for opset {TORCHLIB_MIN_OPSET}, re-emitted at {opset} where its ops allow)")
            offers.append(RankedTemplate(bridge.id, TIER_BRIDGE if bridge.opset_ok(opset) else TIER_GENERIC + 1,
                                         why, bridge))
        # Within a tier the most specific template (highest min_opset, e.g. a native op) first.
        offers.sort(key=lambda o: (o.tier, -(o.template.min_opset if o.template else 0), o.template_id))
        offers.append(RankedTemplate(STUB_TEMPLATE_ID, TIER_STUB + 1,
                                     "starting point generated from the op's schema"))
        return offers

    @staticmethod
    def _rank(info: TemplateInfo, strengths: set[str], opset: int) -> RankedTemplate:
        ort = "runs in ONNX Runtime" if info.runs_in_onnxruntime else "needs a custom runtime"
        opset_text = f"opset {info.min_opset}" + (f"-{info.max_opset}" if info.max_opset else "+")
        if "exact" in strengths:
            if not info.opset_ok(opset):
                return RankedTemplate(info.id, TIER_EXACT_OPSET,
                                      f"made for this op but needs {opset_text}", info)
            tier = TIER_EXACT_READY if info.runs_in_onnxruntime else TIER_EXACT_CUSTOM
            return RankedTemplate(info.id, tier, f"made for this op, {opset_text}, {ort}", info)
        if "namespace" in strengths:
            tier = TIER_NAMESPACE if info.opset_ok(opset) else TIER_EXACT_OPSET
            return RankedTemplate(info.id, tier, f"fits the op's namespace, {opset_text}, {ort}", info)
        tier = TIER_GENERIC if info.opset_ok(opset) else TIER_GENERIC + 1
        return RankedTemplate(info.id, tier, f"generic template ({info.family}), {ort}", info)


def params_for(kind: str, defaults: dict[str, Any]) -> dict[str, Any]:
    """A template's default params, with ``kind`` set to the op it fixes when it asks for it."""
    return {**defaults, KIND_PARAM: kind} if KIND_PARAM in defaults else dict(defaults)
