"""The dynamo exporter's template library: the same template files and ranking as the
TorchScript one (:class:`fixport.symbolics.library.TemplateLibrary`), from its own folder and the
fixes of the namespace folders written for both exporters (ONNX functions under ``@fix``).

Torch-free, like the TorchScript library: the window ranks offers without the worker.
"""
from __future__ import annotations

import os
from pathlib import Path

from fixport.symbolics.library import NAMESPACE_DIRS, TORCHLIB_MIN_OPSET, RankedTemplate, TemplateLibrary

DYNAMO_TEMPLATES_DIR = Path(__file__).parent / "templates"
DYNAMO_USER_DIR = Path(os.path.expanduser("~/.config/fixport/dynamo_templates"))


class DynamoTemplateLibrary(TemplateLibrary):
    """Ranks at the opset the dynamo exporter translates at: torch_lib's 18 at least, since a lower
    opset is reached by converting the translated model afterwards."""

    exporter = "dynamo"

    def templates_for(self, kind: str, opset: int, python_op_name: str | None = None) -> list[RankedTemplate]:
        return super().templates_for(kind, max(opset, TORCHLIB_MIN_OPSET), python_op_name)


def dynamo_library(user_dir: str | os.PathLike[str] | None = None) -> TemplateLibrary:
    """Built-in dynamo templates plus the user's own (which override built-ins by id)."""
    return DynamoTemplateLibrary(user_dir=user_dir if user_dir is not None else DYNAMO_USER_DIR,
                                 builtin_dirs=[DYNAMO_TEMPLATES_DIR, *NAMESPACE_DIRS])
