"""Fixport on models at their real published size: time and peak memory of each command (issue 20).

Usage: python bench/real_size.py [--quick] [--exporter torchscript|dynamo] [--only NAME ...] [--logs DIR]
                                [--timeout 86400] [--limit S] [--min-free-gb 1.5]

For every model of bench/real_size_models/ (Qwen2-0.5B, ViT-L/16 with RMSNorm, three 16k x 16k
Linear layers whose ONNX file is 3.2 GB, ViT-B/16 in float16, Qwen2-0.5B in bfloat16 as its checkpoints
ship), each in its own process, one after
the other: one plain ``torch.onnx.export(..., dynamo=False)`` of the model file's build() (with
ONNX_FALLTHROUGH, as in bench/fix_time.py: the only way a plain export gets through the nodes that
need a fix), then ``check``, ``fix --auto -o P.fixport.json``, ``export --project P`` and
``compare --project P`` as a user runs them, with ``--timeout`` raised so Fixport's job limit is
not what is measured (export and compare run without --project, marked "no project", when fix
--auto had nothing to fix and wrote none). Each is timed from start to exit; a sampler reads /proc every 0.1 s and keeps
the peak of the summed RSS of the process and all its descendants (the CLI's worker, fix --auto's
forked trials; forked copies share pages, so the sum over-counts them: the PSS sum, which splits
shared pages between their processes, is shown next to it). One table per model: seconds and peak
GB, each also as a ratio to the plain export, the exit code, and for a command that failed its
error line (else its last line). A command is stopped when free memory drops under --min-free-gb
or after --limit seconds; its numbers are then marked ">=".
--quick: the same architectures at tiny configs, to check the harness in about a minute.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from fixport.bench.real_size_models._size import QUICK_ENV

REPO = Path(__file__).resolve().parent.parent
MODELS = REPO / "bench" / "real_size_models"
MODEL_NAMES = ("qwen2_0_5b", "vit_large_rmsnorm", "wide_linear_3gb", "vit_base_fp16", "qwen2_0_5b_bf16")
SAMPLE_S = 0.1
GB = 1e9
PAGE = os.sysconf("SC_PAGE_SIZE")
OK_CODES = {"check": (0, 1)}  # check exits 1 when it lists problems: that is its job, not a failure

PLAIN_EXPORT = """
import importlib.util, sys, torch
path, out, exporter = sys.argv[1], sys.argv[2], sys.argv[3]
spec = importlib.util.spec_from_file_location("real_size_model", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
model, inputs = module.build()
opset = getattr(module, "FIXPORT_EXAMPLE", {}).get("opset", 17)
if exporter == "dynamo":  # torch's default: it writes external data itself past 2 GB
    torch.onnx.export(model.eval(), inputs, out, opset_version=opset, dynamo=True)
else:
    torch.onnx.export(model.eval(), inputs, out, opset_version=opset, dynamo=False,
                      operator_export_type=torch.onnx.OperatorExportTypes.ONNX_FALLTHROUGH)
"""


@dataclass
class Run:
    """One command's outcome: wall seconds, peak memory of its process tree, exit code, output."""
    command: str
    seconds: float
    peak_rss: int
    peak_pss: int
    code: int
    output: str
    stopped: str = ""  # why the bench stopped it, if it did


def _children_by_parent() -> dict[int, list[int]]:
    table: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:  # the process ended while we read
            continue
        table.setdefault(int(fields[1]), []).append(int(entry))
    return table


def process_tree(root: int) -> list[int]:
    """The root and every descendant, from the parent ids in /proc/*/stat."""
    children, tree, index = _children_by_parent(), [root], 0
    while index < len(tree):
        tree.extend(children.get(tree[index], ()))
        index += 1
    return tree


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * PAGE
    except OSError:
        return 0


def _pss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def free_memory() -> int:
    """MemAvailable from /proc/meminfo, in bytes."""
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


class TreeSampler(threading.Thread):
    """Every SAMPLE_S: the RSS and PSS sums of a process tree, kept at their peak; stops the tree
    (SIGKILL to its process group and every member) when free memory falls under min_free."""

    def __init__(self, root: int, min_free: int) -> None:
        super().__init__(daemon=True)
        self.root, self.min_free = root, min_free
        self.peak_rss = self.peak_pss = 0
        self.stopped = ""
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            tree = process_tree(self.root)
            self.peak_rss = max(self.peak_rss, sum(_rss(pid) for pid in tree))
            self.peak_pss = max(self.peak_pss, sum(_pss(pid) for pid in tree))
            if not self.stopped and free_memory() < self.min_free:
                self.stopped = f"stopped by the bench: free memory under {self.min_free / GB:.1f} GB"
                kill_tree(self.root)
            self.done.wait(SAMPLE_S)


def kill_tree(root: int) -> None:
    """SIGKILL the tree the bench started: its process group, then any member that left it."""
    tree = process_tree(root)
    try:
        os.killpg(root, signal.SIGKILL)
    except OSError:
        pass
    for pid in tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def measure(command: str, argv: list[str], env: dict[str, str], limit_s: float, min_free: int) -> Run:
    """Run argv in its own session; wall time from start to exit and the tree's peak memory."""
    with tempfile.TemporaryFile("w+") as log:
        started = time.perf_counter()
        process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        sampler = TreeSampler(process.pid, min_free)
        sampler.start()
        try:
            code = process.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            sampler.stopped = f"stopped by the bench after {limit_s:.0f} s"
            kill_tree(process.pid)
            code = process.wait()
        seconds = time.perf_counter() - started
        sampler.done.set()
        sampler.join()
        kill_tree(process.pid)  # a worker left behind by a killed CLI
        log.seek(0)
        output = log.read()
    return Run(command, seconds, sampler.peak_rss, sampler.peak_pss, code, output, sampler.stopped)


def error_line(run: Run) -> str:
    """What to show for a failed command: why the bench stopped it, Fixport's `error:` line,
    else the last line that is not a warning."""
    if run.stopped:
        return run.stopped
    lines = [line.strip() for line in run.output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    if errors:
        return errors[-1]
    plain = [line for line in lines if not line.startswith("warning:")]
    return (plain or lines or ["(no output)"])[-1]


def commands(model: Path, scratch: Path, timeout_s: float,
             exporter: str = "torchscript") -> list[tuple[str, list[str]]]:
    """The plain export, then Fixport's commands as a user chains them (the fixed project reused)."""
    python, main = sys.executable, str(REPO / "main.py")
    limit = ["--timeout", str(timeout_s), "--exporter", exporter]
    project, onnx = str(scratch / "fixed.fixport.json"), str(scratch / "fixed.onnx")
    return [
        ("plain export", [python, "-c", PLAIN_EXPORT, str(model), str(scratch / "plain.onnx"), exporter]),
        ("check", [python, main, "check", str(model), *limit]),
        ("fix --auto", [python, main, "fix", str(model), "--auto", "-o", project, *limit]),
        ("export", [python, main, "export", str(model), "-o", onnx, "--project", project, *limit]),
        ("compare", [python, main, "compare", str(model), "--project", project, *limit]),
    ]


def _without_missing_project(argv: list[str]) -> list[str]:
    """Drop `--project P` when fix --auto wrote no project (export and compare then run plain)."""
    if "--project" in argv and not Path(argv[argv.index("--project") + 1]).exists():
        index = argv.index("--project")
        return argv[:index] + argv[index + 2:]
    return argv


def _remove_onnx(scratch: Path) -> None:
    """Delete the ONNX files and external data written so far (3 GB each for the big model)."""
    for path in scratch.iterdir():
        if not path.name.endswith(".fixport.json"):
            path.unlink()


def bench_model(name: str, args: argparse.Namespace, env: dict[str, str]) -> list[Run]:
    """Every command on one model, each in its own process, printed as it finishes."""
    runs = []
    with tempfile.TemporaryDirectory(prefix=f"fixport-real-size-{name}-") as folder:
        scratch = Path(folder)
        for command, argv in commands(MODELS / f"{name}.py", scratch, args.timeout, args.exporter):
            argv_run = _without_missing_project(argv)
            if argv_run != argv:
                command += " (no project)"
            run = measure(command, argv_run, env, args.limit, int(args.min_free_gb * GB))
            runs.append(run)
            if args.logs:
                save_output(Path(args.logs), name, run)
            print(f"  {command}: {run.seconds:.1f} s, {run.peak_rss / GB:.2f} GB, exit {run.code}",
                  file=sys.stderr, flush=True)
            _remove_onnx(scratch)
    return runs


def save_output(folder: Path, name: str, run: Run) -> None:
    """The command's whole output, as LOGS/MODEL.COMMAND.log."""
    folder.mkdir(parents=True, exist_ok=True)
    slug = run.command.split(" (")[0].replace(" --", "-").replace(" ", "-")
    (folder / f"{name}.{slug}.log").write_text(run.output)


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.1f}x" if base > 0 else "-"


def print_table(name: str, runs: list[Run]) -> None:
    """Seconds and peak GB per command, as ratios to the plain export, and what failed."""
    base = runs[0]
    print(f"\n### {name}\n")
    print("| command | seconds | x plain | peak RSS GB | x plain | peak PSS GB | exit | failure |")
    print("|---|---|---|---|---|---|---|---|")
    for run in runs:
        failed = run.stopped or run.code not in OK_CODES.get(run.command, (0,))
        note = error_line(run).replace("|", "\\|") if failed else ""
        at_least = ">= " if run.stopped else ""  # stopped: the peak it would have reached is higher
        print(f"| {run.command} | {at_least}{run.seconds:.1f} | {_ratio(run.seconds, base.seconds)} | "
              f"{at_least}{run.peak_rss / GB:.2f} | {_ratio(run.peak_rss, base.peak_rss)} | "
              f"{at_least}{run.peak_pss / GB:.2f} | "
              f"{run.code} | {note} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny configs of the same architectures")
    parser.add_argument("--only", action="append", choices=MODEL_NAMES, help="only this model (repeatable)")
    parser.add_argument("--exporter", choices=("torchscript", "dynamo"), default="torchscript",
                        help="the exporter of the plain export and of every command")
    parser.add_argument("--timeout", type=float, default=86400.0, help="Fixport's --timeout for its jobs")
    parser.add_argument("--limit", type=float, default=3 * 3600.0, help="the bench stops a command after this")
    parser.add_argument("--logs", metavar="DIR", help="also save each command's whole output here")
    parser.add_argument("--min-free-gb", type=float, default=1.5, help="stop a command below this free memory")
    args = parser.parse_args()
    env = {key: value for key, value in os.environ.items() if key != QUICK_ENV}
    if args.quick:
        env[QUICK_ENV] = "1"
    print(f"real_size bench ({'quick: tiny configs' if args.quick else 'real size'}, {args.exporter}), "
          f"{os.cpu_count()} CPU cores, {free_memory() / GB:.1f} GB free")
    for name in args.only or MODEL_NAMES:
        print(f"{name} ...", file=sys.stderr, flush=True)
        print_table(name, bench_model(name, args, env))


if __name__ == "__main__":
    main()
