"""The words of a fix search, shared by every exporter: candidate families, a candidate, a choice.

Each exporter lists its candidates for a problem strategy by strategy, in the one order of
:data:`fixport.core.records.fix_strategies.FIX_STRATEGIES`
(:meth:`fixport.core.exporters.base.Exporter.fix_candidates`); ``fix --auto``
(:mod:`fixport.core.fixing.auto_fix`) tries them, and the report names the family that made
each fix. No torch import: the window and the command line read choices too.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from fixport.core.project.project import FixMapping

MAX_AUTO_FIX_ROUNDS = 6  # a fix can uncover problems behind it; stop if they never end

FAMILY_STANDARD_OP = "standard_op"  # the ONNX op of the same name and inputs
FAMILY_HAND_WRITTEN = "hand_written"  # a template made for the op
FAMILY_BRIDGE = "torchlib_bridge"  # onnxscript torch_lib's implementation, replayed
FAMILY_DECOMPOSITION = "decomposition_replay"  # torch's (or Fixport's) decomposition
FAMILY_INLINED = "inlined_implementation"  # a custom op's own Python implementation
FAMILY_MATERIALISED = "static_materialisation"  # the constant matrix of a linear op at static shapes
FAMILY_GENERIC = "generic"  # a template that fits any op
FAMILY_KERNEL_TYPES = "kernel_types"  # torch's symbolic, inputs cast to types ONNX Runtime has kernels for
FAMILY_CODE_CHANGE = "capture_code_change"  # code changed for the capture (core.exporters.capture_change_fix)
FAMILY_CUSTOM_DOMAIN = "custom_domain"  # a node ONNX Runtime cannot run: the target runtime must
FAMILY_GRAPH_REWRITE = "graph_rewrite"  # an FX pass on the captured graph before torch.onnx's own passes
FAMILY_TRACED_VALUE_INPUT = "traced_value_input"  # a value the trace baked, kept an input by a generated Function
FAMILY_TRACED_SIZE_CHANGE = "traced_size_change"  # a line changed while traced, so its size stays traced
CODE_CHANGE_FAMILIES = (FAMILY_CODE_CHANGE, FAMILY_TRACED_SIZE_CHANGE)  # fixes that show a diff of the code
CUSTOM_DOMAIN_WHY = "a custom-domain node: ONNX Runtime cannot run it; the target runtime must implement it"


@dataclass(frozen=True)
class GraphRewrite:
    """One node a graph-rewrite fix changed in the captured program, and how."""

    template_id: str
    node: str  # the FX node's name in the captured program
    target: str  # its op overload, "aten.rsub.Scalar"
    change: str  # "its torch.int64 operand unsqueeze cast to torch.float32 first"

    def line(self) -> str:
        return f"{self.node} ({self.target}): {self.change}"


@dataclass
class AutoFixChoice:
    """What `fix --auto` picked for one op kind (or one Function), which family made it and why."""

    kind: str
    python_op_name: str | None
    template_id: str
    why: str
    family: str = ""
    runs_in_onnxruntime: bool = True
    max_abs: float | None = None  # against torch: the node's outputs, or the whole model's
    on_node: bool = False  # decided on the node alone (fixport.core.fixing.node_trials), not the whole model
    shape_specialised: bool = False  # built for the traced sizes (fixport.core.records.traced_sizes names them)
    rewrites: list[GraphRewrite] = field(default_factory=list)  # a graph rewrite: the nodes it changed


@dataclass
class Candidate:
    """One fix to try for a problem kind."""

    mapping: FixMapping
    family: str
    why: str
    runs_in_onnxruntime: bool = True
    shape_specialised: bool = False  # built for the traced sizes

    def choice(self, max_abs: float | None = None, on_node: bool = False) -> AutoFixChoice:
        return AutoFixChoice(self.mapping.target_kind, self.mapping.python_op_name, self.mapping.template_id,
                             self.why, self.family, self.runs_in_onnxruntime, max_abs, on_node,
                             self.shape_specialised)


def custom_domain_params(kind: str, python_op_name: str | None = None) -> dict[str, str]:
    """'mylib::soft_clip' (or 'mylib::soft_clip.default') -> domain 'mylib', op 'SoftClip';
    torch's own ops go to domain 'custom'."""
    namespace, _, rest = kind.partition("::")
    name = python_op_name or rest.split(".", 1)[0]
    domain = namespace if namespace not in ("aten", "prim") else "custom"
    return {"domain": domain, "op_name": "".join(part[:1].upper() + part[1:] for part in name.split("_"))}
