"""`compare --runtimes ort,openvino`: the export against torch in both runtimes, and where the two
runtimes first differ from each other."""
from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable

from fixport.cli.arguments import EXIT_OK, EXIT_PROBLEMS, job_arguments
from fixport.cli.output import clear_progress, print_json, progress_printer
from fixport.cli.workers import command_worker
from fixport.core.foundation.errors import FixportError
from fixport.core.records.compare_result import CompareResult
from fixport.core.records.runtime_pair import RuntimesCompareRequest, RuntimesComparison
from fixport.core.words.runtimes import RUNTIME_TITLES, RUNTIMES

MESSAGE_WIDTH = 100


def runtimes_of(text: str) -> list[str]:
    """``ort,openvino`` as a list; a FixportError naming the runtimes for anything else."""
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    if len(set(names)) != 2 or any(name not in RUNTIMES for name in names):
        raise FixportError(f"--runtimes {text}: give two different runtimes of {', '.join(RUNTIMES)}.",
                           "E.g. --runtimes ort,openvino.")
    return names


def run_compare_runtimes(args: argparse.Namespace, print_comparison: Callable[[CompareResult], None]) -> int:
    """Both runtimes against torch (each printed by ``print_comparison``, compare's own report), then
    against each other (exit 0 both pass, 1 either fails)."""
    if args.onnx:
        raise FixportError("--runtimes compares a fresh export node by node; it does not take --onnx.",
                           "Leave out --onnx (the export is made from MODEL), or compare the file with --runtime.")
    runtimes = runtimes_of(args.runtimes)
    request, options, mappings = job_arguments(args)
    with command_worker(args.timeout) as worker:
        result: RuntimesComparison = worker.run(RuntimesCompareRequest(
            request, runtimes, options, mappings, provider=args.provider, runs=args.runs, rtol=args.rtol,
            atol=args.atol, precision=args.precision, analyze_nodes=not args.no_node_analysis,
            from_project=bool(args.project)), progress=progress_printer(args.json))
    clear_progress(args.json)
    if args.json:
        print_json(result.to_json())
        return EXIT_OK if result.passed else EXIT_PROBLEMS
    for name, compared, error in zip(result.runtimes, result.results, result.errors):
        print(f"=== {RUNTIME_TITLES[name]} against torch ===")
        if compared is not None:
            print_comparison(compared)
        else:
            print(f"ERROR: {error}")
        print()
    print(f"=== {' against '.join(RUNTIME_TITLES[name] for name in result.runtimes)} ===")
    for message in [result.between_line(), *result.messages]:
        print("\n".join(textwrap.wrap(message, MESSAGE_WIDTH)))
    return EXIT_OK if result.passed else EXIT_PROBLEMS
