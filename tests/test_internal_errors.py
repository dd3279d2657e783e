"""Issue 49.4: an exception in Fixport's own code is a defect, said as one, never a note on the model.

`compare` keeps its outputs when the per-node analysis fails; where it fails in Fixport's own code
the result carries an internal error (with its traceback for the log), and the command line says
"Fixport bug" on stderr with the log file's path. Failures of torch or ONNX Runtime stay notes.
"""
from __future__ import annotations

import pytest
import torch

import fixport.core.comparison.intermediates as intermediates
from fixport.cli.error_log import report_internal_errors
from fixport.core.comparison.compare_job import compare
from fixport.core.foundation.comparison import difference_metrics
from fixport.core.records.requests import CompareRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.internal_error import internal_error, raised_in_fixport
from fixport.examples.catalog import example_path


def _raised(call) -> BaseException:
    try:
        call()
    except Exception as error:  # the error itself is what the test looks at
        return error
    raise AssertionError("expected an exception")


def test_where_an_exception_was_raised_decides_whether_it_is_fixports() -> None:
    import onnxruntime

    assert raised_in_fixport(_raised(lambda: difference_metrics(None, [1.0], 0.0, 0.0)))
    # torch's kernel fails in C++: the innermost Python frame is this file's, in Fixport's folder
    assert not raised_in_fixport(_raised(lambda: torch.ones(2) @ torch.ones(3)))
    assert not raised_in_fixport(_raised(lambda: onnxruntime.InferenceSession(b"not a model")))


def test_a_bug_in_per_node_analysis_is_an_internal_error_not_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    # A defect in Fixport's own code on the analysis's path (a graph that is not there).
    monkeypatch.setattr(intermediates, "mark_inherited_errors",
                        lambda graph, errors: intermediates.match_values(None, set()))
    result = compare(CompareRequest(ModelRequest(str(example_path("autograd_numpy"))), {}, runs=1))
    assert result.outputs and result.node_analysis is None
    assert not [m for m in result.messages if "Per-node analysis failed" in m], result.messages
    (error,) = result.internal_errors
    assert error.step == "per-node analysis" and error.error.startswith("AttributeError: 'NoneType'")
    assert "match_values" in error.details
    assert result.to_json()["internal_errors"] == [{"step": error.step, "error": error.error}]


def test_the_command_line_says_fixport_bug_and_writes_the_traceback(tmp_path, capsys) -> None:
    error = internal_error("per-node analysis", _raised(lambda: difference_metrics(None, [1.0], 0.0, 0.0)))
    report_internal_errors([error], tmp_path)
    printed = capsys.readouterr().err
    assert printed.startswith("error: Fixport bug: the per-node analysis stopped with ")
    (log,) = tmp_path.glob("error-*.log")
    assert f"(the details are in {log})" in printed
    assert "Traceback" in log.read_text() and "difference_metrics" in log.read_text()
