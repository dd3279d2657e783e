"""Every `--json` run prints one JSON object on stdout, failures included (issue 44.4, 49.7): a CI job
parsing stdout gets the error's message, hint and log, never an empty string. stderr keeps the
human message."""
from __future__ import annotations

import argparse
import json

import pytest

from fixport.cli.app import _run_command
from fixport.cli.output import JSON_SCHEMA_VERSION
from tests.conftest import run_main

CLEAN_MODEL = """
    import torch

    def build():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()), (torch.randn(2, 4),)
"""

# forward() runs in eager torch; torch.jit.trace refuses the plain tensor attribute that requires grad.
TRACER_REFUSES_MODEL = """
    import torch

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.scale = torch.randn(4, requires_grad=True)  # a plain attribute, not a Parameter

        def forward(self, x):
            return self.lin(x) * self.scale

    def build():
        torch.manual_seed(0)
        return Model(), (torch.randn(2, 4),)
"""

SLEEPING_MODEL = """
    import time
    import torch

    class Model(torch.nn.Module):
        def forward(self, x):
            time.sleep(120)
            return x + 1

    def build():
        return Model(), (torch.randn(2, 4),)
"""


def error_object(stdout: str, command: str = "check") -> dict:
    """stdout parsed as one JSON object: the error record of a run that exited 2."""
    report = json.loads(stdout)
    assert report["schema_version"] == JSON_SCHEMA_VERSION
    assert report["command"] == command and report["status"] == "error" and report["exit_code"] == 2
    assert set(report["error"]) == {"message", "hint", "log"}
    return report["error"]


def test_a_clean_check_carries_the_schema_version(cli, model_file) -> None:
    checked = cli("check", str(model_file("clean.py", CLEAN_MODEL)), "--json")
    assert checked.returncode == 0, checked.stderr
    report = json.loads(checked.stdout)
    assert report["schema_version"] == JSON_SCHEMA_VERSION and report["unsupported"] == []


def test_a_trace_that_fails_prints_an_error_object(cli, model_file) -> None:
    checked = cli("check", str(model_file("tracer_refuses.py", TRACER_REFUSES_MODEL)), "--json")
    assert checked.returncode == 2
    error = error_object(checked.stdout)
    assert "Cannot insert a Tensor that requires grad" in error["message"]
    assert "tracer_refuses.py line 11" in error["message"]
    assert error["log"] and error["log"] in checked.stderr  # the same log the human message names
    assert error["message"].splitlines()[0] in checked.stderr


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_dynamic_axes_that_name_no_input_are_refused_by_both_exporters(cli, model_file, exporter: str) -> None:
    """torch's TorchScript exporter only warns about such a name and exports every size static."""
    path = model_file("clean.py", CLEAN_MODEL)
    checked = cli("check", str(path), "--exporter", exporter, "--dynamic-axes", '{"y": {"0": "batch"}}', "--json")
    assert checked.returncode == 2
    error = error_object(checked.stdout)
    assert error["message"] == "The dynamic axes name y, which is not an input of clean.py (its inputs: input)."
    assert error["hint"] == 'Name the model\'s inputs in the dynamic axes, e.g. {"input": {"0": "batch"}}.'
    assert "error: The dynamic axes name y" in checked.stderr
    plain = cli("check", str(path), "--exporter", exporter, "--dynamic-axes", '{"y": {"0": "batch"}}')
    assert plain.returncode == 2 and plain.stdout == ""  # without --json: stderr only, as before


@pytest.mark.slow
@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_dynamic_axes_may_name_a_named_output(cli, model_file, exporter: str) -> None:
    checked = cli("check", str(model_file("clean.py", CLEAN_MODEL)), "--exporter", exporter, "--output-names", "y",
                  "--dynamic-axes", '{"input": {"0": "batch"}, "y": {"0": "batch"}}')
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.slow
def test_a_job_stopped_by_the_timeout_prints_an_error_object(model_file) -> None:
    """A fresh process: the stopped job restarts its worker, which the shared warm one should not pay."""
    checked = run_main("check", str(model_file("sleeps.py", SLEEPING_MODEL)), "--timeout", "3", "--json")
    assert checked.returncode == 2
    error = error_object(checked.stdout)
    assert "showed no progress for 3 s" in error["message"]
    assert "--timeout SECONDS" in error["hint"]


def _namespace(handler, **extra) -> argparse.Namespace:
    return argparse.Namespace(command="check", json=True, handler=handler, **extra)


@pytest.mark.parametrize("raised, message", [
    (KeyboardInterrupt(), "interrupted"),
    (ZeroDivisionError("division by zero"), "unexpected ZeroDivisionError: division by zero"),
])
def test_an_interrupt_or_a_bug_prints_an_error_object(capsys, monkeypatch, tmp_path, raised, message) -> None:
    from fixport.cli import error_log

    monkeypatch.setattr(error_log, "ERROR_LOG_DIR", tmp_path)

    def handler(_args: argparse.Namespace) -> int:
        raise raised

    assert _run_command(_namespace(handler)) == 2
    out, err = capsys.readouterr()
    assert error_object(out)["message"] == message
    assert message in err


def test_sweep_json_names_a_file_so_its_stdout_stays_free(capsys, monkeypatch, tmp_path) -> None:
    """sweep's --json FILE writes its report to the file: a failure prints no object on stdout."""
    from fixport.cli import error_log

    monkeypatch.setattr(error_log, "ERROR_LOG_DIR", tmp_path)

    def handler(_args: argparse.Namespace) -> int:
        raise ZeroDivisionError("boom")

    assert _run_command(argparse.Namespace(command="sweep", json="rows.json", handler=handler)) == 2
    assert capsys.readouterr().out == ""


def test_a_command_line_argparse_refuses_prints_an_error_object(cli, model_file) -> None:
    refused = cli("check", str(model_file("clean.py", CLEAN_MODEL)), "--json", "--timeout", "nan")
    assert refused.returncode == 2
    error = error_object(refused.stdout)
    assert "argument --timeout: 'nan' must be a finite number of seconds above 0" in error["message"]
    assert error["hint"] == "See `python main.py check --help`."
    assert "usage: python main.py check" in refused.stderr and error["message"] in refused.stderr
    assert cli("check", "--timeout", "nan", "m.py").stdout == ""  # no --json: stderr only


def test_a_command_that_fails_after_its_report_keeps_one_object(capsys, monkeypatch, tmp_path) -> None:
    """check --write-changed fails after check printed its report: stdout stays that one object."""
    from fixport.cli import error_log
    from fixport.cli.output import print_json
    from fixport.core.foundation.errors import FixportError

    monkeypatch.setattr(error_log, "ERROR_LOG_DIR", tmp_path)

    def handler(_args: argparse.Namespace) -> int:
        print_json({"model": "m.py"})
        raise FixportError("--write-changed needs a Python model file.", "Change the model's code.")

    assert _run_command(_namespace(handler)) == 2
    out, err = capsys.readouterr()
    assert json.loads(out) == {"schema_version": JSON_SCHEMA_VERSION, "model": "m.py"}
    assert "error: --write-changed needs a Python model file." in err
