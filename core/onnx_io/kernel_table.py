"""ONNX Runtime's CPU kernel table, read in a child process and kept on disk per ONNX Runtime build.

``get_all_opkernel_def()`` asks every execution provider the build was made with for its kernels.
onnxruntime-gpu is built with TensorRT: where TensorRT's (or CUDA's) libraries are missing, as on
most machines, loading that provider fails and the call then crashes the process with SIGSEGV
instead of raising. A child process reads the table, so such a build costs the kernel check (ONNX
Runtime still names the node it refuses when the session is made), never the export worker.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

from fixport.core.project.atomic_files import atomic_write_text

CPU_PROVIDER = "CPUExecutionProvider"
READ_TIMEOUT_S = 120
CACHE_DIR = Path(os.environ.get("FIXPORT_CACHE_DIR", Path.home() / ".cache" / "fixport"))
# (op type, domain, [first version, last version], {constraint: [ONNX Runtime type strings]})
KernelRow = tuple[str, str, list[int], dict[str, list[str]]]

READ_CPU_KERNELS = f"""
import json, sys
from onnxruntime.capi import onnxruntime_pybind11_state as state
json.dump([[d.op_name, d.domain, list(d.version_range), {{k: list(v) for k, v in d.type_constraints.items()}}]
           for d in state.get_all_opkernel_def() if d.provider == {CPU_PROVIDER!r}], sys.stdout)
"""


def runtime_build() -> str:
    """Which ONNX Runtime is installed: distribution and version, e.g. 'onnxruntime-gpu-1.31.1'."""
    for distribution in ("onnxruntime", "onnxruntime-gpu"):
        try:
            return f"{distribution}-{importlib.metadata.version(distribution)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    import onnxruntime

    return f"onnxruntime-{onnxruntime.__version__}"


def cpu_kernel_rows(cache_dir: Path | None = None, reader: str = READ_CPU_KERNELS) -> list[KernelRow]:
    """The CPU provider's kernels, from the cache or a child process; [] where the build cannot tell
    (the child crashed or timed out: remembered, so the crash is not repeated for every export)."""
    cached = (cache_dir or CACHE_DIR) / f"cpu-kernels-{runtime_build()}.json"
    try:
        return [tuple(row) for row in json.loads(cached.read_text(encoding="utf-8"))["rows"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    rows = _read_in_child(reader)
    try:
        atomic_write_text(cached, json.dumps({"build": runtime_build(), "rows": rows}))
    except OSError:
        pass  # a read-only home: read again next time
    return rows


def _read_in_child(reader: str) -> list[KernelRow]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    try:
        done = subprocess.run([sys.executable, "-c", reader], capture_output=True, text=True, timeout=READ_TIMEOUT_S,
                              env=env)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode != 0:
        return []
    try:
        return [tuple(row) for row in json.loads(done.stdout)]
    except ValueError:
        return []
