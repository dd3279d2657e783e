"""Issue 36: the order `fix --auto` tries candidates in is one list of strategies; each exporter
implements a strategy or declines it."""
from __future__ import annotations

import pytest

from fixport.core.exporters.choice import exporter_for
from fixport.core.project.project import FixMapping
from fixport.core.records.fix_choices import (
    FAMILY_BRIDGE,
    FAMILY_DECOMPOSITION,
    FAMILY_GENERIC,
    FAMILY_MATERIALISED,
    Candidate,
)
from fixport.core.records.fix_strategies import (
    CAPTURE_CODE_CHANGE,
    CUSTOM_DOMAIN,
    FIX_STRATEGIES,
    GENERIC,
    GRAPH_REWRITE,
    KERNEL_TYPES,
    STANDARD_OP,
    TORCHLIB_BRIDGE,
    TRACED_SIZE_CHANGE,
    TRACED_VALUE_INPUT,
    FixStrategy,
    candidates_in_order,
)
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason


def _candidate(template_id: str) -> Candidate:
    return Candidate(FixMapping(target_kind="aten::x", template_id=template_id, source=""), "family", "why")


def test_candidates_follow_the_list_whatever_order_an_exporter_writes_its_table_in() -> None:
    table = {CUSTOM_DOMAIN: lambda offers: [_candidate(f"custom.{offers}")],
             GENERIC: lambda offers: [_candidate(f"generic.{offers}")],
             STANDARD_OP: lambda offers: [_candidate(f"standard.{offers}")]}
    assert [c.mapping.template_id for c in candidates_in_order(table, "op", allow_custom=False)] == \
        ["standard.op", "generic.op"]  # a node ONNX Runtime cannot run: only when allowed
    assert [c.mapping.template_id for c in candidates_in_order(table, "op", allow_custom=True)] == \
        ["standard.op", "generic.op", "custom.op"]
    with pytest.raises(ValueError, match="not_listed"):
        candidates_in_order({FixStrategy("not_listed", ""): lambda offers: []}, None, allow_custom=False)


@pytest.mark.parametrize("name, declined", [("torchscript", {GRAPH_REWRITE, CAPTURE_CODE_CHANGE}),
                                            ("dynamo", {KERNEL_TYPES, TORCHLIB_BRIDGE, GENERIC,
                                                        TRACED_VALUE_INPUT, TRACED_SIZE_CHANGE})])
def test_each_exporter_implements_strategies_of_the_one_list_or_declines_them(name: str, declined: set) -> None:
    implemented = exporter_for(name).fix_strategies
    assert list(implemented) == [s for s in FIX_STRATEGIES if s in implemented]  # the list's order
    assert set(FIX_STRATEGIES) - set(implemented) == declined


def test_torchscript_candidates_come_strategy_by_strategy() -> None:
    """Bicubic resizing at opset 10: torch_lib's replay, then torch's decomposition, the matrix at
    the traced sizes, then the generic templates, as FIX_STRATEGIES orders them."""
    exporter = exporter_for("torchscript")
    problem = UnsupportedNode("aten::upsample_bicubic2d", "n1", ProblemReason.NO_SYMBOLIC, "", "", "")
    families = [c.family for c in exporter.fix_candidates(problem, 10, exporter.profile.template_library(), False)]
    order = [FAMILY_BRIDGE, FAMILY_DECOMPOSITION, FAMILY_MATERIALISED, FAMILY_GENERIC]
    assert [f for f in dict.fromkeys(families) if f in order] == order, families
