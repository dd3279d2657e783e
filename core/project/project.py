"""Project files (``*.fixport.json``): the model, its inputs, export options and every fix.

Versioned: each file carries ``format_version``; every bump adds a migration so a saved
project always opens. Writes are atomic, so an edit is never half-saved.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from fixport.core.project.atomic_files import atomic_write_text
from fixport.core.project.export_options import ExportOptions
from fixport.core.project.fix_meta import FixMeta
from fixport.core.project.inputs import InputOptions, parse_input_spec
from fixport.core.project.shape_sets import ShapeSet, parse_shape_lines
from fixport.core.project.template_form import in_current_form
from fixport.core.words.errors import ExportError, ProjectError
from fixport.core.words.graph import Node
from fixport.core.words.optimizer_guard import OptimizerFix
from fixport.core.words.vocabulary import DEFAULT_EXPORTER

FORMAT_VERSION = 3
PROJECT_SUFFIX = ".fixport.json"
AUTOSAVE_SUFFIX = ".autosave"


@dataclass
class FixMapping:
    """One fix: this template (with these params or this edited source) handles this op kind,
    or only the node instance ``instance`` (an instance key)."""

    target_kind: str
    template_id: str
    source: str
    params: dict[str, Any] = field(default_factory=dict)
    instance: str | None = None
    python_op_name: str | None = None
    custom_opsets: dict[str, int] = field(default_factory=dict)
    edited: bool = False  # the user changed the template's source
    # Its template's metadata, read once from ``source`` when the fix is made (or, for a project saved
    # before fixes kept it, when it is loaded); None where the source declares none.
    meta: FixMeta | None = None

    def __post_init__(self) -> None:
        if isinstance(self.meta, dict):  # as a project file keeps it
            self.meta = FixMeta.from_json(self.meta)
        elif self.meta is None:
            self.meta = FixMeta.of_source(self.source)

    def in_current_form(self, exporter: str) -> tuple[FixMapping, str]:
        """This fix with its source in the current template form, read for ``exporter``, and the
        note saying what changed ('' where nothing did: the fix itself)."""
        source, note = in_current_form(self.source, exporter)
        return (replace(self, source=source, meta=None), note) if note else (self, "")

    @property
    def family(self) -> str | None:
        """The kind of fix its template declares (None where it declares none)."""
        return self.meta.family if self.meta else None

    def domain_opsets(self) -> dict[str, int]:
        """Domains this fix's nodes use; a custom-domain template names its domain in params."""
        opsets = dict(self.custom_opsets)
        domain = self.params.get("domain")
        if isinstance(domain, str) and domain:
            if domain != "custom":
                opsets.pop("custom", None)  # the template's placeholder domain, renamed by the user
            opsets[domain] = int(self.params.get("domain_version", 1))
        return opsets

    @property
    def replaced_kind(self) -> str:
        """The op a decomposition fix replaces: the op its ``kind`` param names where that differs
        (a fix for ``prims::lgamma`` replaces the ``aten::lgamma`` torch.onnx decomposed into it),
        else the fix's target."""
        kind = self.params.get("kind")
        return kind if isinstance(kind, str) and "::" in kind else self.target_kind

    @property
    def label(self) -> str:
        kind = f"{self.target_kind}[{self.python_op_name}]" if self.python_op_name else self.target_kind
        return f"{kind} @ {self.instance}" if self.instance else kind


def mapping_for(mappings: list[FixMapping], kind: str, instance: str,
                python_op_name: str | None = None) -> FixMapping | None:
    """The fix that converts the node ``instance`` of ``kind`` (for prim::PythonOp, of the
    autograd.Function ``python_op_name``), by one precedence: a fix for this node over a fix for
    its kind, and a fix naming its Function over one for any Function. The exporters dispatch in
    the same order (``symbolic_registration``, ``dynamo_fixes``); the window and Compare ask here.
    """
    name = python_op_name or None
    same_kind = [m for m in mappings if m.target_kind == kind and (m.python_op_name or None) in (None, name)]
    ranked = sorted(same_kind, key=lambda m: (m.instance != instance, (m.python_op_name or None) != name))
    return next((m for m in ranked if m.instance in (None, instance)), None)


def mapping_for_node(mappings: list[FixMapping], node: Node) -> FixMapping | None:
    """:func:`mapping_for` a source-graph node (a prim::PythonOp node names its Function in ``name``)."""
    name = node.attributes.get("name")
    return mapping_for(mappings, node.kind, node.id, str(name) if name else None)


@dataclass
class Project:
    """Everything needed to reproduce a fixed export."""

    model_path: str
    input_specs: list[str] = field(default_factory=list)  # "x=1x3x224x224:float32"
    input_file: str | None = None
    seed: int = 0
    trust: bool = False
    search_paths: list[str] = field(default_factory=list)
    export_options: dict[str, Any] = field(default_factory=dict)  # only what the user set
    mappings: list[FixMapping] = field(default_factory=list)
    # Input sets to check at instead of the derived other sizes, one each: "x=3x12,y=3x5" (older files: none).
    shapes_to_check: list[str] = field(default_factory=list)
    # A transformers checkpoint folder: its task, the component exported and the dtype (None: the folder's
    # own task, the first component, the checkpoint's own dtype). Optional keys, so files without them
    # read as before (no version bump).
    task: str | None = None
    component: str | None = None
    dtype: str | None = None  # the checkpoint's export dtype (None: auto, the checkpoint's own)
    # The settings that avoid an optimizer pass `compare --optimize` found breaking the export
    # (OptimizerFix.to_json each); an optional key like task's.
    optimizer_fixes: list[dict[str, Any]] = field(default_factory=list)
    # What loading changed, for the user to be told once (a fix's template converted to the current
    # form); not saved: the next save writes the converted text.
    load_notes: list[str] = field(default_factory=list)

    def set_optimizer_fixes(self, fixes: list[OptimizerFix]) -> None:
        self.optimizer_fixes = merged_optimizer_fixes(self.optimizer_fixes, fixes)

    def input_options(self) -> InputOptions:
        return InputOptions(specs=[parse_input_spec(s) for s in self.input_specs],
                            input_file=self.input_file, seed=self.seed)

    def other_shapes(self) -> list[ShapeSet]:
        """``shapes_to_check`` parsed, for the analyze and compare requests."""
        return parse_shape_lines(self.shapes_to_check)

    def set_mapping(self, mapping: FixMapping) -> None:
        """Add ``mapping``, replacing any mapping for the same kind/Function/instance."""
        key = (mapping.target_kind, mapping.python_op_name, mapping.instance)
        self.mappings = [m for m in self.mappings if (m.target_kind, m.python_op_name, m.instance) != key]
        self.mappings.append(mapping)

    def mapping_for(self, node: Node) -> FixMapping | None:
        """The fix that converts ``node`` of the source graph (see :func:`mapping_for`)."""
        return mapping_for_node(self.mappings, node)

    def remove_mapping(self, target_kind: str, python_op_name: str | None = None,
                       instance: str | None = None) -> None:
        key = (target_kind, python_op_name, instance)
        self.mappings = [m for m in self.mappings if (m.target_kind, m.python_op_name, m.instance) != key]

    def to_json(self, project_path: str | Path | None = None) -> dict[str, Any]:
        data = asdict(self)
        del data["load_notes"]
        if project_path is not None:
            data["model_path"] = _relative_if_possible(Path(self.model_path), Path(project_path).resolve().parent)
        return {"format_version": FORMAT_VERSION, "app": "fixport", **data}


def merged_optimizer_fixes(saved: list[dict[str, Any]], fixes: list[OptimizerFix]) -> list[dict[str, Any]]:
    """``saved`` (a project's optimizer_fixes) with ``fixes`` added, each replacing one for the same variant."""
    found = {fix.variant for fix in fixes}
    kept = [f for f in saved if OptimizerFix.from_json(f).variant not in found]
    return kept + [fix.to_json() for fix in fixes]


def _relative_if_possible(path: Path, base: Path) -> str:
    try:
        return str(path.resolve().relative_to(base))
    except ValueError:
        return str(path)


# ---- migrations: format_version N -> N + 1 ----

def _migrate_1_to_2(data: dict[str, Any]) -> dict[str, Any]:
    """v1 kept one `opset` at the top level and called mappings `fixes`."""
    data = dict(data)
    options = dict(data.pop("export_options", {}))
    if "opset" in data:
        options.setdefault("opset", data.pop("opset"))
    data["export_options"] = options
    data["mappings"] = data.pop("fixes", data.get("mappings", []))
    return data


def _migrate_2_to_3(data: dict[str, Any]) -> dict[str, Any]:
    """v3 may name the exporter in export_options ("torchscript" or "dynamo"); v2 files were all
    TorchScript exports, which is also the default where the file names none."""
    return dict(data)


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _migrate_1_to_2, 2: _migrate_2_to_3}


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    version = data.get("format_version")
    if not isinstance(version, int):
        raise ProjectError("This file has no format_version: it is not a Fixport project.",
                           f"Open a {PROJECT_SUFFIX} file saved by Fixport.")
    if version > FORMAT_VERSION:
        raise ProjectError(f"This project was saved by a newer Fixport (format {version}; this one reads "
                           f"up to {FORMAT_VERSION}).", "Update Fixport to open it.")
    while version < FORMAT_VERSION:
        data = MIGRATIONS[version](data)
        version += 1
    data["format_version"] = version
    return data


def project_from_json(data: dict[str, Any]) -> Project:
    data = migrate(data)
    known = {f.name for f in fields(Project)}
    values = {k: v for k, v in data.items() if k in known}
    mapping_fields = {f.name for f in fields(FixMapping)}
    try:
        mappings = [{k: v for k, v in m.items() if k in mapping_fields} for m in values.get("mappings", [])]
        notes = []
        exporter = str(values.get("export_options", {}).get("exporter") or DEFAULT_EXPORTER)
        for saved in mappings:
            source, note = in_current_form(str(saved.get("source", "")), exporter)
            if note:
                saved["source"] = source
                notes.append(f"The fix for {saved.get('target_kind')} ({saved.get('template_id')}): {note}.")
        values["mappings"] = [FixMapping(**m) for m in mappings]
        values["load_notes"] = notes
        project = Project(**values)
        options = ExportOptions(**project.export_options)  # unknown options fail here, not at export time
        if options.dynamic_axes is not None:  # int axes in memory, whatever JSON made of them
            project.export_options["dynamic_axes"] = options.dynamic_axes
        shapes = project.shapes_to_check
        if not isinstance(shapes, list) or not all(isinstance(text, str) for text in shapes):
            raise TypeError("shapes_to_check must be a list of strings such as \"x=3x12\"")
    except TypeError as exc:
        raise ProjectError(f"The project file is damaged: {exc}", "Restore it from a backup or autosave.") from exc
    except ExportError as exc:
        raise ProjectError(f"The project's export options are not valid: {exc.message}", exc.hint) from exc
    return project


def load_project(path: str | Path) -> Project:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ProjectError(f"Project file not found: {path}", "Check the path.") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProjectError(f"Cannot read project {path.name}: {exc}",
                           f"It must be a {PROJECT_SUFFIX} file saved by Fixport.") from exc
    if not isinstance(data, dict):
        raise ProjectError(f"{path.name} is not a Fixport project.", f"Open a {PROJECT_SUFFIX} file.")
    project = project_from_json(data)
    # On disk the model path is relative to the project file; in memory it is absolute.
    project.model_path = str((path.resolve().parent / Path(project.model_path).expanduser()).resolve())
    return project


def save_project(project: Project, path: str | Path) -> None:
    """Atomically write ``project``; the model path is stored relative to it when possible."""
    atomic_write_text(path, json.dumps(project.to_json(path), indent=2) + "\n")


def autosave_path(path: str | Path) -> Path:
    return Path(str(path) + AUTOSAVE_SUFFIX)
