"""Does a plain ``torch.onnx.export`` of a model file fail, with either exporter? The benches' yardstick.

One export as a user would write it (no Fixport in the way), then one run in ONNX Runtime (CPU);
:class:`PlainExportProbe` runs it in a forked child, so an exporter that segfaults or hangs costs
the child, not the bench.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import io
import multiprocessing
import os
import re
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

DEFAULT_PROBE_TIMEOUT_S = 120.0
_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")  # the dynamo exporter colours its messages


def _torchscript_bytes(loaded: Any, opset: int, export_options: dict[str, Any]) -> bytes:
    """``torch.onnx.export(dynamo=False)`` with the file's options that it takes."""
    import torch

    arguments = {k: v for k, v in export_options.items() if k in ("input_names", "dynamic_axes", "autograd_inlining")}
    buffer = io.BytesIO()
    torch.onnx.export(loaded.module, loaded.example_inputs, buffer, opset_version=opset, dynamo=False, **arguments)
    return buffer.getvalue()


def _dynamo_bytes(loaded: Any, opset: int, export_options: dict[str, Any]) -> bytes:
    """``torch.onnx.export(dynamo=True)`` with the file's options that it takes."""
    import torch

    arguments = {k: v for k, v in export_options.items() if k in ("input_names", "dynamic_axes")}
    program = torch.onnx.export(loaded.module, loaded.example_inputs, dynamo=True, opset_version=opset,
                                verbose=False, **arguments)
    return program.model_proto.SerializeToString()


PLAIN_EXPORTS: dict[str, Callable[[Any, int, dict[str, Any]], bytes]] = {
    "torchscript": _torchscript_bytes, "dynamo": _dynamo_bytes}  # by vocabulary.EXPORTERS name


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence the exporters while they run: Python's warnings and prints, and what torch's C++ writes
    to the file descriptors themselves (the TorchScript exporter prints its graph on an error)."""
    saved = [os.dup(1), os.dup(2)]
    with open(os.devnull, "w") as devnull, warnings.catch_warnings(), \
            contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        os.dup2(devnull.fileno(), 1)
        os.dup2(devnull.fileno(), 2)
        try:
            yield
        finally:
            for fd, copy in zip((1, 2), saved):
                os.dup2(copy, fd)
                os.close(copy)


def plain_export_fails(model_path: Path, opset: int, exporter: str = "torchscript",
                       export_options: dict[str, Any] | None = None) -> str | None:
    """Why the plain export (or ONNX Runtime) fails, or None when it works."""
    import onnxruntime as ort

    from fixport.core.loaders.loading import load_model

    try:
        loaded = load_model(model_path)
    except Exception:
        return None  # the sample itself cannot be built: not an export failure
    if not loaded.example_inputs:
        return None
    try:
        with _quiet():
            onnx_bytes = PLAIN_EXPORTS[exporter](loaded, opset, export_options or {})
            session = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
            session.run(None, {i.name: t.numpy() for i, t in zip(session.get_inputs(), loaded.example_inputs)})
    except Exception as error:
        text = _ANSI_ESCAPE.sub("", str(error))
        return f"{type(error).__name__}: {text.splitlines()[0][:120] if text else ''}"
    return None


class PlainExportProbe:
    """``plain_export_fails`` in a forked child: an exporter that crashes (a segfault inside torch)
    takes the child down, not the bench; the model counts as failing and a fresh child takes over."""

    def __init__(self, timeout_s: float = DEFAULT_PROBE_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s
        self.pool: concurrent.futures.ProcessPoolExecutor | None = None

    def why_failing(self, model_path: Path, opset: int, exporter: str = "torchscript",
                    export_options: dict[str, Any] | None = None) -> str | None:
        if self.pool is None:
            self.pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
        try:
            future = self.pool.submit(plain_export_fails, model_path, opset, exporter, export_options)
            return future.result(timeout=self.timeout_s)
        except (concurrent.futures.process.BrokenProcessPool, concurrent.futures.TimeoutError) as error:
            self.stop()
            return f"the plain export crashed or hung: {type(error).__name__}"

    def stop(self) -> None:
        if self.pool is not None:
            for process in list(getattr(self.pool, "_processes", {}).values()):
                process.kill()  # a hung child; its pid is the pool's own
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None
