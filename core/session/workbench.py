"""The workbench's state without Qt: the open project, the last analysis and comparison,
and autosave. The GUI is a view over this; tests drive it headless too."""
from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fixport.core.project.project import (
    PROJECT_SUFFIX,
    FixMapping,
    Project,
    autosave_path,
    load_project,
    save_project,
)
from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import AnalysisResult, ModelRequest

AUTOSAVE_DIR = Path(os.environ.get("FIXPORT_DATA_DIR", Path.home() / ".local" / "share" / "fixport")) / "autosave"


@dataclass
class Workbench:
    """What is open and what is known about it."""

    project: Project | None = None
    project_path: Path | None = None
    analysis: AnalysisResult | None = None
    comparison: Any = None
    dirty: bool = False
    _batching: bool = False  # inside batched_edits(): the autosave waits for its end
    _unsaved_edits: int = 0

    # ---- opening ----
    def open_model(self, path: str | Path) -> None:
        self.project = Project(model_path=str(Path(path).resolve()))
        self.project_path = None
        self._reset_results()

    def open_project(self, path: str | Path) -> None:
        self.project = load_project(path)
        self.project_path = Path(path).resolve()
        self._reset_results()

    def restore_autosave(self) -> bool:
        """Replace the project with its newer autosave, if there is one."""
        candidate = self.autosave_file()
        if candidate is None or not self.has_newer_autosave():
            return False
        self.project = load_project(candidate)
        self.dirty = True
        return True

    def _reset_results(self) -> None:
        self.analysis = None
        self.comparison = None
        self.dirty = False

    # ---- what jobs need ----
    def model_request(self) -> ModelRequest:
        assert self.project is not None
        return ModelRequest(path=self.project.model_path, inputs=self.project.input_options(),
                            trust=self.project.trust, search_paths=list(self.project.search_paths),
                            task=self.project.task, component=self.project.component,
                            dtype=self.project.dtype)

    def analyze_request(self, output: str | None = None) -> AnalyzeRequest:
        assert self.project is not None
        return AnalyzeRequest(self.model_request(), dict(self.project.export_options), list(self.project.mappings),
                              output, other_shapes=self.project.other_shapes())

    @property
    def opset(self) -> int | None:
        if self.project and "opset" in self.project.export_options:
            return int(self.project.export_options["opset"])
        return self.analysis.options.opset if self.analysis else None

    @property
    def exporter_name(self) -> str | None:
        """The exporter the project exports with: the project's choice, else the model file's
        (as the last analysis resolved it), else None for the default one."""
        if self.project and self.project.export_options.get("exporter"):
            return str(self.project.export_options["exporter"])
        return self.analysis.options.exporter if self.analysis else None

    # ---- edits (each autosaves) ----
    def set_export_option(self, name: str, value: Any) -> None:
        assert self.project is not None
        self.project.export_options[name] = value
        self._edited()

    def set_project_field(self, name: str, value: Any) -> None:
        """Change how the model opens (inputs, trust, search paths) or is checked (shapes to check)."""
        assert self.project is not None
        setattr(self.project, name, value)
        self._edited()

    def apply_mapping(self, mapping: FixMapping) -> None:
        assert self.project is not None
        self.project.set_mapping(mapping)
        self._edited()

    def remove_mapping(self, target_kind: str, python_op_name: str | None, instance: str | None) -> None:
        assert self.project is not None
        self.project.remove_mapping(target_kind, python_op_name, instance)
        self._edited()

    @contextmanager
    def batched_edits(self) -> Iterator[None]:
        """Edits inside are autosaved once, at the end (Fix all's mappings and options: one write)."""
        if self._batching:  # nested: the outer batch writes
            yield
            return
        self._batching, self._unsaved_edits = True, 0
        try:
            yield
        finally:
            self._batching = False
            if self._unsaved_edits:
                self.autosave()

    def _edited(self) -> None:
        self.dirty = True
        if self._batching:
            self._unsaved_edits += 1
        else:
            self.autosave()

    # ---- saving ----
    def save(self, path: str | Path | None = None) -> Path:
        assert self.project is not None
        target = Path(path) if path else self.project_path
        if target is None:
            raise ValueError("no project path")
        if not str(target).endswith(PROJECT_SUFFIX):
            target = target.with_name(target.name.removesuffix(".json") + PROJECT_SUFFIX)
        save_project(self.project, target)
        self.project_path = target.resolve()
        self.dirty = False
        stale = self.autosave_file()
        if stale is not None:
            stale.unlink(missing_ok=True)
        return self.project_path

    def autosave_file(self) -> Path | None:
        """Beside the project file, or in the data folder for a model opened without one."""
        if self.project is None:
            return None
        if self.project_path is not None:
            return autosave_path(self.project_path)
        digest = hashlib.sha1(self.project.model_path.encode()).hexdigest()[:12]
        return AUTOSAVE_DIR / f"{Path(self.project.model_path).stem}-{digest}{PROJECT_SUFFIX}"

    def autosave(self) -> None:
        target = self.autosave_file()
        if target is not None and self.project is not None:
            save_project(self.project, target)

    def has_newer_autosave(self) -> bool:
        candidate = self.autosave_file()
        if candidate is None or not candidate.exists():
            return False
        if self.project_path is None or not self.project_path.exists():
            return True
        return candidate.stat().st_mtime > self.project_path.stat().st_mtime

    def discard_autosave(self) -> None:
        candidate = self.autosave_file()
        if candidate is not None:
            candidate.unlink(missing_ok=True)
