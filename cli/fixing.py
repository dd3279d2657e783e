"""`fix`, `script`, `templates` and `export --project`: the fixing workflow, headless."""
from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from fixport.cli.arguments import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_PROBLEMS,
    add_model_arguments,
    add_shapes_argument,
    command,
    export_overrides,
    model_request,
    positive_seconds,
    shape_sets,
)
from fixport.cli.check_export import analysis_json, print_analysis
from fixport.cli.output import clear_progress, print_json, progress_printer
from fixport.cli.workers import command_worker
from fixport.core.exporters.capture_change_fix import diff_in
from fixport.core.exporters.profiles import profile_for, profile_for_kind
from fixport.core.fixing.fix_script import write_fix_script
from fixport.core.foundation.errors import FixportError
from fixport.core.project.capture_settings import describe_setting
from fixport.core.project.project import Project, load_project, save_project
from fixport.core.records.exporter_comparison import ExporterRun
from fixport.core.records.fix_choices import CODE_CHANGE_FAMILIES
from fixport.core.records.requests import AutoFixRequest
from fixport.core.records.results import AutoFixResult, ModelRequest
from fixport.core.records.traced_sizes import pinned_dims_note
from fixport.core.session.fix_all import plan_from
from fixport.core.words.advice import Step, advice_for
from fixport.core.words.vocabulary import DEFAULT_OPSET, EXPORTERS


def _project_for(args: argparse.Namespace, request: ModelRequest, mappings=None) -> Project:
    """The project `fix` saves: the model as ``request`` (the one the search ran on) names it, the flags' options."""
    return Project(model_path=request.path, input_specs=[s.text() for s in request.inputs.specs],
                   input_file=request.inputs.input_file, seed=request.inputs.seed, trust=request.trust,
                   search_paths=request.search_paths, export_options=export_overrides(args),
                   mappings=list(mappings or []), shapes_to_check=list(getattr(args, "shapes", [])),
                   task=request.task, component=request.component, dtype=request.dtype)


def _configure_fix(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("--auto", action="store_true", help="pick the best built-in template for every problem")
    parser.add_argument("-o", "--output", required=True, metavar="PROJECT.fixport.json",
                        help="where to save the project with the chosen fixes")
    parser.add_argument("--onnx", metavar="OUT.onnx", help="also write the fixed model")
    parser.add_argument("--keep-opset", action="store_true",
                        help="never raise the opset, even when a fix exists only at a higher one")
    parser.add_argument("--time-limit", type=positive_seconds, metavar="SECONDS",
                        help="stop the search after this long and save the best project found so far, listing "
                             "the problems it did not get to")
    add_shapes_argument(parser)


@command("fix", "Fix every unsupported node with the best-ranked built-in template, re-export, and save "
                "the project (exit 0 when nothing is left unsupported, 1 otherwise).", _configure_fix)
def run_fix(args: argparse.Namespace) -> int:
    if not args.auto:
        raise FixportError("Only automatic fixing runs headless.",
                           f"Add --auto, or fix by hand in the window: python main.py gui {args.model}")
    if Path(args.output).suffix.lower() == ".onnx":
        stem = Path(args.output).stem
        raise FixportError(f"-o names the project file to save, not the fixed model: {args.output} would "
                           "hold the project's JSON.",
                           f"Write both: -o {stem}.fixport.json --onnx {args.output}")
    request = model_request(args)
    progress = progress_printer(args.json, lines_otherwise=True)
    if progress is not None:  # the worker imports torch before the job says anything
        progress(0.0, "starting the export worker")
    try:
        with command_worker(args.timeout) as worker:
            result = worker.run(AutoFixRequest(request, export_overrides(args), output=args.onnx,
                                               keep_opset=args.keep_opset, other_shapes=shape_sets(args),
                                               time_limit_s=args.time_limit),
                                progress=progress)
    finally:
        clear_progress(args.json)
    if not result.before.unsupported:
        message = f"{Path(args.model).name} already exports and runs in ONNX Runtime: nothing to fix, nothing written."
        if args.json:
            print_json({"changed": False, "message": message, **analysis_json(result.after)})
        else:
            print(message)
        return EXIT_OK
    # The same decisions as the window's Fix all: which mappings the project gets, which options.
    run = ExporterRun.from_auto_fix(result, export_overrides(args), pin_opset=True)
    project = _project_for(args, request, plan_from(run, []).new_mappings)
    project.export_options = run.options
    save_project(project, args.output)
    if args.json:
        print_json({"changed": True, "project": args.output, "opset_raised": result.opset_raised,
                    "capture_settings": result.capture_settings,
                    "fixed": [_choice_json(c, result) for c in result.choices], "no_template": result.no_template,
                    "advice": unfixed_advice(result, Path(args.model).name),
                    "rejected": [r.to_json() for r in result.rejected], "node_trials": result.node_trials,
                    "whole_model_trials": result.whole_model_trials,
                    "whole_model_exports": result.whole_model_exports, "whole_model_why": result.whole_model_why,
                    "stopped_at_time_limit": result.stopped_at_time_limit, "not_reached": result.not_reached,
                    "kept_best": result.kept_best, "compare_can_run": run.compare_can_run,
                    **analysis_json(result.after)})
    else:
        print_fix_report(run, args.output, Path(args.model).name)
    return EXIT_PROBLEMS if result.after.unsupported else EXIT_OK


def _pinned_dims(choice, result) -> str:
    """What a chosen fix built for the traced sizes pins, with the final export's check ('' for the others)."""
    return pinned_dims_note(result.after, fix_applied=True) if getattr(choice, "shape_specialised", False) else ""


def _code_change_diff(choice, result: AutoFixResult) -> str:
    """What a code-change fix changed, as the diff its source shows ('' for other fixes)."""
    if getattr(choice, "family", "") not in CODE_CHANGE_FAMILIES:
        return ""
    mapping = next((m for m in result.mappings if m.target_kind == choice.kind), None)
    return diff_in(mapping.source) if mapping is not None else ""


def _choice_json(choice, result) -> dict:
    return {**vars(choice), "rewrites": [vars(r) for r in choice.rewrites], "pinned_dims": _pinned_dims(choice, result)}


def unfixed_advice(result: AutoFixResult, model_name: str) -> dict[str, str]:
    """For each kind no fix was found for: what to do now, from its problem record (fix --auto just ran)."""
    records = {p.display_kind: p for p in [*result.before.unsupported, *result.after.unsupported]}
    exporter = result.after.options.exporter
    return {kind: advice_for(records[kind], exporter, model_name, Step.AUTO_FIXED) if kind in records
            else "no built-in fix works for it" for kind in result.no_template}


def print_fix_report(run: ExporterRun, project_path: str, model_name: str) -> None:
    """`fix --auto`'s report of ``run`` (``ExporterRun.from_auto_fix``)."""
    result = run.auto_fix
    assert result is not None
    print(f"{len(result.before.unsupported)} unsupported node(s) before fixing.")
    if result.opset_raised:
        print(f"  raised the opset from {result.opset_raised[0]} to {result.opset_raised[1]}: no fix exists at "
              f"{result.opset_raised[0]} for what was left (use --keep-opset to stay)")
    for setting in result.capture_settings:
        print(f"  captured with the setting {setting}: {describe_setting(setting)} (verified on the whole model; "
              "the project and the fix script keep it)")
    for choice in result.choices:
        kind = f"{choice.kind}[{choice.python_op_name}]" if choice.python_op_name else choice.kind
        family = getattr(choice, "family", "") or "template"
        on = "the node alone" if choice.on_node else "the whole model"
        matched = f", max abs {choice.max_abs:.2g} vs torch on {on}" if choice.max_abs is not None else ""
        print(f"  fixed {kind:<40} with {choice.template_id} [{family}]  ({choice.why}{matched})")
        for rewrite in choice.rewrites:
            print(f"    rewrote the captured graph's node {rewrite.line()}")
        changed = _code_change_diff(choice, result)
        if changed:
            print(textwrap.indent(changed, "      "))
        pinned = _pinned_dims(choice, result)
        if pinned:
            print(f"    {pinned}")
        if not getattr(choice, "runs_in_onnxruntime", True):
            print(f"    {choice.template_id} makes a custom-domain node: ONNX Runtime cannot run it; the target "
                  "runtime must implement it")
    for rejected in result.rejected:
        print(f"  rejected {rejected.line()}")
    print(f"  tried {result.node_trials} candidate(s) on the failing node alone, {result.whole_model_trials} on the "
          f"whole model; exported the whole model {result.whole_model_exports} time(s)")
    for line in result.whole_model_why:
        print(f"    tried on the whole model: {line}")
    if result.kept_best:
        print(f"  kept an earlier state: {result.kept_best}")
    if result.stopped_at_time_limit is not None:
        left = ", ".join(result.not_reached) or "nothing"
        print(f"  the time limit ({result.stopped_at_time_limit:g} s) stopped the search; not reached: {left} "
              "(run again with a longer --time-limit to try them)")
    for kind, advice in unfixed_advice(result, model_name).items():
        print(f"  no fix for {kind}: {advice}")
    if result.after.unsupported:
        print("\nStill unsupported after fixing:")
        print_analysis(result.after)
        print(run.error if not run.compare_can_run else "Compare can run on what is left (`compare` explains it).")
    else:
        print("Nothing is left unsupported: the model exports and runs in ONNX Runtime.")
    for path in result.after.saved_files:
        print(f"Wrote {path}")
    print(f"Saved project {project_path}")


def _configure_script(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("project", help="a .fixport.json project")
    parser.add_argument("-o", "--output", required=True, help="the script to write, e.g. fix_export.py")
    parser.add_argument("--onnx", help="the ONNX file the script writes (default: beside the script)")


@command("script", "Write a standalone Python script that registers the project's fixes and "
                   "reproduces the export without Fixport.", _configure_script)
def run_script(args: argparse.Namespace) -> int:
    project = load_project(args.project)
    refuse_fixes_that_do_not_compile(project)
    onnx_out = args.onnx or str(Path(args.output).with_suffix(".onnx").name)
    path = write_fix_script(project, args.output, onnx_out)
    print(f"Wrote {path} ({len(project.mappings)} fix(es)); run it with: python {path}")
    return EXIT_OK


def refuse_fixes_that_do_not_compile(project: Project) -> None:
    """A script with a broken fix would fail with SyntaxError when run: say which fix and line now."""
    for mapping in project.mappings:
        try:
            compile(mapping.source, f"<fix {mapping.template_id}>", "exec")
        except (SyntaxError, ValueError) as exc:
            line = f" at line {exc.lineno}" if getattr(exc, "lineno", None) else ""
            raise FixportError(f"The fix for {mapping.target_kind} ({mapping.template_id}) does not compile"
                               f"{line}: {getattr(exc, 'msg', exc)}. Nothing was written.",
                               "Fix its source in the window (python main.py gui PROJECT) or in the project "
                               "file, then write the script again.") from exc


def _configure_templates(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--op", metavar="KIND", help="rank templates for this op kind, e.g. aten::threshold "
                                                     "or prim::PythonOp[MyClip]")
    parser.add_argument("--opset", type=int, default=DEFAULT_OPSET)
    parser.add_argument("--exporter", choices=EXPORTERS, default=None,
                        help="whose templates (default: dynamo for an FX op overload such as aten::pow.Tensor_Scalar)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (the rows under \"templates\")")


@command("templates", "List the symbolic templates, or rank them for one op kind.", _configure_templates)
def run_templates(args: argparse.Namespace) -> int:
    if args.exporter is None and args.op:
        exporter = profile_for_kind(args.op)
    else:
        exporter = profile_for(args.exporter)
    library = exporter.template_library()
    if args.op:
        offers = library.templates_for(args.op, args.opset)
        rows = [{"id": o.template_id, "tier": o.tier, "why": o.why,
                 "title": o.template.title if o.template else "Stub from the op's schema",
                 "runs_in_onnxruntime": o.template.runs_in_onnxruntime if o.template else None}
                for o in offers]
    else:
        rows = [{"id": t.id, "title": t.title, "fits": t.fits, "min_opset": t.min_opset,
                 "runs_in_onnxruntime": t.runs_in_onnxruntime, "family": t.family} for t in library.all()]
    if args.json:
        print_json({"op": args.op, "exporter": exporter.name, "templates": rows})
        return EXIT_OK
    for row in rows:
        extra = row.get("why") or f"fits {', '.join(row['fits'])}, opset {row['min_opset']}+"
        print(f"{row['id']:<42} {row['title']}\n{'':<42} {extra}")
    for error in library.errors:
        print(f"warning: {error}")
    for note in library.notes:
        print(f"note: {note}")
    return EXIT_OK if rows else EXIT_ERROR
