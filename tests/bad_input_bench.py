"""The bad-input battery's shared bench: one folder of broken and hostile files, built once,
and the checks every case makes (exit code, words, no traceback, no file lost, no process left)."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TRACEBACK = "Traceback (most recent call last)"
# Never on the command line: window words, blaming ourselves for the user's files, torch's IR dumps.
FORBIDDEN_WORDS = (TRACEBACK, "See the Log", "Fixport bug", "Torch IR graph")
WORKER_MODULE = "fixport.core.worker.server"
ORPHAN_GRACE_S = 2.0

TINY_MODEL = """\
import torch


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 2)

    def forward(self, x):
        return self.linear(x).relu()


def build():
    torch.manual_seed(0)
    return Tiny(), (torch.randn(1, 3),)
"""

BAD_PYTHON_FILES = {
    "syntax_error.py": "import torch\ndef build(:\n    pass\n",
    "null_bytes.py": "x = 1\x00\n",
    "exits.py": "import sys\nsys.exit(5)\n",
    "raises.py": "import torch\nraise RuntimeError('model file boom')\n",
    "no_build.py": "import torch\nx = 1\n",
    "builds_an_int.py": "def build():\n    return 5\n",
    "loops.py": "def build():\n    while True:\n        pass\n",
    "exits_in_forward.py": ("import sys\nimport torch\n\n\nclass Exits(torch.nn.Module):\n"
                            "    def forward(self, x):\n        sys.exit(5)\n\n\n"
                            "def build():\n    return Exits(), (torch.randn(1, 3),)\n"),
}


@dataclass
class Case:
    """One command line and what it must answer."""

    name: str
    argv: list[str]  # {bench} and {out} are replaced by the bench and a per-case output folder
    exit_code: int
    words: tuple[str, ...] = ()  # each must appear in stdout+stderr (case-insensitive)
    creates: tuple[str, ...] = ()  # files (under {out}) that must exist afterwards
    absent: tuple[str, ...] = ()  # files (under {out}) that must not exist afterwards
    timeout_s: float = 120

    def command(self, bench: Path, out: Path) -> list[str]:
        return [part.format(bench=bench, out=out) for part in self.argv]


@dataclass
class Outcome:
    code: int
    text: str
    seconds: float
    tag: str = field(default="")


def make_bench(folder: Path) -> Path:
    """The files every case reads. Written once per test module; no case may change them."""
    import onnx
    from onnx import TensorProto, helper

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tiny.py").write_text(TINY_MODEL, encoding="utf-8")
    for name, text in BAD_PYTHON_FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "empty.onnx").write_bytes(b"")
    (folder / "garbage.onnx").write_bytes(b"\x08\x07" + os.urandom(64))
    onnx.save(helper.make_model(helper.make_graph([], "empty", [], [])), str(folder / "no_nodes.onnx"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    other = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "other", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)])
    other.ir_version = 8
    onnx.save(other, str(folder / "other_shape.onnx"))
    (folder / "garbage.pt2").write_bytes(os.urandom(128))
    with zipfile.ZipFile(folder / "no_program.pt2", "w") as archive:
        archive.writestr("archive/junk.txt", "not an exported program")
    (folder / "garbage.pt").write_bytes(os.urandom(128))
    (folder / "notes.txt").write_text("not a model\n", encoding="utf-8")
    (folder / "folder.onnx").mkdir()
    os.mkfifo(folder / "pipe.onnx")
    os.mkfifo(folder / "pipe.npz")
    (folder / "garbage.npz").write_bytes(os.urandom(64))
    (folder / "not_json.fixport.json").write_text("{ this is not json", encoding="utf-8")
    (folder / "a_list.fixport.json").write_text("[1, 2, 3]\n", encoding="utf-8")
    (folder / "inputs.npz").write_bytes(_npz_with_x())
    (folder / "a_file").write_text("a file, not a folder\n", encoding="utf-8")
    return folder


def _npz_with_x() -> bytes:
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.savez(buffer, x=np.ones((1, 3), dtype=np.float32))
    return buffer.getvalue()


RAISING_FIX = "def symbolic(g, x, threshold, value):\n    raise ValueError('my bug in the fix')\n"
BROKEN_FIX = "def symbolic(g, x, threshold, value)\n    return x\n"


def write_project(path: Path, model: Path, fix_source: str | None = None) -> Path:
    """A project as Fixport saves it; with ``fix_source``, one edited fix for aten::threshold."""
    from fixport.core.project.project import FixMapping, Project, save_project

    mappings = [] if fix_source is None else [FixMapping(
        target_kind="aten::threshold", template_id="decompose.threshold_where", source=fix_source, edited=True)]
    save_project(Project(model_path=str(model), mappings=mappings), path)
    return path


def snapshot(folder: Path) -> dict[str, str]:
    """Every regular file under ``folder``: path -> sha256 (FIFOs and folders are left alone)."""
    hashes = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            hashes[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def run_cli(argv: list[str], timeout_s: float, cwd: Path | None = None) -> Outcome:
    """`python main.py ARGV` as a user runs it; its workers carry a tag so leftovers can be found."""
    tag = uuid.uuid4().hex
    env = dict(os.environ, OMP_NUM_THREADS="1", FIXPORT_BATTERY_TAG=tag)
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(REPO / "main.py"), *argv], check=False, cwd=cwd or REPO, env=env,
                          capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    return Outcome(done.returncode, done.stdout + done.stderr, time.monotonic() - started, tag)


def processes_tagged(tag: str) -> list[int]:
    """Live processes (workers included) started by a run with this tag."""
    found = []
    marker = f"FIXPORT_BATTERY_TAG={tag}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0") and not _is_zombie(entry):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _is_zombie(entry: Path) -> bool:
    try:
        return (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def wait_for_no_processes(tag: str, grace_s: float = ORPHAN_GRACE_S) -> list[int]:
    """The tagged processes still alive after ``grace_s`` (an empty list is the pass)."""
    deadline = time.monotonic() + grace_s
    while True:
        alive = processes_tagged(tag)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def assert_clear_failure(outcome: Outcome, case: Case) -> None:
    """The checks every case makes on what the user sees."""
    assert outcome.code == case.exit_code, f"{case.name}: exit {outcome.code}, wanted {case.exit_code}\n{outcome.text}"
    for word in FORBIDDEN_WORDS:
        assert word not in outcome.text, f"{case.name}: {word!r} reached the user:\n{outcome.text}"
    lowered = outcome.text.lower()
    for word in case.words:
        assert word.lower() in lowered, f"{case.name}: {word!r} missing from:\n{outcome.text}"
