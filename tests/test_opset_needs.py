"""An op ONNX Runtime refuses at the model's opset, not for what it is: the dynamo route raises the
opset to where ONNX has the op (DeformConv from 19) or the attribute (Split's num_outputs from 18),
or takes the types (Equal on floats from 11)."""
from __future__ import annotations

import pytest

from fixport.core.onnx_io.opset_needs import opset_that_runs
from fixport.core.records.requests import AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.examples.catalog import example_path


def test_the_opset_comes_from_onnx_runtimes_own_words() -> None:
    assert opset_that_runs("Error No Op registered for DeformConv with domain_version of 18", 18) == 19
    assert opset_that_runs("Error Unrecognized attribute: num_outputs for operator Split", 17) == 18
    assert opset_that_runs("Error No Op registered for NoSuchOp with domain_version of 18", 18) is None
    assert opset_that_runs("Non-zero status code returned while running Gather node", 17) is None


def test_types_an_op_takes_only_later_name_the_opset_that_takes_them() -> None:
    """kernel_types' words for a node its schema refuses: Equal takes floats from 11, CumSum never bools."""
    assert opset_that_runs("ONNX's Equal-7 does not take T=float (it takes T: bool, int32, int64)", 10) == 11
    assert opset_that_runs("ONNX's Equal-7 does not take T=float/int64 (it takes ...)", 10) == 11
    assert opset_that_runs("ONNX's CumSum-14 does not take T=bool (it takes T: double, float)", 17) is None


@pytest.mark.slow
def test_fix_auto_with_dynamo_raises_the_opset_deform_conv_needs(worker) -> None:
    result = worker.run(AutoFixRequest(ModelRequest(str(example_path("deform_conv2d"))), {"exporter": "dynamo"}))
    assert result.opset_raised == (18, 19)
    assert result.after.unsupported == [] and result.after.options.opset == 19
