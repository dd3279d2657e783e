"""One registry of a project's fixes that both exporters' fix routes ask (onnxscript's
registration module keeps one registry too): which fixes apply to an op, of which kind, and each
one's ``symbolic`` compiled once for the export.

It reads each fix's metadata from the fix itself (``FixMapping.meta``), never from its source, and
imports torch only when it compiles.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fixport.core.project.project import FixMapping
from fixport.core.words.errors import TemplateValidationError


class FixRegistry:
    """A project's fixes for one export, by the op they target, each compiled at most once."""

    def __init__(self, mappings: list[FixMapping]) -> None:
        self.mappings = list(mappings)
        self._compiled: dict[int, Callable[..., Any]] = {}
        self.compiles = 0  # fixes compiled through this registry (each at most once)

    def for_op(self, kind: str) -> list[FixMapping]:
        """The fixes registered for the op ``kind`` (kind-wide and per node)."""
        return [m for m in self.mappings if m.target_kind == kind]

    def of_family(self, *families: str) -> list[FixMapping]:
        """The fixes whose template declares one of ``families``."""
        return [m for m in self.mappings if m.family in families]

    def not_of_family(self, *families: str) -> list[FixMapping]:
        return [m for m in self.mappings if m.family not in families]

    def compiled(self, mapping: FixMapping) -> Callable[..., Any]:
        """The fix's ``symbolic`` with its params set; errors name the template's line."""
        key = id(mapping)
        if key not in self._compiled:
            from fixport.core.exporters.template_compiler import TemplateError, compile_template_source

            try:
                self._compiled[key] = compile_template_source(mapping.source, dict(mapping.params),
                                                              f"<template {mapping.template_id}>")
            except TemplateError as error:
                where = f" at line {error.line}" if error.line else ""
                raise TemplateValidationError(
                    f"The fix for {mapping.label} ({mapping.template_id}){where}: {error.message}",
                    "Edit the template source or pick another template.", line=error.line,
                    target=mapping.label) from error
            self.compiles += 1
        return self._compiled[key]
