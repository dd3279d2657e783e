"""`check` and `export`: diagnose a model, or export it to a checked ONNX file."""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import textwrap
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from fixport.cli.arguments import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_PROBLEMS,
    add_model_arguments,
    add_shapes_argument,
    command,
    job_arguments,
    shape_sets,
)
from fixport.cli.output import print_export_dtype, print_json, progress_printer
from fixport.cli.runtime_arguments import add_runtime_argument, checked_runtime
from fixport.cli.workers import command_worker, fresh_for_next_component, lending_worker
from fixport.core.exporters.capture_changes import write_changed_copy
from fixport.core.exporters.profiles import profile_for
from fixport.core.exporters.trace_warnings import nodes_it_produced, trace_warning
from fixport.core.foundation.errors import FixportError
from fixport.core.records.baseline import BaselineResult, fixport_worse
from fixport.core.records.generation_result import DECODE, PREFILL
from fixport.core.records.requests import AnalyzeRequest, BaselineRequest, SuggestDynamicRequest
from fixport.core.records.results import AnalysisResult
from fixport.core.words.advice import Step, advice_for
from fixport.core.words.errors import WorkerCrashed
from fixport.core.words.runtimes import OPENVINO, ORT
from fixport.core.words.vocabulary import LOADING_STAGE, TRACING_STAGE
from fixport.core.worker.client import ExportWorker

MESSAGE_WIDTH = 100


def analysis_json(result: AnalysisResult) -> dict[str, Any]:
    """The `check --json` contract other issues and tests rely on."""
    return {
        "model": result.model_path,
        "opset": result.options.opset,
        "exporter": result.options.exporter,
        "source_nodes": len(result.source_graph.nodes) if result.source_graph else 0,
        "source_graph": result.source_graph.kind if result.source_graph else None,
        "onnx_nodes": len(result.onnx_graph.nodes) if result.onnx_graph else 0,
        "unsupported": [problem.to_json() for problem in result.unsupported],
        "warnings": result.warnings,
        "notes": result.notes,
        **({"runtime": result.runtime} if result.runtime != ORT else {}),
        "seconds": {k: round(v, 3) for k, v in result.seconds.items()},
        "saved_files": result.saved_files,
        "proposed_dynamic_shapes": result.proposed_dynamic_shapes,
        **({"task": result.task, "component": result.component} if result.component else {}),
        **({"generation": result.generation.to_json()} if result.generation else {}),
        **({"export_dtype": result.export_dtype.to_json()} if result.export_dtype else {}),
    }


def _runtime_words(result: AnalysisResult) -> str:
    return "OpenVINO (f32)" if result.runtime == OPENVINO else "ONNX Runtime"


def print_analysis(result: AnalysisResult) -> None:
    """A readable report: one block per unsupported node."""
    ts_nodes = len(result.source_graph.nodes) if result.source_graph else 0
    onnx_nodes = len(result.onnx_graph.nodes) if result.onnx_graph else 0
    source = profile_for(result.options.exporter).source_graph_title
    traced = "" if result.source_kind == "onnx" else f"{ts_nodes} {source} nodes, "
    print(f"{Path(result.model_path).name}: opset {result.options.opset}, {traced}{onnx_nodes} ONNX nodes")
    for note in result.notes:
        print(f"  note: {note}")
    if result.proposed_dynamic_shapes:
        print("  dynamic shapes inferred from build()'s input sets (to paste): "
              f"--dynamic-shapes '{json.dumps(result.proposed_dynamic_shapes)}'")
    if not result.unsupported:
        onnx_file = result.source_kind == "onnx"
        print("OK: OpenVINO compiles every node." if onnx_file and result.runtime == OPENVINO
              else "OK: ONNX Runtime has a kernel for every node." if onnx_file
              else f"OK: the model exports, runs in {_runtime_words(result)} and matches torch on the example inputs"
              + (f" and at {len(result.other_sizes_checked)} other size(s)." if result.other_sizes_checked else "."))
    else:
        print(f"{len(result.unsupported)} unsupported node(s):")
    for index, problem in enumerate(result.unsupported, 1):
        where = " ".join(part for part in (problem.scope and f"in {problem.scope}",
                                           problem.source and f"at {problem.source}") if part)
        print(f"\n{index:>3}. {problem.display_kind}  [{problem.reason}]  {where}")
        if problem.first_supported_opset is not None and problem.first_supported_opset > result.options.opset:
            print(f"     torch has a built-in symbolic from opset {problem.first_supported_opset}")
        for line in textwrap.wrap(problem.message, MESSAGE_WIDTH):
            print(f"     {line}")
        for line in problem.code_change.splitlines():
            print(f"       {line}")
    if result.generation is not None:
        print()
        for line in result.generation.lines():
            print(line)
    for warning in result.warnings:
        print(f"\nwarning: {textwrap.shorten(warning, 300)}{_recorded_into(warning, result)}")


def _recorded_into(text: str, result: AnalysisResult) -> str:
    """For a TracerWarning, the traced nodes that took the value it recorded as a constant."""
    warning = trace_warning(text)
    nodes = nodes_it_produced(warning, result.source_graph) if warning and result.source_graph else []
    if not nodes:
        return ""
    named = ", ".join(dict.fromkeys(f"{n.kind} at {n.source}" + (f" in {n.scope}" if n.scope else "") for n in nodes))
    return f"\n  recorded as a constant into: {named}"


def _run_analyses(args: argparse.Namespace, output: str | None = None) -> tuple[list[AnalysisResult], int]:
    """One analysis per component of a checkpoint folder (only the one --component names, where it
    does), one for anything else; and how many fixes (from --project) each applied."""
    request, options, mappings = job_arguments(args)
    results: list[AnalysisResult] = []
    # check on a folder: the first component's export waits on disk for the second one's generation check,
    # as export -o writes it (one export of each component, not the other one exported again)
    kept = (tempfile.TemporaryDirectory(prefix="fixport-check-") if output is None and not args.component
            and Path(args.model).is_dir() else nullcontext(None))
    with kept as kept_in, command_worker(args.timeout) as worker:
        while True:
            try:
                result = worker.run(AnalyzeRequest(request, options, mappings, output, other_shapes=shape_sets(args),
                                                   generation_check=_checks_generation(args, output or kept_in,
                                                                                       results),
                                                   runtime=checked_runtime(args), kept_in=kept_in),
                                    progress=progress_printer(args.json))
            except WorkerCrashed as crash:
                if crash.stage in ("", LOADING_STAGE, TRACING_STAGE):
                    raise  # the model's own code crashed: it cannot be loaded or traced (exit 2)
                result = AnalysisResult.of_crash(request.path, options, crash)
            results.append(result)
            left = [name for name in result.components if name not in {r.component for r in results}]
            if args.component or not left:
                break
            request.component = left[0]
            fresh_for_next_component(worker, Path(args.model))
    return results, len(mappings)


def _checks_generation(args: argparse.Namespace, output: str | None, results: list[AnalysisResult]) -> bool:
    """Whether the next component's analysis decodes greedily: until one has; when every component is
    written into one directory, from the second of prefill and decode on, so it decodes through the
    first as written."""
    if any(r.generation for r in results):
        return False
    if output is None or args.component:
        return True
    return any(r.component in (PREFILL, DECODE) for r in results)


def print_components(results: list[AnalysisResult]) -> None:
    """Before a checkpoint's reports: the components transformers' exporter split it into, the dtype it
    was exported in and what each ONNX Runtime provider does with that dtype."""
    if len(results) > 1:
        print(f"{Path(results[0].model_path).name}: task {results[0].task}, {len(results)} components "
              f"({', '.join(r.component for r in results)}), each checked as its own export.")
    if results[0].export_dtype is not None:
        print_export_dtype(results[0].export_dtype)
    if len(results) > 1 or results[0].export_dtype is not None:
        print()



def _configure_check(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    add_shapes_argument(parser)
    parser.add_argument("--suggest-dynamic", action="store_true",
                        help="instead: export with each input dim dynamic in turn, check it at other sizes, and "
                             "say which dims generalise and what (which line) blocks the others")
    parser.add_argument("--project", help="check with this project's fixes applied (a .fixport.json file)")
    add_runtime_argument(parser)
    parser.add_argument("--baseline", action="store_true",
                        help="also export with plain torch.onnx.export (same exporter, opset, dynamic axes and "
                             "inputs; none of Fixport's fixes or settings), run it in ONNX Runtime at the same sizes "
                             "and compare with torch: exit 1 where the plain export is right and Fixport's is not")
    parser.add_argument("--write-changed", metavar="COPY.py",
                        help="write a copy of the model file with the code changes proposed for its capture "
                             "failures (--exporter dynamo); the model file itself is never changed")


@command("check", "Export once and list every unsupported node with its reason "
                  "(exit 0 clean, 1 unsupported nodes, 2 could not load or run it: a forward() that raises "
                  "is exit 2 with either exporter).", _configure_check)
def run_check(args: argparse.Namespace) -> int:
    if args.suggest_dynamic:
        return _run_suggest_dynamic(args)
    with command_worker(args.timeout) as worker, lending_worker(worker):  # the baseline reuses the model loaded
        results, _ = _run_analyses(args)
        baselines = _run_baselines(args, worker, results) if args.baseline else {}
    result = results[0]
    worse = {r.component: _worse(r, baselines.get(r.component)) for r in results}
    if args.json:
        print_json(_components_json(results, baselines, worse) if len(results) > 1
                   else _with_baseline(analysis_json(result), baselines.get(result.component), worse[result.component]))
    else:
        for line in filter(None, worse.values()):  # a Fixport defect: said before anything else
            print(line)
        print_components(results)
        for each in results:
            if len(results) > 1:
                print(f"[component {each.component}]")
            print_analysis(each)
            if each.component in baselines:
                print(f"\n{baselines[each.component].line()}")
            if len(results) > 1:
                print()
    if args.write_changed:
        _write_changed(Path(args.model), result, Path(args.write_changed))
    return EXIT_PROBLEMS if any(r.unsupported for r in results) or any(worse.values()) else EXIT_OK


def _run_baselines(args: argparse.Namespace, worker: ExportWorker,
                   results: list[AnalysisResult]) -> dict[str, BaselineResult]:
    """check --baseline: plain torch.onnx.export of each component analysed, at the same sizes."""
    request, options, _ = job_arguments(args)
    baselines = {}
    for result in results:
        request.component = result.component or request.component
        baselines[result.component] = worker.run(BaselineRequest(request, options, other_shapes=shape_sets(args)),
                                                 progress=progress_printer(args.json))
    return baselines


def _worse(result: AnalysisResult, baseline: BaselineResult | None) -> str:
    return fixport_worse(baseline, not result.unsupported,
                         [(problem.display_kind, problem.reason) for problem in result.unsupported])


def _with_baseline(payload: dict[str, Any], baseline: BaselineResult | None, worse: str) -> dict[str, Any]:
    """check --json with --baseline: the plain export's record under "baseline"."""
    if baseline is not None:
        payload["baseline"] = {**baseline.to_json(), "line": baseline.line(), "fixport_worse": worse}
    return payload


def _components_json(results: list[AnalysisResult], baselines: dict[str, BaselineResult] | None = None,
                     worse: dict[str, str] | None = None) -> dict[str, Any]:
    """check --json on a checkpoint split into components: one analysis per component."""
    baselines, worse = baselines or {}, worse or {}
    dtype = results[0].export_dtype
    return {"model": results[0].model_path, "task": results[0].task,
            **({"export_dtype": dtype.to_json()} if dtype else {}),
            "components": {r.component: _with_baseline(analysis_json(r), baselines.get(r.component),
                                                       worse.get(r.component, "")) for r in results}}


def _write_changed(model: Path, result: AnalysisResult, target: Path) -> None:
    """--write-changed: the copy with the proposed changes, and how to check it."""
    if model.suffix != ".py":
        raise FixportError(f"--write-changed needs a Python model file; {model.name} is not one.",
                           "Change the model's code where it is defined.")
    written = write_changed_copy(model, result.unsupported, target)
    if written is None:
        print("No code change to write: no capture failure here has a proposed change.", file=sys.stderr)
        return
    print(f"Wrote {written} (the model file with the proposed changes); check it with: "
          f"python main.py check --exporter dynamo {written}", file=sys.stderr)


def _run_suggest_dynamic(args: argparse.Namespace) -> int:
    """`check --suggest-dynamic`: one line per input dim (exit 0; the verdicts are the answer)."""
    request, options, mappings = job_arguments(args)
    with command_worker(args.timeout) as worker:
        verdicts = worker.run(SuggestDynamicRequest(request, options, mappings), progress=progress_printer(args.json))
    if args.json:
        print_json({"model": request.path, "verdicts": [{**vars(v), "label": v.label} for v in verdicts]})
        return EXIT_OK
    words = {True: "can be dynamic", False: "blocked", None: "cannot tell"}
    print(f"{Path(request.path).name}: each input dim exported dynamic on its own and checked at other sizes")
    for verdict in verdicts:
        where = f" at {verdict.source}" if verdict.source else ""
        print(f"  {verdict.label:<28} {words[verdict.generalises]}{where}")
        for line in textwrap.wrap(verdict.why, MESSAGE_WIDTH):
            print(f"      {line}")
    dynamic = {}
    for verdict in verdicts:
        if verdict.generalises:
            dynamic.setdefault(verdict.input_name, {})[str(verdict.axis)] = f"{verdict.input_name}_{verdict.axis}"
    if dynamic:
        print(f"\nDeclare them with: --dynamic-axes '{json.dumps(dynamic)}'")
    return EXIT_OK


def _configure_export(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("-o", "--output", required=True,
                        help="where to write the .onnx file (for a checkpoint folder: the directory)")
    parser.add_argument("--project", help="apply this project's fixes (a .fixport.json file)")


@command("export", "Export MODEL to a checked ONNX file (exit 1 and no file while nodes are unsupported); a "
                   "checkpoint folder to a directory in transformers' ExportedModel layout (one .onnx per component, "
                   "export.json, the config).",
         _configure_export)
def run_export(args: argparse.Namespace) -> int:
    if Path(args.model).is_dir() and (Path(args.output).suffix == ".onnx" or Path(args.output).is_file()):
        raise FixportError(f"{args.model} is a checkpoint folder: it exports to a directory (one .onnx per "
                           f"component, export.json and the config), not to the file {args.output}.",
                           "Give -o a directory, e.g. -o exported/.")
    results, fix_count = _run_analyses(args, output=args.output)
    if len(results) > 1 and args.json:
        print_json(_components_json(results))
    elif len(results) > 1:
        print_components(results)
    codes = [_report_export(args, result, fix_count, quiet=args.json and len(results) > 1) for result in results]
    return max(codes)


def _report_export(args: argparse.Namespace, result: AnalysisResult, fix_count: int, *, quiet: bool) -> int:
    """One export's report (one component's, for a checkpoint folder) and its exit code."""
    if quiet:
        pass
    elif args.json:
        print_json(analysis_json(result))
    elif result.unsupported:
        print_analysis(result)
        print(f"\nNot written: {args.output}. What to do:")
        done = Step.AUTO_FIXED if args.project else Step.CHECKED  # a project's fixes: fix has been run
        for kind, problem in {p.display_kind: p for p in result.unsupported}.items():
            print(f"  {kind}: {advice_for(problem, result.options.exporter, Path(args.model).name, done)}")
    else:
        fixes = f", {fix_count} fix(es)" if args.project else ""
        print(f"Wrote {', '.join(result.saved_files)} (opset {result.options.opset}{fixes}, "
              f"{len(result.onnx_graph.nodes) if result.onnx_graph else 0} nodes, passes onnx.checker).")
        for line in result.generation.lines() if result.generation is not None else []:
            print(line)
    if result.source_kind == "onnx":
        return EXIT_ERROR
    return EXIT_PROBLEMS if result.unsupported else EXIT_OK
