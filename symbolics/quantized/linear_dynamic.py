"""``quantized::linear_dynamic`` as a float ``Gemm``/``MatMul`` with the dequantized weights.

Schema: ``quantized::linear_dynamic(Tensor X, __torch__.torch.classes.quantized.LinearPackedParamsBase
W_prepack, bool reduce_range=False) -> Tensor``. Dequantized float, said so: the int8 weights are
unpacked from the packed parameters and dequantized once at export, and the activations stay float.
torch quantizes the activations per call, so the result differs from torch by about one activation
quantization step (compare with a tolerance of a few 1e-2).
"""

import sys

from fixport.symbolics.api import default_params, fix


def _packed_params(value):
    """The LinearPackedParams object the export holds as a parameter of that name.

    torch hands symbolics an empty ``params_dict`` (the exporter fills a local one), so the
    parameters are read from the exporter's own frame, ``_optimize_graph``'s ``params_dict``.
    """
    name, frame = value.debugName(), sys._getframe()
    while frame is not None:
        found = frame.f_locals.get("params_dict")
        if isinstance(found, dict) and name in found:
            return found[name]
        frame = frame.f_back
    raise RuntimeError("the packed weights of quantized::linear_dynamic are not a parameter of the export")


@fix(
    "quantized::linear_dynamic",
    id="quantized.linear_dynamic_float",
    strategy="quantized",
    title="dynamic-quantized Linear as float MatMul (dequantized weights)",
    description="Unpack the int8 weights, dequantize them at export, and run a float MatMul + Add.",
    min_opset=9,
    notes="Not bit-exact: torch quantizes activations on the fly, this keeps them float.",
    tolerance=(0.0, 5e-2),  # one activation quantization step: torch quantizes them, this fix does not
    torchscript_only="reads the packed weights from the TorchScript exporter's params_dict (its frame)",
)
def symbolic(g, input, packed, reduce_range=None):
    packed_params = _packed_params(packed)
    # the exporter holds the packed object's state: (int8 weight, float bias)
    weight, bias = packed_params[:2] if isinstance(packed_params, tuple) else packed_params.unpack()[:2]
    weight_t = g.op("Constant", value_t=(weight.dequantize() if weight.is_quantized else weight).t().contiguous())
    result = g.op("MatMul", input, weight_t)
    if bias is not None:
        result = g.op("Add", result, g.op("Constant", value_t=bias.detach()))
    return result


# The defaults of the params above; Fixport replaces them with the values set for this fix.
params = default_params(symbolic)
