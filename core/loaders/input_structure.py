"""Example inputs as ``torch.onnx.export`` takes them, seen by the rest of Fixport as named tensors.

``build()`` may return ``(model, args)``, ``(model, kwargs)`` or ``(model, args, kwargs)``, with
nested tuples, lists and dicts, ``None``, Python numbers and transformers' cache objects in them.
The tensors are the pytree leaves of ``(args, kwargs)``; each is named from its path the way
torch.onnx names inputs (``input_ids``, ``past_key_values.0.key``). :class:`StructuredCall` takes
those tensors in that order and calls the model with the structure rebuilt, so both exporters, the
comparison and the fix search run on a plain tuple of tensors.
"""
from __future__ import annotations

# The fix script carries the same rules, so they live in its support, whole; this is the engine's name for them.
from fixport.core.script_support.inputs import (
    CONSTANT_TYPES,
    InputStructure,
    StructuredCall,
    UnsupportedInputError,
    distinct_names,
    flat_model,
    is_plain,
    keyed_output_names,
    leaf_name,
    positional_names,
    register_cache_pytrees,
    split_inputs,
    structure_of,
)

__all__ = ["CONSTANT_TYPES", "InputStructure", "StructuredCall", "UnsupportedInputError", "distinct_names",
           "flat_model", "is_plain", "keyed_output_names", "leaf_name", "positional_names", "register_cache_pytrees",
           "split_inputs", "structure_of"]
