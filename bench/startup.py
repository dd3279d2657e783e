"""From process start to the graph on screen, measured from the user's side.

Launches the real app (`python main.py gui FILE`) as a user would, once per run, and reads when
each graph pane first painted a graph (the app appends a timestamp per pane to the file named
by FIXPORT_FIRST_PAINT_FILE; this bench owns the clock: time.time() just before the launch).
Side by side: the in-process cost of reading the same `.onnx` file into the neutral graph.

Usage: python bench/startup.py [--runs 5] [--only resnet50,bert,10k,50k,resnet18_py,vit_py]
Under Xvfb (DISPLAY set) it draws on that display; otherwise on Qt's offscreen platform.
The generated `.onnx` files are cached in ~/.cache/fixport-bench (ResNet-50 is 102 MB).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = Path.home() / ".cache" / "fixport-bench"
LAUNCH_TIMEOUT_S = 180.0
POLL_S = 0.01


@dataclass(frozen=True)
class Case:
    name: str
    description: str
    panes: tuple[str, ...]  # the panes whose first paint ends the wait


CASES = {
    "resnet50": Case("resnet50", "ResNet-50 .onnx (102 MB with weights)", ("onnx",)),
    "bert": Case("bert", "BERT-like encoder .onnx (12 layers)", ("onnx",)),
    "10k": Case("10k", "synthetic ONNX DAG, 10k nodes", ("onnx",)),
    "50k": Case("50k", "synthetic ONNX DAG, 50k nodes", ("onnx",)),
    "resnet18_py": Case("resnet18_py", "resnet18 Python model file (clean)", ("source", "onnx")),
    "vit_py": Case("vit_py", "ViT example model file (4 problems)", ("source", "onnx")),
}

_EXPORT_SCRIPT = """
import sys, torch
torch.manual_seed(0)
kind, path = sys.argv[1], sys.argv[2]
if kind == "resnet50":
    from torchvision.models import resnet50
    model, inputs = resnet50(weights=None).eval(), (torch.randn(1, 3, 224, 224),)
else:
    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False).eval()
    inputs = (torch.randn(1, 128, 256),)
torch.onnx.export(model, inputs, path, opset_version=17, dynamo=False)
"""


def model_file(name: str) -> Path:
    """The file a case opens; generated `.onnx` files are cached between runs."""
    if name == "resnet18_py":
        return REPO / "examples" / "resnet18_clean.py"
    if name == "vit_py":
        return REPO / "examples" / "vit_tiny.py"
    path = CACHE / f"{name}.onnx"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    if name in ("10k", "50k"):
        sys.path.insert(0, str(REPO / "bench"))
        import onnx
        from graphs import synthetic_onnx_model

        onnx.save(synthetic_onnx_model(10_000 if name == "10k" else 50_000), str(path))
    else:
        subprocess.run([sys.executable, "-c", _EXPORT_SCRIPT, name, str(path)], check=True,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    return path


def launch_to_first_paint(path: Path, panes: tuple[str, ...]) -> dict[str, float]:
    """Seconds from launching the app to each pane's first painted graph."""
    with tempfile.TemporaryDirectory(prefix="fixport-startup-") as temp:
        marks = Path(temp) / "first-paint.txt"
        env = dict(os.environ, FIXPORT_FIRST_PAINT_FILE=str(marks), FIXPORT_DATA_DIR=temp,
                   XDG_CONFIG_HOME=temp, OMP_NUM_THREADS="1")
        if not env.get("DISPLAY"):
            env["QT_QPA_PLATFORM"] = "offscreen"
        started = time.time()
        app = subprocess.Popen([sys.executable, str(REPO / "main.py"), "gui", str(path)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            seen: dict[str, float] = {}
            deadline = time.monotonic() + LAUNCH_TIMEOUT_S
            while set(panes) - set(seen):
                if time.monotonic() > deadline or app.poll() is not None:
                    raise RuntimeError(f"{path.name}: no first paint of {panes} (app exit code {app.poll()})")
                if marks.exists():
                    for line in marks.read_text().splitlines():
                        pane, _graph, stamp = line.split()
                        seen.setdefault(pane, float(stamp) - started)
                time.sleep(POLL_S)
            return seen
        finally:
            app.terminate()
            try:
                app.wait(10)
            except subprocess.TimeoutExpired:
                app.kill()


def in_process_read_s(path: Path) -> float:
    """Reading the file into the neutral graph inside one process (what the old bench measured)."""
    code = ("import time, onnx; t = time.perf_counter();"
            "from fixport.core.onnx_io.onnx_graph import onnx_to_graph;"
            f"onnx_to_graph(onnx.load({str(path)!r}, load_external_data=False));"
            "print(time.perf_counter() - t)")
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", default=",".join(CASES))
    args = parser.parse_args()
    print(f"{'case':<48} {'pane':<12} {'median s':>9} {'min-max s':>13}   in-process read s")
    for name in args.only.split(","):
        case = CASES[name]
        path = model_file(name)
        runs = [launch_to_first_paint(path, case.panes) for _ in range(args.runs)]
        read = f"{in_process_read_s(path):.3f}" if path.suffix == ".onnx" else "-"
        for pane in case.panes:
            values = [run[pane] for run in runs]
            spread = f"{min(values):.2f}-{max(values):.2f}"
            print(f"{case.description:<48} {pane:<12} {statistics.median(values):>9.2f} {spread:>13}   {read}",
                  flush=True)


if __name__ == "__main__":
    main()
