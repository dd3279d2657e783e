"""Diagnosis you can trust: `check` compares the numbers, and complex or quantized graphs get a
diagnosis (exit 1 with every problem listed) instead of a failed export (exit 2)."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.vocabulary import ProblemReason
from fixport.examples.catalog import example_path

SOFTPLUS_MODEL = """
    import torch

    class Model(torch.nn.Module):
        def forward(self, x):
            # the exporter drops `threshold`: ONNX's Softplus differs where beta * x > 1
            return torch.nn.functional.softplus(x, beta=2, threshold=1)

    def build():
        torch.manual_seed(0)
        return Model(), (torch.randn(3, 4) * 3,)
"""


def test_check_flags_a_silent_mismatch_with_its_own_reason(cli, model_file) -> None:
    path = model_file("softplus_threshold.py", SOFTPLUS_MODEL)
    ran = cli("check", str(path), "--json")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    (problem,) = json.loads(ran.stdout)["unsupported"]
    assert problem["reason"] == "mismatch"
    assert problem["kind"] == "aten::softplus"  # the node the output comes out of
    assert "max abs" in problem["message"] and "compare" in problem["message"]


RANDOM_MASK_MODEL = """
    import torch

    class Model(torch.nn.Module):
        def forward(self, x):
            noise = torch.rand(x.shape)  # ViTMAE's random masking: torch draws anew on every call
            keep = noise.argsort(dim=-1)[:, :3]
            return torch.gather(x, 1, keep)

    def build():
        return Model(), (torch.randn(2, 6),)
"""


def test_a_random_model_is_named_for_its_randomness_not_blamed_on_the_export(cli, model_file, tmp_path) -> None:
    path = model_file("random_mask.py", RANDOM_MASK_MODEL)
    ran = cli("check", str(path), "--json")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    (problem,) = json.loads(ran.stdout)["unsupported"]
    assert (problem["reason"], problem["kind"], problem["source"]) == (
        "random_output", "aten::rand", "random_mask.py:6")
    assert "changes from run to run" in problem["message"] and "input of forward()" in problem["message"]
    fixed = cli("fix", str(path), "--auto", "-o", str(tmp_path / "random.fixport.json"), "--json")
    assert fixed.returncode == 1
    report = json.loads(fixed.stdout)
    assert report["fixed"] == [] and report["rejected"] == []  # nothing tried: no symbolic can match it


def test_matching_numbers_stay_clean(worker, model_file) -> None:
    path = model_file("softplus_plain.py", SOFTPLUS_MODEL.replace(", beta=2, threshold=1", ""))
    result = worker.run(AnalyzeRequest(ModelRequest(str(path))))
    assert result.unsupported == []
    assert "compare" in result.seconds


def test_complex_tensors_between_unsupported_nodes_are_listed(worker, model_file) -> None:
    path = model_file("rotary.py", """
        import torch

        class Model(torch.nn.Module):
            def forward(self, x):
                rotated = torch.view_as_complex(x.reshape(2, 4, 2)) * torch.polar(torch.ones(4), torch.arange(4.0))
                return torch.view_as_real(rotated).flatten(1)

        def build():
            return Model(), (torch.randn(2, 8),)
    """)
    result = worker.run(AnalyzeRequest(ModelRequest(str(path))))
    kinds = Counter(p.kind for p in result.unsupported)
    assert kinds["aten::view_as_complex"] == 1 and kinds["aten::view_as_real"] == 1
    assert all(p.reason in (ProblemReason.NO_SYMBOLIC, ProblemReason.SYMBOLIC_REJECTED) for p in result.unsupported)


def test_check_lists_complex_and_quantized_examples_with_exit_1(cli) -> None:
    for name, kinds in (("fft_token_mixer", {"aten::fft_fft", "aten::real"}),
                        ("quantized_conv_relu", {"aten::quantize_per_tensor", "quantized::conv2d_relu",
                                                 "aten::dequantize"})):
        ran = cli("check", str(example_path(name)), "--json")
        assert ran.returncode == 1, ran.stdout + ran.stderr
        assert {p["kind"] for p in json.loads(ran.stdout)["unsupported"]} == kinds


def test_a_crash_inside_the_export_is_a_problem_not_an_error(cli, model_file) -> None:
    """torch 2.14 dies of SIGFPE converting unfold on an empty batch: check lists it and goes on (exit 1)."""
    path = model_file("unfold_empty_batch.py", """
        import torch

        class Unfold(torch.nn.Module):
            def forward(self, x):
                return torch.nn.functional.unfold(x, 2, 1, 0, 1)

        def build():
            return Unfold().eval(), (torch.zeros(0, 1, 5, 5),)
    """)
    completed = cli("check", str(path), "--json")
    assert completed.returncode == 1, completed.stderr
    problems = json.loads(completed.stdout)["unsupported"]
    assert [p["reason"] for p in problems] == [ProblemReason.WORKER_CRASH]
    assert "while converting to ONNX" in problems[0]["message"]


@pytest.mark.slow
def test_a_model_that_crashes_while_tracing_cannot_be_opened(cli, model_file) -> None:
    """The model's own code taking the process down is a model that cannot be traced: exit 2, said so."""
    path = model_file("crashes_in_forward.py", """
        import os, signal
        import torch

        class Crashes(torch.nn.Module):
            def forward(self, x):
                os.kill(os.getpid(), signal.SIGSEGV)
                return x

        def build():
            return Crashes().eval(), (torch.zeros(2),)
    """)
    completed = cli("check", str(path))
    assert completed.returncode == 2
    assert "crashed" in completed.stderr and "while tracing the model" in completed.stderr
    assert "Traceback" not in completed.stderr


@pytest.mark.slow
def test_an_export_failing_after_conversion_is_a_problem(cli, model_file) -> None:
    """A complex graph output makes torch's exporter raise after converting every node: listed, exit 1."""
    path = model_file("complex_output.py", """
        import torch

        class ToComplex(torch.nn.Module):
            def forward(self, x):
                return torch.relu(x).to(torch.cfloat)

        def build():
            return ToComplex().eval(), (torch.randn(2, 3),)
    """)
    completed = cli("check", str(path), "--json")
    assert completed.returncode == 1, completed.stderr
    report = json.loads(completed.stdout)
    assert [p["reason"] for p in report["unsupported"]] == [ProblemReason.EXPORT_FAILED]
    assert "view_as_real" in report["unsupported"][0]["message"]
    assert report["source_nodes"] > 0  # the traced graph is still there to look at
