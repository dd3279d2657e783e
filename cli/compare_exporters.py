"""`compare MODEL --exporters torchscript,dynamo`: both exports, each against torch and against the other."""
from __future__ import annotations

import argparse
import textwrap

from fixport.cli.arguments import EXIT_OK, EXIT_PROBLEMS, job_arguments, project_shapes, shape_sets
from fixport.cli.output import clear_progress, print_json, progress_printer
from fixport.cli.workers import command_worker
from fixport.core.foundation.errors import FixportError
from fixport.core.records.exporter_comparison import (
    FIXES_FROM_AUTO_FIX,
    ExporterComparison,
    ExporterRun,
    parse_exporters,
)
from fixport.core.records.requests import CompareExportersRequest
from fixport.core.words.vocabulary import DEFAULT_EXPORTER, EXPORTERS

MESSAGE_WIDTH = 100
MAX_NODES_PRINTED = 10
MAX_LINES_PER_LIST = 8  # problems and fixes per exporter


def run_compare_exporters(args: argparse.Namespace) -> int:
    """The `compare --exporters` branch of `compare` (exit 0: both match torch and each other)."""
    try:
        exporters = parse_exporters(args.exporters, EXPORTERS)
    except ValueError as exc:
        raise FixportError(str(exc), f"Write --exporters {','.join(EXPORTERS)}.") from exc
    for flag, value in (("--exporter", args.exporter), ("--onnx", args.onnx)):
        if value:
            raise FixportError(f"{flag} and --exporters cannot be used together: --exporters exports with each "
                               "exporter itself.", f"Leave out {flag}.")
    model, options, mappings = job_arguments(args)
    options.pop("exporter", None)  # a project's own exporter: its fixes are that exporter's
    mappings_by_exporter = {}
    if args.project and mappings:
        from fixport.core.project.project import load_project

        mappings_by_exporter[load_project(args.project).export_options.get("exporter") or DEFAULT_EXPORTER] = mappings
    with command_worker(args.timeout) as worker:
        result: ExporterComparison = worker.run(CompareExportersRequest(
            model, exporters, options, mappings_by_exporter, auto_fix=not args.no_auto_fix, provider=args.provider,
            runs=args.runs, rtol=args.rtol, atol=args.atol, precision=args.precision, torch_device=args.torch_device,
            other_shapes=shape_sets(args) or project_shapes(args), latency_runs=args.latency_runs,
            analyze_nodes=not args.no_node_analysis),
            progress=progress_printer(args.json))
    clear_progress(args.json)
    print_json(result.to_json()) if args.json else print_exporter_comparison(result)
    return EXIT_OK if result.agree else EXIT_PROBLEMS


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _wrapped(prefix: str, text: str) -> None:
    for index, line in enumerate(textwrap.wrap(text, MESSAGE_WIDTH - len(prefix))):
        print((prefix if index == 0 else " " * len(prefix)) + line)


def print_exporter_comparison(result: ExporterComparison) -> None:
    """The report: the verdict, each export's needs and cost, the outputs, then the nodes."""
    print(f"{result.model_path}: {' vs '.join(result.exporters)}")
    _wrapped("", result.verdict())
    for run in result.runs:
        _print_run(run)
    for message in result.messages:
        _wrapped("  note: ", message)
    if result.outputs:
        _print_outputs(result)
    if result.nodes or result.unaligned:
        _print_nodes(result)


def _print_run(run: ExporterRun) -> None:
    print(f"\n{run.exporter}: {run.status()}" + (f", opset {run.opset}" if run.opset is not None else ""))
    problems = run.problems or ["none"]
    _wrapped("  plain export's problems: ", "; ".join(problems[:MAX_LINES_PER_LIST])
             + (f"; and {len(problems) - MAX_LINES_PER_LIST} more" if len(problems) > MAX_LINES_PER_LIST else ""))
    _wrapped("  fixes: ", _fixes_text(run))
    if run.left_unfixed:
        _wrapped("  left unfixed: ", "; ".join(run.left_unfixed))
    if run.error:
        _wrapped("  not compared: ", f"{run.error} {run.hint}".strip())
    comparison = run.comparison
    if comparison is None:
        return
    if comparison.cost is not None:
        _wrapped("  export: ", comparison.cost.summary())
    for output in comparison.outputs:
        verdict = "pass" if output.passed else "FAIL"
        if not output.produced:
            _wrapped(f"  against torch, {output.name}: ", f"not produced at input set {output.run + 1} "
                                                          f"({output.problem}) -> {verdict}")
        elif not output.compared:
            _wrapped(f"  against torch, {output.name}: ", f"not measured ({output.problem}) -> {verdict}")
        else:
            print(f"  against torch, {output.name}: max abs {_number(output.max_abs)}, "
                  f"max rel {_number(output.max_rel)} -> {verdict}")
    first = run.first_divergent
    if first is not None:
        where = "".join([f" in {first.scope}" if first.scope else "", f" at {first.source}" if first.source else ""])
        _wrapped("  first diverges from torch: ", f"{first.onnx_node} ({first.onnx_kind}) from "
                                                  f"{first.source_kind}{where}, max abs {_number(first.max_abs)}")
    elif run.nodes_compared:
        print(f"  node by node: no node departs from torch ({run.nodes_compared} values compared)")


def _fixes_text(run: ExporterRun) -> str:
    if run.fixes:
        more = f"; and {len(run.fixes) - MAX_LINES_PER_LIST} more" if len(run.fixes) > MAX_LINES_PER_LIST else ""
        return f"{'; '.join(run.fixes[:MAX_LINES_PER_LIST])}{more} (from {run.fixes_from})"
    if run.fixes_from == FIXES_FROM_AUTO_FIX:
        return "none: fix --auto found none that works"
    return run.fixes_from or "none"


def _print_outputs(result: ExporterComparison) -> None:
    print(f"\nThe two exports against each other ({result.input_set}):")
    header = f"  {'output':<28} {'shape':<16} {'max abs':>9} {'max rel':>9}  result"
    print(header)
    for output in result.outputs:
        names = " / ".join(dict.fromkeys(output.names.values())) or f"#{output.index}"
        shape = "x".join(map(str, output.shape)) or "scalar"
        verdict = "same" if output.within_tolerance else ("DIFFER" + (f" ({output.note})" if output.note else ""))
        print(f"  {names:<28} {shape:<16} {_number(output.max_abs):>9} {_number(output.max_rel):>9}  {verdict}")


def _print_nodes(result: ExporterComparison) -> None:
    first, second = result.exporters
    differing = [node for node in result.nodes if node.differ]
    unaligned = ", ".join(f"{count} of {name}'s" for name, count in result.unaligned.items())
    print()
    _wrapped("", f"Node by node through the source: {len(result.nodes)} values aligned by scope, line and op "
                 f"({unaligned} without a counterpart), {len(differing)} differ.")
    first_difference = result.first_difference
    if first_difference is None:
        return
    node = first_difference
    _wrapped("  first difference: ", f"{node.place}: {first} {node.onnx_nodes[first]} ({node.onnx_kinds[first]}) vs "
                                     f"{second} {node.onnx_nodes[second]} ({node.onnx_kinds[second]}), max abs "
                                     f"{_number(node.max_abs)}; against torch {first} {_number(node.vs_torch[first])}, "
                                     f"{second} {_number(node.vs_torch[second])}")
    print(f"  {'place':<48} {first + ' vs torch':>18} {second + ' vs torch':>18} {'between':>9}")
    for node in differing[:MAX_NODES_PRINTED]:
        print(f"  {node.place[:48]:<48} {_number(node.vs_torch[first]):>18} {_number(node.vs_torch[second]):>18} "
              f"{_number(node.max_abs):>9}")
