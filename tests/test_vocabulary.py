"""The shared vocabulary: reasons keep their JSON spelling, Python-op kinds round-trip, keys split."""
from __future__ import annotations

import json
import pickle

import pytest

from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import (
    ProblemReason,
    base_of_instance_key,
    describe_reason,
    display_kind,
    instance_base,
    instance_key,
    kind_of_instance_base,
    python_op_kind,
    scope_from_onnx_name,
    scope_from_torchscript,
    split_instance_key,
    split_python_op,
)


def test_reasons_serialise_as_their_plain_strings() -> None:
    problem = UnsupportedNode("aten::asinh", "k", ProblemReason.NO_SYMBOLIC, "m", "", "")
    assert json.loads(json.dumps(problem.to_json()))["reason"] == "no_symbolic"
    assert problem.reason == "no_symbolic" and {problem.reason} == {"no_symbolic"}
    assert pickle.loads(pickle.dumps(problem)).reason is ProblemReason.NO_SYMBOLIC
    assert [reason.value for reason in ProblemReason] == [
        "no_symbolic", "symbolic_rejected", "python_op", "custom_op", "runtime_error",
        "capture_failed", "no_onnx_function", "translation_failed", "mismatch", "random_output", "worker_crash",
        "export_failed", "shape_specialised", "baked_input"]


def test_every_reason_has_a_description() -> None:
    assert all(reason.description and reason.description != reason.value for reason in ProblemReason)
    assert describe_reason("python_op") == "autograd.Function without symbolic"
    assert describe_reason("something_new") == "something_new"


@pytest.mark.parametrize("kind, name", [("prim::PythonOp[MyClip]", "MyClip"), ("prim::PythonOp", None)])
def test_python_op_kinds_round_trip(kind: str, name: str | None) -> None:
    assert split_python_op(kind) == ("prim::PythonOp", name)
    assert python_op_kind(name) == kind
    assert display_kind("prim::PythonOp", name) == kind


def test_other_kinds_are_not_python_ops() -> None:
    assert split_python_op("aten::relu") == ("aten::relu", None)
    assert split_python_op("aten::relu", "kept") == ("aten::relu", "kept")
    assert display_kind("aten::relu", "ignored") == "aten::relu"


def test_scopes_from_onnx_names_and_torchscript_scope_names() -> None:
    assert scope_from_onnx_name("/layer1/0/conv1/Conv") == "layer1/0/conv1"
    assert scope_from_onnx_name("/layer1//conv1/Conv") == "layer1/conv1"
    assert scope_from_onnx_name("/Conv") == "" and scope_from_onnx_name("Constant_12") == ""
    assert scope_from_torchscript("M::/Sequential::features/Block::features.1") == "features/1"
    assert scope_from_torchscript("M::/Sequential::features/Block::1") == "features/1"


def test_instance_keys_split_back_into_their_parts() -> None:
    base = instance_base("layer1/0", "model.py:12", "aten::relu")
    key = instance_key(base, 3)
    assert key == "layer1/0|model.py:12|aten::relu|3"
    assert base_of_instance_key(key) == base and kind_of_instance_base(base) == "aten::relu"
    assert split_instance_key(key) == ("layer1/0", "model.py:12", "aten::relu")
    assert split_instance_key("only") == ("only", "", "")
