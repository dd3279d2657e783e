"""The stamp every generated table carries: when, which commit, on what machine, under what load."""
from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]  # the repository (the package fixport)
VERSIONED = ("torch", "onnx", "onnxruntime", "onnxruntime-gpu", "onnxscript", "transformers")


def _command_output(*command: str) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=30, cwd=REPO).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _versions() -> dict[str, str]:
    found = {}
    for name in VERSIONED:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def machine_stamp() -> dict[str, Any]:
    """Date, commit, host, CPUs, load average, GPU (from nvidia-smi, when there is one) and versions."""
    gpu = _command_output("nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader")
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _command_output("git", "rev-parse", "--short", "HEAD") or "unknown",
        "dirty": bool(_command_output("git", "status", "--porcelain", "--untracked-files=no")),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "load_average": [round(value, 2) for value in os.getloadavg()],
        "gpu": gpu.splitlines()[0] if gpu else "none",
        "versions": _versions(),
    }


def stamp_markdown(stamp: dict[str, Any]) -> str:
    """One italic line saying where the numbers below come from."""
    versions = ", ".join(f"{name} {version}" for name, version in stamp["versions"].items())
    dirty = " (with uncommitted changes)" if stamp["dirty"] else ""
    return (f"_Generated {stamp['date']} at commit {stamp['commit']}{dirty} on {stamp['machine']}; "
            f"GPU: {stamp['gpu']}; load average {stamp['load_average']}; {versions}._")
