"""`compare`: torch vs ONNX Runtime outputs, and the node where they start to diverge."""
from __future__ import annotations

import argparse
import textwrap

from fixport.cli.arguments import (
    EXIT_OK,
    EXIT_PROBLEMS,
    add_model_arguments,
    add_shapes_argument,
    command,
    job_arguments,
    project_shapes,
    shape_sets,
)
from fixport.cli.error_log import report_internal_errors
from fixport.cli.output import clear_progress, print_export_dtype, print_json, progress_printer
from fixport.cli.runtime_arguments import add_runtime_argument, add_runtimes_argument, runtime_provider
from fixport.cli.workers import command_worker
from fixport.core.foundation.errors import FixportError
from fixport.core.onnx_io.cuda_precision import DEFAULT_PRECISION, PRECISION_HELP, PRECISION_MODES
from fixport.core.project.project import load_project, save_project
from fixport.core.records.compare_result import DEFAULT_RUNS, MAX_RUNS, CompareResult
from fixport.core.records.requests import CompareRequest
from fixport.core.records.runtime_cost import DEFAULT_LATENCY_RUNS, MAX_LATENCY_RUNS, readable_bytes
from fixport.core.statistics.output_stats import NOT_MEASURED, OutputStats
from fixport.core.words.optimizer_guard import OPTIMIZE_HELP, OptimizerReport

MESSAGE_WIDTH = 100
MAX_NODES_PRINTED = 10


def _configure_compare(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    add_shapes_argument(parser)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--project", help="export with this project's fixes (a .fixport.json file)")
    source.add_argument("--onnx", metavar="FILE", help="compare against this ONNX file instead of exporting")
    parser.add_argument("--provider", choices=("cpu", "cuda"), default="cpu",
                        help="ONNX Runtime provider; cuda falls back to cpu (with a message) when absent")
    add_runtime_argument(parser)
    add_runtimes_argument(parser)
    parser.add_argument("--precision", choices=PRECISION_MODES, default=DEFAULT_PRECISION,
                        help="; ".join(f"{mode}: {text}" for mode, text in PRECISION_HELP.items()))
    parser.add_argument("--torch-device", choices=("cpu", "cuda"), default="cpu",
                        help="where the torch reference runs (cuda: TF32 off; falls back to cpu with a message)")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, metavar="K",
                        help=f"input sets: the example inputs, then K-1 random ones like them (1-{MAX_RUNS}; "
                             f"default {DEFAULT_RUNS}); a set ONNX Runtime cannot run fails")
    parser.add_argument("--rtol", type=float, help="relative tolerance for every dtype (default: per-dtype table)")
    parser.add_argument("--atol", type=float, help="absolute tolerance for every dtype (default: per-dtype table)")
    parser.add_argument("--no-node-analysis", action="store_true",
                        help="compare outputs only: skip the node-by-node search for the first divergent node")
    parser.add_argument("--latency-runs", type=int, default=DEFAULT_LATENCY_RUNS, metavar="N",
                        help=f"time the export in ONNX Runtime: the median of N runs on the example inputs "
                             f"(0-{MAX_LATENCY_RUNS}; 0: not timed)")
    parser.add_argument("--optimize", metavar="NAME,NAME", default="", help=OPTIMIZE_HELP)
    parser.add_argument("--exporters", metavar="NAME,NAME",
                        help="compare the exports of both exporters (torchscript,dynamo): each against torch and "
                             "against the other, node by node through the source lines, with what each needed, "
                             "its size and latency")
    parser.add_argument("--no-auto-fix", action="store_true",
                        help="with --exporters: compare each export with the project's fixes only (by default, an "
                             "exporter without fixes whose plain export fails gets those fix --auto finds, unsaved)")


@command("compare", "Run MODEL in torch and its ONNX export in ONNX Runtime on the same inputs and compare "
                    "every output (exit 0 all pass, 1 any fails, 2 could not compare).", _configure_compare)
def run_compare(args: argparse.Namespace) -> int:
    if args.exporters:
        from fixport.cli.compare_exporters import run_compare_exporters

        if args.optimize:
            raise FixportError("--optimize and --exporters cannot be used together: the guard checks one export.",
                               "Compare one exporter's export with --optimize (--exporter torchscript or dynamo).")
        return run_compare_exporters(args)
    if args.runtimes:
        from fixport.cli.compare_runtimes import run_compare_runtimes

        return run_compare_runtimes(args, print_comparison)
    request, options, mappings = job_arguments(args)
    with command_worker(args.timeout) as worker:
        result: CompareResult = worker.run(CompareRequest(
            request, options, mappings, onnx_path=args.onnx, provider=runtime_provider(args, args.provider),
            runs=args.runs, rtol=args.rtol, atol=args.atol, analyze_nodes=not args.no_node_analysis,
            precision=args.precision, torch_device=args.torch_device,
            other_shapes=shape_sets(args) or project_shapes(args),
            from_project=bool(args.project), latency_runs=args.latency_runs, optimize=args.optimize),
            progress=progress_printer(args.json))
    clear_progress(args.json)
    print_json(result.to_json()) if args.json else print_comparison(result)
    if result.optimizers is not None:
        if not args.json:
            print_optimizer_table(result.optimizers)
        save_optimizer_fixes(args.project, result.optimizers, args.json)
    report_internal_errors(result.internal_errors)
    deployed = result.optimizers is None or result.optimizers.passed
    return EXIT_OK if result.passed and deployed else EXIT_PROBLEMS


def _number(value: float) -> str:
    return f"{value:.3g}"


def print_comparison(result: CompareResult) -> None:
    """A readable report: one row per output, then the first divergent node."""
    print(f"{result.model_path}: {result.onnx_source}, {result.runs} input set(s), "
          f"provider {result.provider_requested} -> {', '.join(result.providers_used)}")
    placement = [result.placement.summary(result.provider_requested)] if result.placement else []
    cost = [f"Export: {result.cost.summary()}."] if result.cost else []
    for message in [result.precision_summary(), *cost, *placement, *result.messages]:
        for index, line in enumerate(textwrap.wrap(message, MESSAGE_WIDTH)):
            print(("  note: " if index == 0 else "        ") + line)
    header = f"{'output':<16} {'shape':<18} {'dtype':<8} {'max abs':>9} {'mean abs':>9} {'max rel':>9} " \
             f"{'rmse':>9} {'cosine':>9} {'mismatch':>9}  result"
    print("\n" + header)
    print("-" * len(header))
    for output in result.outputs:
        print(_output_row(output))
    if result.baked_inputs:
        print("\nFAIL: the export does not follow every input's values:")
        for message in result.baked_inputs:
            for index, line in enumerate(textwrap.wrap(message, MESSAGE_WIDTH)):
                print(("  - " if index == 0 else "    ") + line)
    elif result.passed:
        print("\nPASS: every output is within tolerance.")
    elif result.generation is not None and all(output.passed for output in result.outputs):
        print("\nFAIL: every output is within tolerance, but the exported components do not generate torch's "
              "tokens (below).")
    else:
        print("\nFAIL: see the outputs above.")
    if result.export_dtype is not None:
        print()
        print_export_dtype(result.export_dtype)
    if result.generation is not None:
        print()
        for line in result.generation.lines(tokens=True):
            print(line)
    analysis = result.node_analysis
    if analysis is None:
        return
    first = analysis.first_divergent
    if first is None:
        print(f"Node by node (input set {analysis.run + 1}): no node introduces an error beyond tolerance "
              f"({len(analysis.nodes)} nodes compared).")
        return
    print(f"\nFirst divergent node (input set {analysis.run + 1}): {first.onnx_node} ({first.onnx_kind})")
    print(f"  from {first.source_kind}" + (f" in {first.scope}" if first.scope else "")
          + (f" at {first.source}" if first.source else "")
          + (f", template {first.template}" if first.template else ""))
    introduced = ("" if first.introduced_max_abs is None
                  else f", alone on torch's inputs {_number(first.introduced_max_abs)}")
    print(f"  max abs {_number(first.max_abs)}{introduced}")
    worst = sorted((n for n in analysis.nodes if n.exceeds), key=lambda n: -n.max_abs)[:MAX_NODES_PRINTED]
    if worst:
        print(f"\nLargest node errors ({len(worst)} of {sum(n.exceeds for n in analysis.nodes)} out of tolerance):")
        for node in worst:
            alone = "-" if node.introduced_max_abs is None else _number(node.introduced_max_abs)
            print(f"  {node.onnx_node:<40} {node.source_kind:<28} max abs {_number(node.max_abs):>9}  "
                  f"alone {alone}")


def _output_row(output: OutputStats) -> str:
    verdict = ("pass (up to tied order)" if output.tied_order else "pass") if output.passed else "FAIL"
    if not output.produced:
        verdict += f" (not produced at input set {output.run + 1}: {output.problem})"
    elif output.problem:
        verdict += f" ({output.problem})"
    shape = "x".join(map(str, output.shape)) or "scalar"
    if not output.compared:  # nothing was measured: no NaN statistics, no mismatch share
        numbers = " ".join(f"{NOT_MEASURED:>9}" for _ in range(5)) + f" {NOT_MEASURED:>8}"
    else:
        numbers = (f"{_number(output.max_abs):>9} {_number(output.mean_abs):>9} {_number(output.max_rel):>9} "
                   f"{_number(output.rmse):>9} {_number(output.cosine):>9} {output.mismatch_fraction:>8.2%}")
    return f"{output.name:<16} {shape:<18} {output.dtype:<8} {numbers}  {verdict}"


def print_optimizer_table(report: OptimizerReport) -> None:
    """The export as deployed: one row per variant, its cost where it passes, the passes to turn off."""
    print(f"\n{'variant':<14} {'result':<16} {'max abs':>9} {'size':>9} {'nodes':>6} {'latency':>10}  turn off")
    for o in report.outcomes:
        size = readable_bytes(o.file_bytes) if o.file_bytes is not None else "-"
        latency = f"{o.latency_ms:.3g} ms" if o.latency_ms is not None else "-"
        max_abs = _number(o.max_abs) if o.max_abs is not None and o.max_abs >= 0 else "-"
        nodes = "-" if o.node_count is None else str(o.node_count)
        print(f"{o.variant:<14} {o.status:<16} {max_abs:>9} {size:>9} {nodes:>6} {latency:>10}  "
              f"{', '.join(o.culprits) or '-'}")
    for o in report.outcomes:
        if o.passed:
            continue
        where = f" First divergent node: {o.first_divergent_node} ({o.first_divergent_kind})." \
            if o.first_divergent_node else ""
        fix = f" Fix: {o.fix.summary()} (verified against torch)." if o.fix else ""
        for index, line in enumerate(textwrap.wrap(f"{o.message}{where}{fix}", MESSAGE_WIDTH)):
            print(("  - " if index == 0 else "    ") + line)


def save_optimizer_fixes(project_path: str | None, report: OptimizerReport, quiet: bool) -> None:
    """With --project, the settings that avoid each failing pass go into the project (and its fix script)."""
    if not project_path or not report.fixes:
        return
    project = load_project(project_path)
    project.set_optimizer_fixes(report.fixes)
    save_project(project, project_path)
    if not quiet:
        print(f"Saved {len(report.fixes)} optimizer fix(es) in {project_path}.")
