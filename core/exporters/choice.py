"""The exporter object for a set of export options (worker side: it imports the exporter's module)."""
from __future__ import annotations

import importlib

from fixport.core.exporters.base import Exporter
from fixport.core.exporters.profiles import profile_for


def exporter_for(name: str | None) -> Exporter:
    """A fresh exporter object for exporter ``name`` (the default one for None); its module is
    imported only when asked for (the dynamo exporter's onnxscript is slow to load)."""
    module_name, class_name = profile_for(name).implementation.split(":")
    return getattr(importlib.import_module(module_name), class_name)()
