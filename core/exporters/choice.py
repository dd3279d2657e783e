"""The exporter object for a set of export options (worker side: it imports the exporter's module)."""
from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from fixport.core.exporters.base import Exporter, ProcessState
from fixport.core.exporters.profiles import PROFILES, profile_for
from fixport.core.project.export_options import ExportOptions, resolve_export_options


def exporter_for(name: str | None) -> Exporter:
    """A fresh exporter object for exporter ``name`` (the default one for None); its module is
    imported only when asked for (the dynamo exporter's onnxscript is slow to load)."""
    module_name, class_name = profile_for(name).implementation.split(":")
    return getattr(importlib.import_module(module_name), class_name)()


def resolved_export_options(settings: Mapping[str, Any], overrides: dict[str, Any] | None) -> ExportOptions:
    """The model file's own settings, then the caller's; where neither asks an opset, the chosen
    exporter's own default (torch's for dynamo=True), so a model clean there is called clean."""
    return resolve_export_options(dict(settings), overrides,
                                  default_opset=lambda name: exporter_for(name).default_opset)


def process_states() -> list[ProcessState]:
    """The process-global state of every exporter that keeps one (imports only those exporters:
    the dynamo exporter's onnxscript is slow to load)."""
    states = (exporter_for(name).process_state() for name, profile in PROFILES.items() if profile.keeps_process_state)
    return [state for state in states if state is not None]
