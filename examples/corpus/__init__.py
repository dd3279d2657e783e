"""The real-model corpus: architectures from transformers, timm, torchvision and kornia that fail the
TorchScript exporter, each a model file like the examples (``build()`` + ``FIXPORT_EXAMPLE``).

Weights are random, configs tiny, nothing is downloaded. Each file's ``FIXPORT_EXAMPLE`` also names
the ``library`` the architecture comes from, so a missing optional library skips its cases.
This module reads the files with :mod:`fixport.examples.catalog` (``ast``, no torch import).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from fixport.examples.catalog import ExampleInfo, list_examples

CORPUS_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class CorpusCase:
    """One corpus model: its example metadata and the library it needs."""

    info: ExampleInfo
    library: str

    @property
    def name(self) -> str:
        return self.info.name


def list_corpus() -> list[CorpusCase]:
    """Every corpus case, sorted by name."""
    return [CorpusCase(info, _library(info.path)) for info in list_examples(CORPUS_DIR)]


def _library(path: Path) -> str:
    """The ``library`` entry of a file's FIXPORT_EXAMPLE ("torch" when it names none)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "FIXPORT_EXAMPLE" for t in node.targets):
            return str(ast.literal_eval(node.value).get("library", "torch"))
    return "torch"
