"""`--runtime`: which runtime `check`, `compare` and `sweep` run the export in (ONNX Runtime, or
OpenVINO, an optional extra). Without OpenVINO installed the option says what to install (exit 2)
before any worker starts."""
from __future__ import annotations

import argparse

from fixport.core.words.runtimes import (
    DEFAULT_RUNTIME,
    OPENVINO_PRECISION_HELP,
    RUNTIMES,
    provider_for,
    refuse_missing_runtime,
)


def add_runtime_argument(parser: argparse.ArgumentParser) -> None:
    """``--runtime ort|openvino``."""
    parser.add_argument("--runtime", choices=RUNTIMES, default=DEFAULT_RUNTIME,
                        help="where the export runs: ort (ONNX Runtime, default) or openvino (OpenVINO's CPU plugin; "
                             f"an optional extra); {OPENVINO_PRECISION_HELP}")


def add_runtimes_argument(parser: argparse.ArgumentParser) -> None:
    """``--runtimes ort,openvino`` (compare)."""
    parser.add_argument("--runtimes", metavar="NAME,NAME",
                        help="compare the export with torch in both runtimes (ort,openvino), and the two runtimes "
                             "with each other node by node: the first node where they differ, and its source line")


def runtime_provider(args: argparse.Namespace, provider: str = "cpu") -> str:
    """The provider value of the job: ``provider`` in ONNX Runtime, "openvino" in OpenVINO; a
    FixportError saying what to install when OpenVINO is asked for and missing."""
    chosen = provider_for(args.runtime, provider)
    refuse_missing_runtime(chosen)
    return chosen


def checked_runtime(args: argparse.Namespace) -> str:
    """The runtime a command that may take ``--runtime`` checks the outputs in (ort where it has none);
    a FixportError saying what to install when OpenVINO is asked for and missing."""
    runtime = getattr(args, "runtime", DEFAULT_RUNTIME)  # `export` shares the analysis and has no --runtime
    refuse_missing_runtime(provider_for(runtime, "cpu"))
    return runtime
