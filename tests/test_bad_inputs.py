"""The bad-input battery, command line: every hostile or broken input gets exit 2 (or the stated
code), a message that names the problem, no traceback, no file lost and no process left behind.

One case = one row of :data:`CASES`. The bench (``tests/bad_input_bench.py``) is built once per
module and hashed around every case: a case that changes any of its files fails.
"""
from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from fixport.core.worker.client import DEFAULT_JOB_TIMEOUT_S
from fixport.examples.catalog import example_path
from tests.bad_input_bench import (
    BROKEN_FIX,
    RAISING_FIX,
    Case,
    Outcome,
    assert_clear_failure,
    make_bench,
    run_cli,
    snapshot,
    wait_for_no_processes,
    write_project,
)

THRESHOLD = str(example_path("threshold"))
LOOP_TIMEOUT_S = 4

CASES = [
    # ---- model files ----
    Case("missing model", ["check", "{bench}/missing.py"], 2, ("not found", "missing.py")),
    Case("folder as model", ["check", "{bench}/folder.onnx"], 2, ("folder",)),
    Case("FIFO as model", ["check", "{bench}/pipe.onnx"], 2, ("FIFO", "not a regular file")),
    Case("device as model", ["check", "/dev/zero"], 2, ("device",)),
    Case("unknown suffix", ["check", "{bench}/notes.txt"], 2, ("Unknown model file type", ".txt")),
    Case("empty onnx", ["check", "{bench}/empty.onnx"], 2, ("empty.onnx", "empty (0 bytes)")),
    Case("onnx without nodes", ["check", "{bench}/no_nodes.onnx"], 2, ("no_nodes.onnx", "no graph")),
    Case("garbage onnx", ["check", "{bench}/garbage.onnx"], 2, ("garbage.onnx", "not a readable ONNX")),
    Case("syntax error", ["check", "{bench}/syntax_error.py"], 2, ("Syntax error in syntax_error.py line 2",)),
    Case("null bytes", ["check", "{bench}/null_bytes.py"], 2, ("null_bytes.py", "null bytes")),
    Case("sys.exit in model file", ["check", "{bench}/exits.py"], 2, ("sys.exit(5)", "exits.py line 2")),
    Case("sys.exit in forward()", ["check", "{bench}/exits_in_forward.py"], 2, ("called sys.exit(5)",)),
    Case("model file raises", ["check", "{bench}/raises.py"], 2, ("RuntimeError", "model file boom", "line 2")),
    Case("no build()", ["check", "{bench}/no_build.py"], 2, ("neither build()",)),
    Case("build() returns an int", ["check", "{bench}/builds_an_int.py"], 2, ("must return (model, args)",)),
    Case("garbage pt2", ["check", "{bench}/garbage.pt2"], 2, ("garbage.pt2", "ExportedProgram")),
    Case("pt2 without a program", ["check", "{bench}/no_program.pt2"], 2, ("no_program.pt2", "no exported program")),
    Case("garbage pt", ["check", "{bench}/garbage.pt"], 2, ("garbage.pt", "not a PyTorch archive")),
    # ---- inputs ----
    Case("input names no model input", ["check", "{bench}/tiny.py", "--input", "y=1x3"], 2,
         ("no input named 'y'", "its inputs are: x")),
    Case("zero dimension", ["check", "{bench}/tiny.py", "--input", "x=0x3"], 2, ("zero dimension",)),
    Case("absurd input size", ["check", "{bench}/tiny.py", "--input", "x=100000x100000x1000:float64"], 2,
         ("would allocate", "TiB", "float64")),
    Case("unreadable spec", ["check", "{bench}/tiny.py", "--input", "x=oops"], 2, ("NAME=DIMS",)),
    Case("unknown dtype", ["check", "{bench}/tiny.py", "--input", "x=1x3:complex7"], 2, ("Unknown dtype",)),
    Case("missing inputs file", ["check", "{bench}/tiny.py", "--inputs", "{bench}/missing.npz"], 2, ("not found",)),
    Case("FIFO inputs file", ["check", "{bench}/tiny.py", "--inputs", "{bench}/pipe.npz"], 2, ("not a regular file",)),
    Case("garbage inputs file", ["check", "{bench}/tiny.py", "--inputs", "{bench}/garbage.npz"], 2,
         ("Cannot read inputs",)),
    Case("bad dynamic axes", ["check", "{bench}/tiny.py", "--dynamic-axes", "{{x"], 2, ("--dynamic-axes",)),
    # ---- timeouts ----
    *(Case(f"timeout {value}", ["check", "{bench}/tiny.py", f"--timeout={value}"], 2,
           ("--timeout", "finite number of seconds above 0")) for value in ("nan", "-5", "0", "inf", "soon")),
    Case("looping build() stops at the timeout", ["check", "{bench}/loops.py", "--timeout", str(LOOP_TIMEOUT_S)], 2,
         (f"no progress for {LOOP_TIMEOUT_S} s", "--timeout SECONDS", f"default {DEFAULT_JOB_TIMEOUT_S:g} s")),
    # ---- projects and fixes ----
    Case("missing project", ["export", "{bench}/tiny.py", "--project", "{bench}/missing.fixport.json",
                             "-o", "{out}/x.onnx"], 2, ("Project file not found",), absent=("x.onnx",)),
    Case("project not JSON", ["export", "{bench}/tiny.py", "--project", "{bench}/not_json.fixport.json",
                              "-o", "{out}/x.onnx"], 2, ("Cannot read project",), absent=("x.onnx",)),
    Case("project is a list", ["export", "{bench}/tiny.py", "--project", "{bench}/a_list.fixport.json",
                               "-o", "{out}/x.onnx"], 2, ("not a Fixport project",), absent=("x.onnx",)),
    Case("script with a fix that does not compile", ["script", "{bench}/broken_fix.fixport.json",
                                                     "-o", "{out}/fix.py"], 2,
         ("does not compile at line 1", "decompose.threshold_where"), absent=("fix.py",)),
    Case("fix without --auto", ["fix", "{bench}/tiny.py", "-o", "{out}/p.fixport.json"], 2, ("--auto",)),
    Case("fix -o naming the model to write", ["fix", "{bench}/tiny.py", "--auto", "-o", "{out}/fixed.onnx"], 2,
         ("names the project file", "-o fixed.fixport.json --onnx"), absent=("fixed.onnx",)),
    # ---- outputs ----
    Case("export over the model", ["export", "{bench}/tiny.py", "-o", "{bench}/tiny.py"], 2,
         ("is the model file", "Nothing was written")),
    Case("fix over the model", ["fix", "{bench}/tiny.py", "--auto", "-o", "{bench}/tiny.py"], 2,
         ("is the model file",)),
    Case("fix --onnx over -o", ["fix", "{bench}/tiny.py", "--auto", "-o", "{out}/p.json", "--onnx", "{out}/p.json"],
         2, ("is the output (-o)",), absent=("p.json",)),
    Case("export over the inputs file", ["export", "{bench}/tiny.py", "--inputs", "{bench}/inputs.npz",
                                         "-o", "{bench}/inputs.npz"], 2, ("inputs file",)),
    Case("export over the project", ["export", "{bench}/tiny.py", "--project", "{bench}/plain.fixport.json",
                                     "-o", "{bench}/plain.fixport.json"], 2, ("project",)),
    Case("script over its project", ["script", "{bench}/plain.fixport.json", "-o", "{bench}/plain.fixport.json"],
         2, ("project",)),
    Case("script over the project's model", ["script", "{bench}/plain.fixport.json", "-o", "{bench}/tiny.py"],
         2, ("the project's model file",)),
    Case("export through a symlink to the model", ["export", "{bench}/tiny.py", "-o", "{bench}/link_to_tiny.py"],
         2, ("is the model file",)),
    Case("output under a file", ["export", "{bench}/tiny.py", "-o", "{bench}/a_file/x.onnx"], 2,
         ("Cannot write", "a_file")),
    Case("250-character file name", ["export", "{bench}/tiny.py", "-o", "{out}/" + "n" * 245 + ".onnx"], 0,
         ("Wrote",), creates=("n" * 245 + ".onnx",)),
    # ---- compare ----
    Case("compare with an ONNX file of other shapes", ["compare", "{bench}/tiny.py", "--onnx",
                                                       "{bench}/other_shape.onnx"], 2,
         ("other_shape.onnx", "does not fit", "1x4", "1x3")),
    Case("compare with an empty ONNX file", ["compare", "{bench}/tiny.py", "--onnx", "{bench}/empty.onnx"], 2,
         ("empty.onnx", "empty")),
    Case("compare with unsupported nodes", ["compare", THRESHOLD], 2, ("run `python main.py fix", "--project")),
    Case("compare with a fix that raises", ["compare", THRESHOLD, "--project", "{bench}/raising_fix.fixport.json"],
         2, ("decompose.threshold_where", "raised at line 2", "my bug in the fix")),
    Case("compare an ONNX file as the model", ["compare", "{bench}/other_shape.onnx"], 2, ("is an ONNX file",)),
]


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> Path:
    folder = make_bench(tmp_path_factory.mktemp("bench"))
    write_project(folder / "plain.fixport.json", folder / "tiny.py")
    write_project(folder / "broken_fix.fixport.json", Path(THRESHOLD), BROKEN_FIX)
    write_project(folder / "raising_fix.fixport.json", Path(THRESHOLD), RAISING_FIX)
    (folder / "link_to_tiny.py").symlink_to(folder / "tiny.py")
    return folder


def test_the_battery_is_big_enough() -> None:
    assert len(CASES) >= 40
    assert len({case.name for case in CASES}) == len(CASES)


@pytest.mark.subprocess
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input(case: Case, bench: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    before = snapshot(bench)
    outcome = run_cli(case.command(bench, out), case.timeout_s)
    assert_clear_failure(outcome, case)
    assert snapshot(bench) == before, f"{case.name}: a bench file changed"
    assert not wait_for_no_processes(outcome.tag), f"{case.name}: processes left running"
    _assert_outputs(case, out)
    if case.name.startswith("looping"):
        assert outcome.seconds < LOOP_TIMEOUT_S + 15, "the timeout did not stop the job in time"


# The looping case stops the worker it runs on: on the shared warm one, the next test would pay its restart.
IN_PROCESS_CASES = [case for case in CASES if not case.name.startswith("looping")]


@pytest.mark.parametrize("case", IN_PROCESS_CASES, ids=[case.name for case in IN_PROCESS_CASES])
def test_bad_input_in_process(case: Case, bench: Path, tmp_path: Path, cli) -> None:
    """The same answers from main() on the warm worker: the fast tier's battery (no process to leave)."""
    out = tmp_path / "out"
    out.mkdir()
    before = snapshot(bench)
    started = time.monotonic()
    ran = cli(*case.command(bench, out))
    assert_clear_failure(Outcome(ran.returncode, ran.stdout + ran.stderr, time.monotonic() - started), case)
    assert snapshot(bench) == before, f"{case.name}: a bench file changed"
    _assert_outputs(case, out)


def _assert_outputs(case: Case, out: Path) -> None:
    for name in case.creates:
        assert (out / name).is_file(), f"{case.name}: {name} was not written"
    for name in case.absent:
        assert not (out / name).exists(), f"{case.name}: {name} was written"
    assert not [p.name for p in out.iterdir() if p.name.startswith(".fixport-")], "temporary file left behind"


def test_outputs_keep_modes_and_symlinks(bench: Path, tmp_path: Path, cli) -> None:
    """An existing output keeps its mode, a new one gets 0666 minus the umask, a symlink stays a link."""
    existing, target, link = tmp_path / "existing.onnx", tmp_path / "target.onnx", tmp_path / "link.onnx"
    existing.write_bytes(b"old")
    existing.chmod(0o640)
    target.write_bytes(b"old")
    link.symlink_to(target)
    for output in (existing, link, tmp_path / "new.onnx"):
        exported = cli("export", str(bench / "tiny.py"), "-o", str(output))
        assert exported.returncode == 0, exported.stdout + exported.stderr
    assert stat.S_IMODE(existing.stat().st_mode) == 0o640
    assert link.is_symlink() and target.read_bytes().startswith(b"\x08")  # ONNX bytes went to the target
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.onnx").stat().st_mode) == 0o666 & ~umask


def test_atomic_write_errors_name_the_problem(tmp_path: Path) -> None:
    """Folders that cannot be written are the user's to fix: a FileWriteError, never an OSError."""
    from fixport.core.project.atomic_files import FileWriteError, atomic_write_bytes

    (tmp_path / "a_file").write_text("x")
    with pytest.raises(FileWriteError, match="Cannot write"):
        atomic_write_bytes(tmp_path / "a_file" / "out.onnx", b"data")
    with pytest.raises(FileWriteError, match="too long"):
        atomic_write_bytes(tmp_path / ("n" * 300), b"data")
    if os.geteuid() != 0:  # root writes into read-only folders
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
        with pytest.raises(FileWriteError, match="not writable"):
            atomic_write_bytes(locked / "out.onnx", b"data")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"] + (["locked"] if os.geteuid() != 0 else [])


def test_atomic_write_keeps_mode_and_link(tmp_path: Path) -> None:
    from fixport.core.project.atomic_files import atomic_write_text

    target, link = tmp_path / "target.txt", tmp_path / "link.txt"
    target.write_text("old")
    target.chmod(0o604)
    link.symlink_to(target)
    atomic_write_text(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o604
    long_name = tmp_path / ("n" * 250)
    atomic_write_text(long_name, "fits")
    assert long_name.read_text() == "fits"
