"""`compare` on CUDA against doing the same by hand: bare torch on the GPU plus bare ONNX Runtime CUDA.

    python bench/cuda_compare.py [--models resnet50,qwen2_0_5b] [--exporter dynamo] [--out DIR] [--quick]

For each model file (bench/cuda_models/ or bench/real_size_models/), one after the other, each in its
own process timed from start to exit:

- **by hand**: what a user writes to get the same answer without Fixport: load the model file,
  ``torch.onnx.export`` it (the same exporter), run the model on the GPU, open an ONNX Runtime CUDA
  session on the file (TF32 off, as Fixport's strict mode) and run it, print the largest difference;
- **compare**: ``python main.py compare MODEL --exporter E --provider cuda --torch-device cuda``
  (outputs, then the per-node analysis);
- **compare, outputs only**: the same with ``--no-node-analysis``.

The table gives the seconds and each Fixport row as a ratio to the by-hand run, stamped with the date,
commit, GPU and versions (``DIR/cuda_compare.md`` and ``.json``). ``--quick`` builds the real-size
models at their tiny configs, to check the harness.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fixport.bench.real_size_models._size import QUICK_ENV
from fixport.core.sweep.stamp import machine_stamp, stamp_markdown

REPO = Path(__file__).resolve().parent.parent
MODEL_FOLDERS = (REPO / "bench" / "cuda_models", REPO / "bench" / "real_size_models")

BY_HAND = """
import importlib.util, sys, numpy as np, onnxruntime as ort, torch
path, out, exporter = sys.argv[1], sys.argv[2], sys.argv[3]
spec = importlib.util.spec_from_file_location("model_file", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
model, inputs = module.build()
model = model.eval()
opset = getattr(module, "FIXPORT_EXAMPLE", {}).get("opset", 18 if exporter == "dynamo" else 17)
torch.onnx.export(model, inputs, out, opset_version=opset, dynamo=exporter == "dynamo")
torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
with torch.no_grad():
    expected = model.cuda()(*[x.cuda() for x in inputs])
expected = (expected if isinstance(expected, (tuple, list)) else [expected])
session = ort.InferenceSession(out, providers=[("CUDAExecutionProvider", {"use_tf32": "0"}), "CPUExecutionProvider"])
names = [i.name for i in session.get_inputs()]
got = session.run(None, dict(zip(names, [x.numpy() for x in inputs])))
print("providers", session.get_providers()[0])
print("max_abs", max(float(np.abs(g - e.float().cpu().numpy()).max()) for g, e in zip(got, expected)))
"""


def model_path(name: str) -> Path:
    for folder in MODEL_FOLDERS:
        if (folder / f"{name}.py").is_file():
            return folder / f"{name}.py"
    raise SystemExit(f"no model file {name}.py in {', '.join(str(f) for f in MODEL_FOLDERS)}")


def timed(command: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """Seconds from start to exit, the exit code and the last line printed."""
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    lines = (done.stdout + done.stderr).strip().splitlines()
    return seconds, done.returncode, " | ".join(lines[-3:]) if lines else ""


def bench_model(name: str, exporter: str, env: dict[str, str]) -> dict[str, object]:
    path = model_path(name)
    with tempfile.TemporaryDirectory() as folder:
        by_hand = timed([sys.executable, "-c", BY_HAND, str(path), str(Path(folder) / "m.onnx"), exporter], env)
    compare = [sys.executable, "main.py", "compare", str(path), "--exporter", exporter, "--provider", "cuda",
               "--torch-device", "cuda", "--timeout", "3600"]
    rows = {"by hand": by_hand, "compare": timed(compare, env),
            "compare, outputs only": timed([*compare, "--no-node-analysis"], env)}
    base = rows["by hand"][0]
    return {"model": name, "exporter": exporter,
            "rows": {label: {"seconds": round(s, 1), "ratio": round(s / base, 2), "exit": code, "said": said}
                     for label, (s, code, said) in rows.items()}}


def markdown(results: list[dict], stamp: dict) -> str:
    lines = [stamp_markdown(stamp), "", "| model | exporter | by hand (s) | compare | compare, outputs only |",
             "|---|---|---|---|---|"]
    for result in results:
        rows = result["rows"]
        cells = [f"{rows[k]['seconds']} s, **{rows[k]['ratio']}x**" + ("" if rows[k]["exit"] == 0 else
                                                                       f" (exit {rows[k]['exit']})")
                 for k in ("compare", "compare, outputs only")]
        lines.append(f"| {result['model']} | {result['exporter']} | {rows['by hand']['seconds']} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,qwen2_0_5b")
    parser.add_argument("--exporter", choices=("torchscript", "dynamo"), default="dynamo")
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--quick", action="store_true", help="the real-size models at their tiny configs")
    args = parser.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if args.quick:
        env[QUICK_ENV] = "1"
    stamp = machine_stamp()
    results = []
    for name in args.models.split(","):
        results.append(bench_model(name, args.exporter, env))
        print(json.dumps(results[-1]), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cuda_compare.json").write_text(json.dumps({"stamp": stamp, "results": results}, indent=1),
                                                encoding="utf-8")
    (args.out / "cuda_compare.md").write_text(markdown(results, stamp), encoding="utf-8")
    print(markdown(results, stamp))


if __name__ == "__main__":
    main()
