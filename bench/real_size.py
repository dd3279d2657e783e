"""Fixport on models at their real published size: time and peak memory of each command (issue 20).

Usage: python bench/real_size.py [--quick] [--exporter torchscript|dynamo|both] [--only NAME ...] [--logs DIR]
                                [--command NAME ...] [--out DIR] [--timeout 86400] [--limit S] [--min-free-gb 1.5]

For every model of bench/real_size_models/ (Qwen2-0.5B, ViT-L/16 with RMSNorm, three 16k x 16k
Linear layers whose ONNX file is 3.2 GB, ViT-B/16 in float16, Qwen2-0.5B in bfloat16 as its checkpoints
ship, and Qwen2-0.5B as a checkpoint folder through the text-generation task, in float32 and saved in
bfloat16 as on the hub), each in its own
process, one after the other: one plain ``torch.onnx.export(..., dynamo=False)`` of the model file's build() (with
ONNX_FALLTHROUGH, as in bench/fix_time.py: the only way a plain export gets through the nodes that
need a fix), then ``check``, ``fix --auto -o P.fixport.json``, ``export --project P`` and
``compare --project P`` as a user runs them, with ``--timeout`` raised so Fixport's job limit is
not what is measured (export and compare run without --project, marked "no project", when fix
--auto had nothing to fix and wrote none). Each is timed from start to exit; a sampler reads /proc every 0.1 s and keeps
the peak of the summed RSS of the process and all its descendants (the CLI's worker, fix --auto's
forked trials; forked copies share pages, so the sum over-counts them). Every
SMAPS_EVERY samples it also reads /proc/PID/smaps of each process of the tree: the PSS sum (shared
pages split between the processes that map them: the tree's real share of memory), the USS sum
(pages only one process maps), and, named apart, the PSS of memory-mapped weight files
(.safetensors, .bin, .onnx, .onnx.data): page cache the kernel can drop, not memory the tree owns.
The PSS peak is the number to hold a command to the baseline with: it counts a mapped weight file
once however many processes map it. One table per model: seconds and peak
GB, each also as a ratio to the plain export, the exit code, and for a command that failed its
error line (else its last line). A command is stopped when free memory drops under --min-free-gb
or after --limit seconds; its numbers are then marked ">=".

A checkpoint model (one whose module has ``write_checkpoint``) is written with ``save_pretrained``
(random weights, not timed) and opened by its folder: its baseline is transformers' own
``OnnxExporter().export_for_generation`` (prefill and decode, dynamic), then ``check`` (every
component, and the generation check), ``fix --auto`` only where check lists problems, ``export``
to a directory and ``compare`` (the prefill, whose generation check exports the decode too and
decodes greedily in ONNX Runtime: all of it in compare's time). With --exporter both, transformers'
export runs once and heads both tables.
--exporter both: every model with each exporter, one table each.
--command NAME: only these of Fixport's commands (repeatable; the baseline always runs).
--out DIR: also write DIR/real_size.json and DIR/real_size.md, stamped (date, commit, machine, load).
--quick: the same architectures at tiny configs, to check the harness in about a minute.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fixport.bench.real_size_models._size import QUICK_ENV
from fixport.core.sweep.stamp import machine_stamp, stamp_markdown

REPO = Path(__file__).resolve().parent.parent
MODELS = REPO / "bench" / "real_size_models"
MODEL_NAMES = ("qwen2_0_5b", "vit_large_rmsnorm", "wide_linear_3gb", "vit_base_fp16", "qwen2_0_5b_bf16",
               "qwen2_0_5b_generation", "qwen2_0_5b_generation_bf16",
               "qwen2_5_1_5b_generation_bf16", "qwen2_5_3b_generation_bf16")
COMMAND_NAMES = ("check", "fix --auto", "export", "compare")
EXPORTERS = ("torchscript", "dynamo")
SAMPLE_S = 0.1
SMAPS_EVERY = 5  # samples between reads of /proc/PID/smaps (a large process maps thousands of regions)
WEIGHT_FILE_SUFFIXES = (".safetensors", ".bin", ".onnx", ".data", ".pt", ".pt2")
GB = 1e9
PAGE = os.sysconf("SC_PAGE_SIZE")
OK_CODES = {"check": (0, 1)}  # check exits 1 when it lists problems: that is its job, not a failure
CHECK_CLEAN = 0

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

# transformers' own export of a generative checkpoint (its OnnxExporter, on torch.export): the
# baseline of a checkpoint model, the same for either of Fixport's exporters.
TRANSFORMERS_EXPORT = """
import sys, torch
from transformers import AutoModelForCausalLM
from transformers.exporters import OnnxConfig
from transformers.exporters.exporter_onnx import OnnxExporter
folder, out = sys.argv[1], sys.argv[2]
model = AutoModelForCausalLM.from_pretrained(folder).eval()
torch.manual_seed(0)
ids = torch.randint(1, model.config.vocab_size, (2, 7))
mask = torch.ones_like(ids)
mask[0, :2] = 0  # left-padded, as Fixport's example prompt: the graphs take the mask
exported = OnnxExporter().export_for_generation(model, {"input_ids": ids, "attention_mask": mask},
                                                OnnxConfig(dynamic=True))
exported.save_pretrained(out)
"""


WRITE_CHECKPOINT = """
import importlib, sys
from pathlib import Path
importlib.import_module(sys.argv[1]).write_checkpoint(Path(sys.argv[2]))
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
    peak_uss: int = 0  # pages only one process of the tree maps, summed
    peak_weights_pss: int = 0  # the PSS of memory-mapped weight files (page cache, named apart)


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


def smaps_memory(pid: int) -> tuple[int, int, int]:
    """(PSS, USS, PSS of memory-mapped weight files) of one process, in bytes, from /proc/PID/smaps."""
    pss = uss = weights = 0
    in_weights = False
    try:
        with open(f"/proc/{pid}/smaps") as smaps:
            for line in smaps:
                head = line.split(maxsplit=5)
                if len(head) >= 5 and "-" in head[0] and not head[0].endswith(":"):  # a mapping's header line
                    path = head[5].strip() if len(head) == 6 else ""
                    in_weights = path.endswith(WEIGHT_FILE_SUFFIXES)
                elif head[0] == "Pss:":
                    value = int(head[1]) * 1024
                    pss += value
                    weights += value if in_weights else 0
                elif head[0] in ("Private_Clean:", "Private_Dirty:"):
                    uss += int(head[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return pss, uss, weights


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
        self.peak_rss = self.peak_pss = self.peak_uss = self.peak_weights_pss = 0
        self.stopped = ""
        self.done = threading.Event()

    def run(self) -> None:
        samples = 0
        while not self.done.is_set():
            tree = process_tree(self.root)
            self.peak_rss = max(self.peak_rss, sum(_rss(pid) for pid in tree))
            if samples % SMAPS_EVERY == 0:
                pss, uss, weights = (sum(column) for column in zip(*(smaps_memory(pid) for pid in tree), (0, 0, 0)))
                self.peak_pss, self.peak_uss = max(self.peak_pss, pss), max(self.peak_uss, uss)
                self.peak_weights_pss = max(self.peak_weights_pss, weights)
            else:
                self.peak_pss = max(self.peak_pss, sum(_pss(pid) for pid in tree))
            samples += 1
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
    return Run(command, seconds, sampler.peak_rss, sampler.peak_pss, code, output, sampler.stopped,
               sampler.peak_uss, sampler.peak_weights_pss)


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


def checkpoint_commands(folder: Path, scratch: Path, timeout_s: float,
                        exporter: str, task: str) -> list[tuple[str, list[str]]]:
    """transformers' own export of the folder, then Fixport's commands on the folder (every component)."""
    python, main = sys.executable, str(REPO / "main.py")
    limit = ["--timeout", str(timeout_s), "--exporter", exporter, "--task", task]
    project, out = str(scratch / "fixed.fixport.json"), str(scratch / "exported")
    return [
        ("transformers export", [python, "-c", TRANSFORMERS_EXPORT, str(folder), str(scratch / "transformers")]),
        ("check", [python, main, "check", str(folder), *limit]),
        ("fix --auto", [python, main, "fix", str(folder), "--auto", "-o", project, *limit]),
        ("export", [python, main, "export", str(folder), "-o", out, "--project", project, *limit]),
        ("compare", [python, main, "compare", str(folder), "--project", project, *limit]),
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
        if path.is_dir():
            shutil.rmtree(path)
        elif not path.name.endswith(".fixport.json"):
            path.unlink()


def _checkpoint_model(name: str) -> Any:
    """The model's module where it is a checkpoint folder (it has write_checkpoint), else None."""
    module = importlib.import_module(f"fixport.bench.real_size_models.{name}")
    return module if hasattr(module, "write_checkpoint") else None


def bench_model(name: str, args: argparse.Namespace, env: dict[str, str], exporter: str,
                done: dict[str, Run] | None = None) -> list[Run]:
    """Every command on one model, each in its own process, printed as it finishes; a command in
    ``done`` (transformers' export, the same for either exporter) is not run again."""
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix=f"fixport-real-size-{name}-") as folder, \
            tempfile.TemporaryDirectory(prefix=f"fixport-real-size-{name}-checkpoint-") as checkpoint:
        scratch = Path(folder)
        module = _checkpoint_model(name)
        if module is not None:  # random weights, written in a process of their own: not timed
            subprocess.run([sys.executable, "-c", WRITE_CHECKPOINT, module.__name__, checkpoint], cwd=REPO, env=env,
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            planned = checkpoint_commands(Path(checkpoint), scratch, args.timeout, exporter, module.TASK)
        else:
            planned = commands(MODELS / f"{name}.py", scratch, args.timeout, exporter)
        for command, argv in planned:
            if module is not None and command == "fix --auto" and runs and runs[-1].code == CHECK_CLEAN:
                continue  # check found nothing to fix: a user goes on to export
            if args.command and command != planned[0][0] and command not in args.command:
                continue
            if done is not None and command in done:
                runs.append(done[command])
                continue
            argv_run = _without_missing_project(argv)
            if argv_run != argv:
                command += " (no project)"
            run = measure(command, argv_run, env, args.limit, int(args.min_free_gb * GB))
            runs.append(run)
            if done is not None and module is not None and command == planned[0][0]:
                done[command] = run
            if args.logs:
                save_output(Path(args.logs), f"{name}.{exporter}", run)
            print(f"  {command}: {run.seconds:.1f} s, RSS {run.peak_rss / GB:.2f} GB, PSS "
                  f"{run.peak_pss / GB:.2f} GB, USS {run.peak_uss / GB:.2f} GB, mapped weights "
                  f"{run.peak_weights_pss / GB:.2f} GB, exit {run.code}",
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


def _failed(run: Run) -> bool:
    return bool(run.stopped) or run.code not in OK_CODES.get(run.command, (0,))


def table(name: str, runs: list[Run]) -> str:
    """Seconds and peak GB per command, as ratios to the first (plain) export, and what failed."""
    base = runs[0]
    lines = [f"\n### {name}\n",
             f"| command | seconds | x {base.command} | peak RSS GB | peak PSS GB | x {base.command} | peak USS GB | "
             "mapped weights PSS GB | exit | failure |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for run in runs:
        note = error_line(run).replace("|", "\\|") if _failed(run) else ""
        at_least = ">= " if run.stopped else ""  # stopped: the peak it would have reached is higher
        lines.append(f"| {run.command} | {at_least}{run.seconds:.1f} | {_ratio(run.seconds, base.seconds)} | "
                     f"{at_least}{run.peak_rss / GB:.2f} | {at_least}{run.peak_pss / GB:.2f} | "
                     f"{_ratio(run.peak_pss, base.peak_pss)} | {at_least}{run.peak_uss / GB:.2f} | "
                     f"{run.peak_weights_pss / GB:.2f} | {run.code} | {note} |")
    return "\n".join(lines)


def generation_line(runs: list[Run]) -> str:
    """compare's generation check verdict (its first line), where compare ran one."""
    for run in runs:
        if run.command.startswith("compare"):
            found = [line.strip() for line in run.output.splitlines() if line.startswith("Generation check")]
            if found:
                return found[0]
    return ""


def write_page(out: Path, header: str, tables: list[tuple[str, list[Run]]], stamp: dict[str, Any]) -> None:
    """DIR/real_size.json (every run, outputs left out) and DIR/real_size.md (the tables), stamped."""
    out.mkdir(parents=True, exist_ok=True)
    rows = {name: [{key: value for key, value in asdict(run).items() if key != "output"} | {"failed": _failed(run)}
                   for run in runs] for name, runs in tables}
    generation = {name: generation_line(runs) for name, runs in tables if generation_line(runs)}
    (out / "real_size.json").write_text(json.dumps({"stamp": stamp, "header": header, "models": rows,
                                                    "generation": generation}, indent=2) + "\n")
    parts = ["# Real-size models: time and peak memory of each command", "", stamp_markdown(stamp), "",
             f"Generated by `python bench/real_size.py`; {header}. Seconds from start to exit; peak RSS, PSS and "
             "USS summed over the command's process tree (a CLI, its worker, fix --auto's trials), sampled every "
             f"{SAMPLE_S} s (PSS and USS from /proc/PID/smaps; the PSS of memory-mapped weight files is shown "
             "apart: page cache, not memory the tree owns). The ratio is PSS to the baseline's. `compare` on a "
             "checkpoint folder includes its generation check. Load average at "
             f"the end: {stamp.get('load_average_at_end', '?')} (the machine is shared: other processes' load "
             "slows every command alike)."]
    for name, runs in tables:
        parts.append(table(name, runs))
        if name in generation:
            parts.append(f"\ncompare's {generation[name]}")
    (out / "real_size.md").write_text("\n".join(parts) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny configs of the same architectures")
    parser.add_argument("--only", action="append", choices=MODEL_NAMES, help="only this model (repeatable)")
    parser.add_argument("--command", action="append", choices=COMMAND_NAMES,
                        help="only this of Fixport's commands (repeatable; the baseline always runs)")
    parser.add_argument("--exporter", choices=(*EXPORTERS, "both"), default="torchscript",
                        help="the exporter of the plain export and of every command (both: one table each)")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="also write DIR/real_size.json and DIR/real_size.md (e.g. docs/benchmarks)")
    parser.add_argument("--timeout", type=float, default=86400.0, help="Fixport's --timeout for its jobs")
    parser.add_argument("--limit", type=float, default=3 * 3600.0, help="the bench stops a command after this")
    parser.add_argument("--logs", metavar="DIR", help="also save each command's whole output here")
    parser.add_argument("--min-free-gb", type=float, default=1.5, help="stop a command below this free memory")
    args = parser.parse_args()
    env = {key: value for key, value in os.environ.items() if key != QUICK_ENV}
    if args.quick:
        env[QUICK_ENV] = "1"
    stamp = machine_stamp()  # at the start: the load the runs began under
    header = (f"{'quick: tiny configs' if args.quick else 'real size'}, {args.exporter}, OMP_NUM_THREADS="
              f"{os.environ.get('OMP_NUM_THREADS', 'unset')}, {os.cpu_count()} CPU cores, "
              f"{free_memory() / GB:.1f} GB free at the start")
    print(f"real_size bench ({header})")
    tables = []
    for name in args.only or MODEL_NAMES:
        done: dict[str, Run] = {}
        for exporter in EXPORTERS if args.exporter == "both" else (args.exporter,):
            label = f"{name} ({exporter})" if args.exporter == "both" else name
            print(f"{label} ...", file=sys.stderr, flush=True)
            tables.append((label, bench_model(name, args, env, exporter, done)))
            print(table(*tables[-1]), flush=True)
            if args.out:  # after each table: what finished is kept if the bench is stopped
                stamp["load_average_at_end"] = [round(value, 2) for value in os.getloadavg()]
                write_page(args.out, header, tables, stamp)


if __name__ == "__main__":
    main()
