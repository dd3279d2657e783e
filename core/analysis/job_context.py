"""One job's context, built once and passed down: the model loaded, the options resolved, the
exporter chosen, the fixes to apply (worker side: it loads the model and imports the exporter).

A job that exports the same model many times (`fix --auto`'s rounds and trials, a comparison and
its generation check) opens the model, resolves its options and picks its exporter once, here;
each export takes :meth:`JobContext.export_options`, a copy the export may add its fixes' custom
opsets to. The options are resolved again only when the job changes them
(:meth:`JobContext.with_overrides`: an opset raised, a capture setting chosen).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any

from fixport.core.exporters.base import Exporter
from fixport.core.exporters.choice import exporter_for, resolved_export_options
from fixport.core.loaders.loading import LoadedModel
from fixport.core.loaders.model_cache import open_model
from fixport.core.project.export_options import ExportOptions
from fixport.core.project.project import FixMapping
from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest


@dataclass(frozen=True)
class JobContext:
    """What every export of one job shares."""

    model: ModelRequest
    loaded: LoadedModel
    overrides: dict[str, Any]  # the caller's export options, as given (what a project or the flags set)
    options: ExportOptions  # resolved: the model file's settings, then ``overrides``, then the exporter's opset
    exporter: Exporter
    mappings: list[FixMapping] = field(default_factory=list)

    def export_options(self) -> ExportOptions:
        """The resolved options for one export, its own copy."""
        return copy.deepcopy(self.options)

    def with_fixes(self, mappings: list[FixMapping]) -> JobContext:
        """The same job with ``mappings`` as its fixes (nothing is loaded or resolved again)."""
        return replace(self, mappings=list(mappings))

    def with_overrides(self, overrides: dict[str, Any]) -> JobContext:
        """The same model with other export options: resolved again, and another exporter only
        where they name another one."""
        if overrides == self.overrides:
            return self
        options = resolved_export_options(self.loaded.settings, overrides)
        exporter = self.exporter if options.exporter == self.options.exporter else exporter_for(options.exporter)
        return replace(self, overrides=dict(overrides), options=options, exporter=exporter)

    def analyze_request(self, output: str | None = None, **checks: Any) -> AnalyzeRequest:
        """The analyze request this context answers (``checks``: AnalyzeRequest's other fields)."""
        return AnalyzeRequest(self.model, dict(self.overrides), list(self.mappings), output, **checks)


def open_job(model: ModelRequest, overrides: dict[str, Any] | None = None,
             mappings: list[FixMapping] | None = None) -> JobContext:
    """Load ``model`` (through the worker's model cache), resolve its options and pick the exporter."""
    loaded = open_model(model)
    options = resolved_export_options(loaded.settings, overrides)
    return JobContext(model, loaded, dict(overrides or {}), options, exporter_for(options.exporter),
                      list(mappings or []))
