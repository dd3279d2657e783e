"""Float16 outputs that miss float16's tolerance only by float16's own rounding pass, judged
against the same model run in float32; a real error does not (issue 20, precision)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from fixport.core.checks.low_precision import rounding_note, rounding_only
from fixport.core.foundation.comparison import flatten_outputs
from fixport.core.foundation.low_precision import (
    ROUNDING_MARGIN,
    float32_outputs,
    in_float32,
    widened_to_float32,
    widened_where_used,
)
from fixport.core.project.tolerances import ToleranceTable
from fixport.core.statistics.output_stats import compare_output_lists


def _deep_half_mlp() -> tuple[torch.nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    layers = [torch.nn.Linear(64, 64) for _ in range(12)]
    return torch.nn.Sequential(*layers).eval().half(), (torch.randn(4, 64, dtype=torch.float16),)


def test_float32_reference_leaves_the_model_as_it_was() -> None:
    model, inputs = _deep_half_mlp()
    before = {name: p.clone() for name, p in model.state_dict().items()}
    ((_, wide),) = float32_outputs(model, inputs)
    assert wide.dtype == np.float32
    assert all(p.dtype == torch.float16 and torch.equal(p, before[name]) for name, p in model.state_dict().items())


def test_rounding_passes_and_a_real_error_does_not() -> None:
    model, inputs = _deep_half_mlp()
    with torch.no_grad():
        expected = flatten_outputs(model(*inputs))
    ((_, exact),) = float32_outputs(model, inputs)
    rounded_elsewhere = exact.astype(np.float16)  # as close to float32 as float16 gets: a different rounding
    wrong = (exact + 0.5).astype(np.float16)
    tight = ToleranceTable(atol=1e-6, rtol=1e-6)  # so both miss the tolerance
    verdicts = {}
    for label, actual in (("rounded", rounded_elsewhere), ("wrong", wrong)):
        (stats,) = compare_output_lists(expected, [actual], tight, keep_plot_data=False)
        assert not stats.passed
        verdicts[label] = rounding_only(model, inputs, expected, [actual], [stats]).get(stats.name)
    assert verdicts["wrong"] is None
    found = verdicts["rounded"]
    assert found.dtype == "float16" and found.onnx_error <= found.torch_error * ROUNDING_MARGIN
    note = rounding_note([found, replace(found, output="other")], "at the traced shape")
    assert note.startswith("At the traced shape, 2 outputs (float16) differ") and "torch's own float16 run" in note


def test_compare_passes_half_precision_rounding_and_says_so(cli, model_file) -> None:
    """The whole command: the ONNX session is gone before the float32 run (memory at real size),
    and the verdict and its note still reach the report."""

    path = model_file("deep_half.py", """
        import torch

        def build():
            torch.manual_seed(0)
            layers = [torch.nn.Linear(64, 64) for _ in range(12)]
            return torch.nn.Sequential(*layers).eval().half(), (torch.randn(4, 64, dtype=torch.float16),)
    """)
    ran = cli("compare", str(path), "--rtol", "1e-6", "--atol", "1e-6")  # tight: rounding alone misses it
    said = " ".join(ran.stdout.split())
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "but that is float16 rounding" in said and "PASS" in said


def test_the_fix_script_applies_the_same_rule() -> None:
    """The fix script's check (``foundation.script``, carried into the script whole) passes
    the same rounding with a line saying so, and still fails the real error."""
    from fixport.core.foundation.script import half_precision_rounding

    model, inputs = _deep_half_mlp()
    with torch.no_grad():
        expected = flatten_outputs(model(*inputs))
    ((name, exact),) = float32_outputs(model, inputs)
    verdicts = {}
    for label, actual in (("rounded", exact.astype(np.float16)), ("wrong", (exact + 0.5).astype(np.float16)),
                          ("other dtype", exact)):  # float32 where torch gives float16: stays wrong
        failing = {name: f"{name}: max abs diff beyond tolerance"}  # as output_differences reports it
        verdicts[label] = half_precision_rounding(model, inputs, expected, [actual], failing, fix_tolerance=1e-7)
    assert verdicts["wrong"] == {} and verdicts["other dtype"] == {}
    assert verdicts["rounded"][name].startswith(f"{name}: float16 rounding (against the model run in float32, "
                                                "ONNX Runtime is ")


def test_the_fix_script_says_rounding_once_per_shape_however_many_outputs() -> None:
    from fixport.core.foundation.script import rounding_line

    lines = {f"out{i}": f"out{i}: bfloat16 rounding (against the model run in float32, ...)" for i in range(56)}
    assert rounding_line(lines) == f"; {lines['out0']}; 55 more outputs likewise"
    assert rounding_line({"out0": lines["out0"]}) == f"; {lines['out0']}"
    assert rounding_line({}) == ""


class _ReadsAnotherModulesWeight(torch.nn.Module):
    """Casts its input to a child's weight dtype outside the child's forward (as T5's feed-forward does)."""

    def __init__(self) -> None:
        super().__init__()
        self.first, self.second = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(self.first(x).to(self.second.weight.dtype))


def _float32_peak_bytes(model: torch.nn.Module, widening) -> int:
    """The most float32 parameter bytes the model holds at once while it runs under ``widening``."""
    peak = 0

    def measure(*_: object) -> None:
        nonlocal peak
        peak = max(peak, sum(p.numel() * 4 for p in model.parameters() if p.dtype == torch.float32))

    hooks = [m.register_forward_hook(measure) for m in model.modules()]
    with widening(model), torch.no_grad():
        model(torch.randn(4, 64))
    for hook in hooks:
        hook.remove()
    return peak


def test_widening_where_used_holds_one_layer_in_float32_and_computes_the_same() -> None:
    model, (x,) = _deep_half_mlp()
    with widened_to_float32(model), torch.no_grad():
        whole = model(x.float())
    with widened_where_used(model) as owners, torch.no_grad():
        layer_by_layer = model(x.float())
    assert owners == 12 and torch.equal(whole, layer_by_layer)
    assert all(p.dtype == torch.float16 for p in model.parameters())
    layer = 64 * 64 * 4 + 64 * 4
    assert _float32_peak_bytes(model, widened_where_used) == layer
    assert _float32_peak_bytes(model, widened_to_float32) == 12 * layer


def test_a_model_reading_another_modules_weight_is_widened_whole_and_restored() -> None:
    torch.manual_seed(0)
    model = _ReadsAnotherModulesWeight().eval().to(torch.bfloat16)
    x = torch.randn(2, 8)
    with widened_to_float32(model), torch.no_grad():
        expected = model(x)
    got = in_float32(model, lambda: model(x))
    assert got.dtype == torch.float32 and torch.equal(got, expected)
    assert all(p.dtype == torch.bfloat16 for p in model.parameters())
