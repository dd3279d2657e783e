"""Issue 49.4: every generated template's ``symbolic`` takes the arguments of every overload of its op.

TorchScript calls one symbolic for all overloads of a kind with the node's inputs positionally
(``aten::squeeze`` has ``default``, ``dim`` and ``dims``); the dynamo exporter calls a function
template for its one overload. A table over every op the synthesis writes a template for, and
every overload of it, binds the generated ``symbolic`` to that overload's argument count.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable

import pytest
import torch

from fixport.core.exporters.template_compiler import compile_template_source
from fixport.symbolics.synthesis.decomposition import decomposition_template
from fixport.symbolics.synthesis.materialise import materialised_template
from fixport.symbolics.synthesis.standard_op import (
    _onnx_ops_by_folded_name,
    find_standard_op,
    standard_op_function_template,
    standard_op_template,
)

TORCHSCRIPT_OPSETS = (9, 13, 17, 20)
GRAPH = object()  # the symbolic only binds here, never runs


def _aten_kinds() -> list[str]:
    return sorted({schema.name for schema in torch._C._jit_get_all_schemas() if schema.name.startswith("aten::")})


def _overloads(kind: str) -> list[tuple[str, int]]:
    """(overload name, argument count) of each overload a graph can hold: the ``out=`` forms are left out."""
    return [(schema.overload_name or "default", len(schema.arguments))
            for schema in torch._C._jit_get_schemas_for_operator(kind)
            if not any(argument.is_out for argument in schema.arguments)]


def _with_onnx_namesake(opset: int) -> list[str]:
    names = _onnx_ops_by_folded_name(opset)
    return [kind for kind in _aten_kinds() if kind.partition("::")[2].strip("_").replace("_", "").lower() in names]


def _rows(make: Callable[[str, int], str | None], kinds: list[str], opset: int) -> list[tuple[str, str, int, str]]:
    rows = []
    for kind in kinds:
        source = make(kind, opset)
        if source is not None:
            rows += [(kind, overload, count, source) for overload, count in _overloads(kind)]
    return rows


def _unbound(rows: list[tuple[str, str, int, str]], graph_first: bool) -> list[str]:
    """Each row whose generated symbolic does not bind its overload's argument count."""
    failures = []
    for kind, overload, count, source in rows:
        signature = inspect.signature(compile_template_source(source, {}, f"<generated {kind}>"))
        arguments = [object()] * count
        try:
            signature.bind(GRAPH, *arguments) if graph_first else signature.bind(*arguments)
        except TypeError as error:
            failures.append(f"{kind}.{overload} ({count} argument(s)): {error}")
    return failures


@pytest.mark.parametrize("opset", TORCHSCRIPT_OPSETS)
def test_every_standard_op_template_takes_every_overload_of_its_op(opset: int) -> None:
    rows = _rows(standard_op_template, _with_onnx_namesake(opset), opset)
    kinds = {row[0] for row in rows}
    assert len(kinds) > 20 and "aten::squeeze" in kinds, sorted(kinds)
    assert not _unbound(rows, graph_first=True)


def test_an_op_returning_no_tensor_has_no_standard_op() -> None:
    """aten::size returns the shape (ONNX Size counts elements), aten::equal one bool (ONNX Equal is
    elementwise): same names, other results."""
    assert find_standard_op("aten::size", 17) is None and find_standard_op("aten::equal", 17) is None
    assert find_standard_op("aten::cosh", 17) is not None


def test_the_squeeze_template_refuses_the_overloads_it_does_not_map_by_name() -> None:
    symbolic = compile_template_source(standard_op_template("aten::squeeze", 17), {}, "<generated aten::squeeze>")
    with pytest.raises(ValueError, match=r"maps only aten::squeeze\(Tensor\(a\) self\).*aten::squeeze\.dim"):
        symbolic(GRAPH, object(), object())


def test_every_generated_dynamo_function_takes_its_overloads_arguments() -> None:
    rows = []
    for kind in _with_onnx_namesake(18):
        for overload, count in _overloads(kind):
            source = standard_op_function_template(f"{kind}.{overload}")
            if source is not None:
                rows.append((f"{kind}.{overload}", overload, count, source))
    assert len(rows) > 20
    assert not _unbound(rows, graph_first=False)


@pytest.mark.parametrize("make", [decomposition_template, materialised_template])
def test_replayed_and_materialised_templates_take_every_overload(make: Callable[[str, str], str | None]) -> None:
    kinds = ["aten::squeeze", "aten::unsqueeze", "aten::sum", "aten::mean", "aten::std", "aten::var",
             "aten::flip", "aten::roll", "aten::cumsum", "aten::diff", "aten::cross", "aten::repeat_interleave"]
    rows = _rows(lambda kind, _opset: make(kind), kinds, 17)
    assert len({row[0] for row in rows}) >= 6
    assert not _unbound(rows, graph_first=True)


def test_the_generated_squeeze_exports_its_overload_and_names_the_others_in_a_real_export() -> None:
    import io

    import numpy as np
    import onnxruntime as ort
    from torch.onnx import register_custom_op_symbolic, unregister_custom_op_symbolic

    class SqueezeAll(torch.nn.Module):
        def forward(self, x):
            return x.squeeze() * 2

    class SqueezeDim(torch.nn.Module):
        def forward(self, x):
            return x.squeeze(1) * 2

    symbolic = compile_template_source(standard_op_template("aten::squeeze", 17), {}, "<generated aten::squeeze>")
    x = torch.randn(3, 1, 4)
    register_custom_op_symbolic("aten::squeeze", symbolic, 17)
    try:
        buffer = io.BytesIO()
        torch.onnx.export(SqueezeAll(), (x,), buffer, dynamo=False, opset_version=17)
        session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
        (actual,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
        np.testing.assert_allclose(actual, SqueezeAll()(x).numpy())
        with pytest.raises(ValueError, match=r"maps only aten::squeeze\(Tensor\(a\) self\).*the node has 2"):
            torch.onnx.export(SqueezeDim(), (x,), io.BytesIO(), dynamo=False, opset_version=17)
    finally:
        unregister_custom_op_symbolic("aten::squeeze", 17)
