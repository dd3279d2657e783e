"""A fix template's source compiled to its ``symbolic``: shared by every exporter's fix route."""
from __future__ import annotations

import linecache
import sys
import traceback
import types
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_helper

from fixport.core.project.template_form import PARAMS_NAME, injected_names_used


class TemplateError(Exception):
    """A template problem, with the 1-based source line when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.message, self.line = message, line


# What templates written before they imported their own names found in their globals.
_FORMERLY_INJECTED = {"torch": torch, "parse_args": symbolic_helper.parse_args,
                      "symbolic_helper": symbolic_helper, "_type_utils": _type_utils}


_COMPILED: OrderedDict[tuple[str, str, str], Callable] = OrderedDict()
_COMPILED_ENTRIES = 64  # templates of one project, with a few edits of each


def compile_template_source(source: str, params: dict[str, Any], filename: str) -> Callable:
    """The ``symbolic`` of a template with ``params``, compiled once per source, params and name.

    Each re-export after Apply validates and registers every fix of the project: compiling them
    again each time was a tenth of a small model's re-export.
    """
    key = (source, repr(sorted(params.items(), key=lambda item: str(item[0]))), filename)
    compiled = _COMPILED.get(key)
    if compiled is None:
        compiled = _compile_fresh(source, params, filename)
        _COMPILED[key] = compiled
        while len(_COMPILED) > _COMPILED_ENTRIES:
            _COMPILED.popitem(last=False)
    _COMPILED.move_to_end(key)
    return compiled


def _compile_fresh(source: str, params: dict[str, Any], filename: str) -> Callable:
    """Run a template as a fresh module, give it the chosen ``params`` and return its ``symbolic``.

    The module's own ``params`` (the defaults) is replaced after it runs, so ``symbolic`` reads
    the chosen values; a default the choice lacks is kept. Templates in the old form, which
    used ``torch``, ``parse_args``, ... without importing them, get just those names.
    """
    try:
        code = compile(source, filename, "exec")
    except SyntaxError as error:
        raise TemplateError(f"syntax error: {error.msg}", error.lineno) from error
    # Register the source so tracebacks from exported symbolics show the user's lines.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(f"fixport_template_{abs(hash((filename, source)))}")
    namespace: dict[str, Any] = module.__dict__
    namespace["__file__"] = filename
    old_form_names = injected_names_used(source)
    namespace.update({name: _FORMERLY_INJECTED[name] for name in old_form_names if name in _FORMERLY_INJECTED})
    if PARAMS_NAME in old_form_names:
        namespace[PARAMS_NAME] = dict(params)
    # onnxscript.script looks the defining module up in sys.modules while the source runs.
    sys.modules[module.__name__] = module
    try:
        exec(code, namespace)  # noqa: S102 - templates are the user's own code
    except Exception as error:
        raise TemplateError(f"{type(error).__name__}: {error}", _line_in(error, filename)) from error
    finally:
        sys.modules.pop(module.__name__, None)
    defaults = namespace.get(PARAMS_NAME)
    namespace[PARAMS_NAME] = {**(defaults if isinstance(defaults, dict) else {}), **params}
    symbolic = namespace.get("symbolic")
    if not callable(symbolic):
        raise TemplateError("the template defines no function named 'symbolic'", 1)
    return symbolic


def _line_in(error: BaseException, filename: str) -> int | None:
    lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__)
             if frame.filename == filename]
    return lines[-1] if lines else None
