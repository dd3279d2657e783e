"""`sweep`: rows from real checks, fixes and comparisons; the cache that resumes; the reports CI reads."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from tests.bad_input_bench import WORKER_MODULE, processes_tagged, wait_for_no_processes
from tests.conftest import REPO, run_main

THRESHOLD = REPO / "examples" / "threshold.py"  # aten::threshold has no symbolic for it; fix --auto fixes it
TINY = """\
import torch


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, {width})

    def forward(self, x):
        return torch.relu(self.linear(x))


def build():
    torch.manual_seed(0)
    return Tiny().eval(), (torch.randn(2, 4),)
"""
EXIT_INTERRUPTED = 130
FIRST_ROW_TIMEOUT_S = 120
STOP_TIMEOUT_S = 15  # Ctrl+C to exit: cancel, then the workers stopped


def _zoo(folder: Path, widths: tuple[int, ...] = (3,)) -> Path:
    """A folder of tiny models, with a helper module beside them that is not a model."""
    folder.mkdir(parents=True, exist_ok=True)
    for width in widths:
        (folder / f"tiny_{width}.py").write_text(TINY.format(width=width), encoding="utf-8")
    (folder / "_helpers.py").write_text("VALUE = 1\n", encoding="utf-8")
    return folder


def test_targets_are_model_files_and_checkpoint_folders(tmp_path: Path) -> None:
    from fixport.core.sweep.targets import content_hash, sweep_targets

    zoo = _zoo(tmp_path / "zoo", (3, 5))
    (zoo / "notes.txt").write_text("not a model", encoding="utf-8")
    (zoo / "plain.py").write_text("x = 1\n", encoding="utf-8")  # no build(): a helper, not a model
    checkpoint = zoo / "bert-tiny"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text("{}", encoding="utf-8")
    (checkpoint / "model.safetensors").write_bytes(b"weights")
    found = sweep_targets([str(zoo / "tiny_5.py"), str(zoo)])
    assert found == {(zoo / "tiny_5.py").resolve(): "tiny_5.py", checkpoint.resolve(): "bert-tiny",
                     (zoo / "tiny_3.py").resolve(): "tiny_3.py"}
    assert list(found)[1:] == [checkpoint.resolve(), (zoo / "tiny_3.py").resolve()]
    before = content_hash(checkpoint)
    (checkpoint / "model.safetensors").write_bytes(b"other weights")
    assert content_hash(checkpoint) != before
    assert content_hash(zoo / "tiny_3.py") != content_hash(zoo / "tiny_5.py")


def test_rows_from_check_fix_and_compare(worker, tmp_path: Path) -> None:
    from fixport.core.sweep.model_sweep import sweep_model
    from fixport.core.sweep.rows import SweepSettings

    steps: list[str] = []
    unfixed = sweep_model(worker, THRESHOLD, "torchscript", SweepSettings(), on_step=steps.append)
    assert (unfixed.status, unfixed.verdict, unfixed.passed) == ("problems", "not compared", False)
    assert unfixed.problems == ["aten::threshold (symbolic_rejected)"]
    assert "aten::threshold (symbolic_rejected); --fix tries" in unfixed.message
    assert steps == ["check"]
    fixed = sweep_model(worker, THRESHOLD, "torchscript", SweepSettings(fix=True))
    assert (fixed.status, fixed.verdict) == ("fixed", "pass"), fixed
    assert len(fixed.fixes) == 1 and fixed.fixes[0].startswith("aten::threshold: ")
    assert fixed.max_abs is not None and fixed.max_abs <= 1e-5 and set(fixed.seconds) == {"check", "fix", "compare"}
    tiny = _zoo(tmp_path) / "tiny_3.py"
    clean = sweep_model(worker, tiny, "dynamo", SweepSettings(opset=18))
    assert (clean.status, clean.verdict, clean.opset, clean.problems) == ("clean", "pass", 18, [])
    missing = sweep_model(worker, tmp_path / "gone.py", "torchscript", SweepSettings())
    assert (missing.status, missing.verdict) == ("error", "error") and "not found" in missing.message


def test_reports_read_back_and_junit_parses(tmp_path: Path) -> None:
    import junitparser

    from fixport.core.sweep.reports import junit_xml, read_sweep_json, write_json, write_markdown
    from fixport.core.sweep.rows import SweepRow, SweepSettings
    from fixport.core.sweep.stamp import machine_stamp

    rows = [SweepRow("/m/a.py", "torchscript", "fixed", ["aten::threshold (symbolic_rejected)"],
                     ["aten::threshold: t [template]"], [], 12, "pass", 0.0, "", "", {"check": 1.0}),
            SweepRow("/m/a.py", "dynamo", "clean", [], [], [], 18, "fail", 0.5, "/conv/Conv (Conv)",
                     "output y beyond tolerance", {"check": 2.0, "compare": 1.0}),
            SweepRow("/m/b.py", "dynamo", message="cannot load b.py")]
    settings, stamp = SweepSettings(("torchscript", "dynamo"), fix=True), machine_stamp()
    write_json(tmp_path / "s.json", rows, settings, stamp)
    assert [r.to_json() for r in read_sweep_json(tmp_path / "s.json")] == [r.to_json() for r in rows]
    write_markdown(tmp_path / "s.md", rows, settings, stamp)
    text = (tmp_path / "s.md").read_text(encoding="utf-8")
    assert f"at commit {stamp['commit']}" in text and stamp["machine"] in text and stamp["date"] in text
    assert "| a.py | dynamo | clean | 0 |  | **fail** | 5.00e-01 |" in text
    (tmp_path / "s.xml").write_bytes(junit_xml(rows))
    report = junitparser.JUnitXml.fromfile(str(tmp_path / "s.xml"))
    cases = {case.name: case for suite in report for case in suite}
    assert set(cases) == {"a.py [torchscript]", "a.py [dynamo]", "b.py [dynamo]"}
    assert cases["a.py [torchscript]"].is_passed
    failure, = cases["a.py [dynamo]"].result
    assert isinstance(failure, junitparser.Failure) and "first divergent /conv/Conv (Conv)" in failure.message
    error, = cases["b.py [dynamo]"].result
    assert isinstance(error, junitparser.Error) and error.message == "cannot load b.py"
    assert (report.tests, report.failures, report.errors) == (3, 1, 1)
    with pytest.raises(Exception, match="not a sweep's results"):
        read_sweep_json(_write(tmp_path / "other.json", {"rows": []}))


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_sweep_command_writes_reports_and_a_rerun_reads_the_cache(tmp_path: Path) -> None:
    import junitparser

    zoo = _zoo(tmp_path / "zoo")
    out = tmp_path / "out"
    argv = ["sweep", str(zoo), str(THRESHOLD), "--exporters", "torchscript", "--json", str(out / "s.json"),
            "--markdown", str(out / "s.md"), "--junit", str(out / "s.xml")]
    first = run_main(*argv)
    assert first.returncode == 1, first.stderr  # threshold without --fix: not compared
    assert "[1/2] tiny_3.py torchscript: check" in first.stderr
    rows = json.loads((out / "s.json").read_text(encoding="utf-8"))["rows"]
    assert [(Path(r["model"]).name, r["verdict"]) for r in rows] == [("tiny_3.py", "pass"),
                                                                     ("threshold.py", "not compared")]
    assert len(list((out / ".fixport-sweep").glob("*.json"))) == 2
    suites = junitparser.JUnitXml.fromfile(str(out / "s.xml"))
    assert (suites.tests, suites.failures) == (2, 1)
    again = run_main(*argv, timeout=60)
    assert again.returncode == 1 and "(2 from the cache)" in again.stdout, again.stdout
    assert json.loads((out / "s.json").read_text(encoding="utf-8"))["rows"][0]["cached"] is True
    wrong = run_main("sweep", str(zoo), "--exporters", "torchscript,onnxruntime", timeout=60)
    assert wrong.returncode == 2 and "unknown exporter onnxruntime" in wrong.stderr


def _as_from_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a background test run ignores SIGINT; a terminal does not


def _workers(tag: str) -> set[int]:
    found = set()
    for pid in processes_tagged(tag):
        try:
            if WORKER_MODULE.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.add(pid)
        except OSError:
            continue
    return found


@pytest.mark.slow
def test_ctrl_c_stops_a_parallel_sweep_cleanly_and_a_rerun_resumes(tmp_path: Path) -> None:
    zoo = _zoo(tmp_path / "zoo", (3, 5, 7))
    argv = [sys.executable, str(REPO / "main.py"), "sweep", str(zoo), "--exporters", "torchscript",
            "--jobs", "2", "--json", str(tmp_path / "s.json")]
    tag = uuid.uuid4().hex
    env = dict(os.environ, OMP_NUM_THREADS="1", FIXPORT_BATTERY_TAG=tag)
    sweep = subprocess.Popen(argv, cwd=REPO, env=env, text=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, preexec_fn=_as_from_a_terminal)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(sweep.stderr), daemon=True)
    reader.start()
    seen_workers: set[int] = set()
    try:
        deadline = time.monotonic() + FIRST_ROW_TIMEOUT_S
        while not any("PASS [" in line for line in lines) and time.monotonic() < deadline and sweep.poll() is None:
            seen_workers |= _workers(tag)
            time.sleep(0.05)
        assert any("PASS [" in line for line in lines), "".join(lines)
        assert len(seen_workers) == 2, f"--jobs 2 should run two export workers: {seen_workers}"
        sweep.send_signal(signal.SIGINT)
        sweep.wait(STOP_TIMEOUT_S)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    reader.join(STOP_TIMEOUT_S)
    progress = "".join(lines)
    left = wait_for_no_processes(tag)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"export workers {left} outlived the stopped sweep"
    assert sweep.returncode == EXIT_INTERRUPTED, progress
    stopped = [line for line in progress.splitlines() if line.startswith("stopped:")]
    assert len(stopped) == 1 and "run the same command again to resume" in stopped[0], progress
    assert "Traceback" not in progress
    finished = len(list((tmp_path / ".fixport-sweep").glob("*.json")))
    assert 1 <= finished < 3
    resumed = subprocess.run(argv, cwd=REPO, env=env, text=True, capture_output=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"3 of 3 row(s) passed ({finished} from the cache)" in resumed.stdout, resumed.stdout
    rows = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["rows"]
    assert [Path(row["model"]).name for row in rows] == ["tiny_3.py", "tiny_5.py", "tiny_7.py"]


@pytest.mark.slow
def test_ray_gives_the_same_rows_and_cache(tmp_path: Path) -> None:
    pytest.importorskip("ray.actor")  # not "ray": a folder named ray on sys.path (Ray's /tmp/ray) imports as one
    zoo = _zoo(tmp_path / "zoo")
    common = ["sweep", str(zoo), str(THRESHOLD), "--exporters", "torchscript", "--fix"]
    local = run_main(*common, "--json", str(tmp_path / "local.json"), "--cache", str(tmp_path / "local-cache"))
    assert local.returncode == 0, local.stderr
    on_ray = run_main(*common, "--ray", "local", "--json", str(tmp_path / "ray.json"),
                      "--cache", str(tmp_path / "ray-cache"))
    assert on_ray.returncode == 0, on_ray.stderr
    assert "submitted to Ray" in on_ray.stderr

    def comparable(name: str) -> list[tuple]:
        rows = json.loads((tmp_path / name).read_text(encoding="utf-8"))["rows"]
        return [(r["model"], r["exporter"], r["status"], r["problems"], r["fixes"], r["verdict"], r["opset"])
                for r in rows]

    assert comparable("ray.json") == comparable("local.json")
    assert sorted(p.name for p in (tmp_path / "ray-cache").iterdir()) == \
        sorted(p.name for p in (tmp_path / "local-cache").iterdir())
    from_ray_cache = run_main(*common, "--cache", str(tmp_path / "ray-cache"), timeout=60)
    assert "(2 from the cache)" in from_ray_cache.stdout, from_ray_cache.stdout
