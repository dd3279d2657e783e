"""`sweep`: check, optionally fix --auto, and compare many models with each exporter; one row each."""
from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

from fixport.cli.arguments import EXIT_OK, EXIT_PROBLEMS, command, positive_seconds
from fixport.cli.runtime_arguments import add_runtime_argument, checked_runtime
from fixport.core.exporters.profiles import profile_for
from fixport.core.foundation.errors import FixportError
from fixport.core.sweep.cache import DEFAULT_CACHE_FOLDER, SweepCache
from fixport.core.sweep.local_runner import ModelTask, run_local
from fixport.core.sweep.ray_runner import run_on_ray
from fixport.core.sweep.reports import worse_first, write_json, write_junit, write_markdown
from fixport.core.sweep.rows import SweepRow, SweepSettings
from fixport.core.sweep.stamp import machine_stamp
from fixport.core.sweep.targets import sweep_targets
from fixport.core.words.vocabulary import EXPORTERS
from fixport.core.worker.client import DEFAULT_JOB_TIMEOUT_S

EXIT_INTERRUPTED = 130  # what a shell reports for a command Ctrl+C stopped (128 + SIGINT)
DEFAULT_EXPORTERS = ",".join(EXPORTERS)


def _configure_sweep(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="model files, checkpoint folders (with config.json), or folders to search for them")
    parser.add_argument("--exporters", default=DEFAULT_EXPORTERS, metavar="NAME[,NAME]",
                        help=f"comma-separated, from {', '.join(EXPORTERS)} (default: {DEFAULT_EXPORTERS})")
    add_runtime_argument(parser)
    parser.add_argument("--fix", action="store_true", help="run fix --auto on every model with problems")
    parser.add_argument("--opset", type=int, help="ONNX opset for every model (default: each model's own)")
    parser.add_argument("--baseline", action="store_true",
                        help="also export each model with plain torch.onnx.export (same exporter and opset), run it "
                             "at the same sizes: rows where it is right and Fixport is not are listed first")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="models at a time, each in its own export worker process (default 1; with --ray, the "
                             "cluster's CPUs decide)")
    parser.add_argument("--json", metavar="FILE", help="write the rows as JSON (File > Open sweep results... in "
                                                       "the window opens it)")
    parser.add_argument("--markdown", metavar="FILE", help="write the rows as a markdown table, stamped with the "
                                                           "date, commit and machine")
    parser.add_argument("--junit", metavar="FILE", help="write JUnit XML: one test case per model and exporter")
    parser.add_argument("--cache", metavar="DIR",
                        help=f"where finished rows are kept, so a rerun resumes (default: {DEFAULT_CACHE_FOLDER}/ "
                             "beside the first report file, else in the current folder)")
    parser.add_argument("--rerun", action="store_true", help="compute every row again (the cache is refreshed)")
    parser.add_argument("--ray", metavar="ADDRESS",
                        help="run the models as tasks on the Ray cluster at ADDRESS ('local': a new one on this "
                             "machine); its nodes need Fixport and the model paths (pip install -e \".[ray]\")")
    parser.add_argument("--timeout", type=positive_seconds, default=DEFAULT_JOB_TIMEOUT_S, metavar="SECONDS",
                        help=f"stop a job that shows no progress for this long (default {DEFAULT_JOB_TIMEOUT_S:g} s)")


def _settings(args: argparse.Namespace) -> SweepSettings:
    exporters = tuple(dict.fromkeys(name.strip() for name in args.exporters.split(",") if name.strip()))
    unknown = [name for name in exporters if name not in EXPORTERS]
    if unknown or not exporters:
        raise FixportError(f"--exporters {args.exporters}: unknown exporter {', '.join(unknown) or '(none given)'}.",
                           f"Use a comma-separated list of {', '.join(EXPORTERS)}.")
    for name in exporters:
        low, high = profile_for(name).opsets
        if args.opset is not None and not low <= args.opset <= high:
            raise FixportError(f"--opset {args.opset} is outside what the {name} exporter takes ({low}-{high}).",
                               "Choose an opset in range.")
    if args.jobs < 1:
        raise FixportError(f"--jobs {args.jobs}: give at least 1.", "E.g. --jobs 2 runs two models at a time.")
    return SweepSettings(exporters=exporters, fix=args.fix, opset=args.opset, timeout_s=args.timeout,
                         baseline=args.baseline, runtime=checked_runtime(args))


def _cache_folder(args: argparse.Namespace) -> Path:
    if args.cache:
        return Path(args.cache)
    first_report = next((path for path in (args.json, args.markdown, args.junit) if path), None)
    return (Path(first_report).resolve().parent if first_report else Path.cwd()) / DEFAULT_CACHE_FOLDER


class _Progress:
    """One line per step and per finished row on stderr (threads print whole lines, one at a time)."""

    def __init__(self, labels: dict[Path, str]) -> None:
        self.labels, self.total = labels, len(labels)
        self._lock = threading.Lock()

    def say(self, task: ModelTask, exporter: str, text: str) -> None:
        with self._lock:
            print(f"[{task.number}/{self.total}] {self.labels[task.model]} {exporter}: {text}", file=sys.stderr,
                  flush=True)

    def row(self, task: ModelTask, row: SweepRow) -> None:
        error = "" if row.max_abs is None else f", largest error {row.max_abs:.2e}"
        note = f" ({row.message})" if row.message and not row.passed else ""
        cached = ", cached" if row.cached else ""
        self.say(task, row.exporter,
                 f"{row.verdict.upper()} [{row.status}{error}, {row.total_seconds:.1f} s{cached}]{note}")


@command("sweep", "Check, optionally fix --auto, and compare every model given or found under the folders, "
                  "with each exporter: one row per model and exporter, cached so a rerun resumes (exit 0 every "
                  "row passed, 1 any did not, 130 stopped by Ctrl+C).", _configure_sweep)
def run_sweep(args: argparse.Namespace) -> int:
    settings = _settings(args)
    models = sweep_targets(args.paths)
    if not models:
        raise FixportError(f"No model files found under {', '.join(args.paths)}.",
                           "Give model files (.py with build(), .pt, .pt2, .onnx) or folders holding them.")
    cache = SweepCache(_cache_folder(args))
    progress = _Progress(models)
    rows: dict[tuple[str, str], SweepRow] = {}
    rows_lock = threading.Lock()
    tasks_by_model: dict[str, ModelTask] = {}

    def on_row(row: SweepRow) -> None:
        row.label = models[Path(row.model)]
        if not row.retry:
            cache.store(row, settings)
        with rows_lock:
            rows[(row.model, row.exporter)] = row
        progress.row(tasks_by_model[row.model], row)

    stop, started = threading.Event(), time.monotonic()
    try:
        tasks = _tasks(models, settings, cache, args.rerun, rows, progress)
        tasks_by_model.update((str(task.model), task) for task in tasks)
        if args.ray:
            run_on_ray(tasks, settings, args.ray, on_row, progress.say, stop)
        else:
            run_local(tasks, settings, args.jobs, on_row, progress.say, stop)
    except KeyboardInterrupt:
        stop.set()
        done = sum(1 for row in rows.values() if not row.cached)
        print(f"\nstopped: {len(rows)} of {len(models) * len(settings.exporters)} row(s) done ({done} this run), "
              f"kept in {cache.folder}; run the same command again to resume.", file=sys.stderr)
        return EXIT_INTERRUPTED
    ordered = worse_first([rows[(str(model), exporter)] for model in models for exporter in settings.exporters
                           if (str(model), exporter) in rows])
    _write_reports(args, ordered, settings)
    _print_summary(ordered, time.monotonic() - started)
    return EXIT_OK if all(row.passed for row in ordered) else EXIT_PROBLEMS


def _tasks(models: dict[Path, str], settings: SweepSettings, cache: SweepCache, rerun: bool,
           rows: dict[tuple[str, str], SweepRow], progress: _Progress) -> list[ModelTask]:
    """The models and exporters still to run; the cached rows go straight into ``rows``."""
    tasks = []
    for number, (model, label) in enumerate(models.items(), 1):
        needed = []
        for exporter in settings.exporters:
            row = None if rerun else cache.load(model, exporter, settings)
            if row is None:
                needed.append(exporter)
                continue
            row.label = label
            rows[(str(model), exporter)] = row
            progress.row(ModelTask(number, model, (exporter,)), row)
        if needed:
            tasks.append(ModelTask(number, model, tuple(needed)))
    return tasks


def _write_reports(args: argparse.Namespace, rows: list[SweepRow], settings: SweepSettings) -> None:
    stamp = machine_stamp() if args.json or args.markdown else {}
    if args.json:
        write_json(Path(args.json), rows, settings, stamp)
    if args.markdown:
        write_markdown(Path(args.markdown), rows, settings, stamp)
    if args.junit:
        write_junit(Path(args.junit), rows)


def _print_summary(rows: list[SweepRow], seconds: float) -> None:
    for row in rows:
        if row.fixport_worse:  # Fixport defects, before the table
            print(f"{row.name} [{row.exporter}]: {row.fixport_worse}")
    width = max((len(row.name) for row in rows), default=5)
    print(f"{'model':<{width}}  {'exporter':<11} {'status':<9} {'problems':>8}  {'fixes':>5}  {'verdict':<13} "
          f"{'largest error':>13} {'time (s)':>8}")
    for row in rows:
        error = "—" if row.max_abs is None else f"{row.max_abs:.2e}"
        cached = " (cached)" if row.cached else ""
        print(f"{row.name:<{width}}  {row.exporter:<11} {row.status:<9} {len(row.problems):>8}  "
              f"{len(row.fixes):>5}  {row.verdict:<13} {error:>13} {row.total_seconds:>8.1f}{cached}")
        if row.baseline is not None:
            print(f"{'':<{width}}  {row.baseline.line()}")
    passed = sum(row.passed for row in rows)
    cached = sum(row.cached for row in rows)
    print(f"\n{passed} of {len(rows)} row(s) passed ({cached} from the cache) in {seconds:.0f} s.")
