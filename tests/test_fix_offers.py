"""Issue 46: the fix-offers job names, for one problem, the fixes of the new kinds `fix --auto` would
try, from the exporter's own candidates and capture settings (the Template dock lists them)."""
from __future__ import annotations

from fixport.core.fixing.fix_offers import fix_offers
from fixport.core.records.fix_offers import diff_places
from fixport.core.records.fix_records import FAMILY_CAPTURE_SETTING
from fixport.core.records.requests import FixOffersRequest
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason


def _problem(reason: ProblemReason, kind: str = "aten::view.default") -> UnsupportedNode:
    return UnsupportedNode(kind, "view", reason, "wrong at length=9", "", "model.py:7")


def test_a_size_dynamo_pinned_is_offered_torchs_suggested_dims_as_an_export_setting() -> None:
    answer = fix_offers(FixOffersRequest(_problem(ProblemReason.SHAPE_SPECIALISED), 18, "dynamo"))
    assert [(o.family, o.setting) for o in answer.offers] == [(FAMILY_CAPTURE_SETTING, "suggested_dims")]
    (offer,) = answer.offers
    assert offer.offer_id == "setting.suggested_dims" and offer.mapping is None and not offer.is_diff
    assert offer.change.startswith("export option capture_settings: + suggested_dims\nwhat: each declared dynamic")


def test_without_a_change_to_make_nothing_is_offered_and_an_op_problem_asks_no_exporter() -> None:
    # TorchScript has no capture settings: a folded size with no line it can change gets no offer
    assert fix_offers(FixOffersRequest(_problem(ProblemReason.SHAPE_SPECIALISED), 17, "torchscript")).offers == []
    unsupported = _problem(ProblemReason.NO_SYMBOLIC, "aten::cosh")
    assert fix_offers(FixOffersRequest(unsupported, 17, "torchscript")).offers == []



def test_diff_places_name_the_first_changed_line_of_each_hunk() -> None:
    diff = ("--- m.py (as it is)\n+++ m.py (changed)\n@@ -19,3 +19,3 @@\n         n = 1\n-        a = 2\n"
            "+        a = 3\n         b = 4\n@@ -40,2 +40,2 @@\n-x\n+y\n")
    assert diff_places(diff) == ["m.py:20", "m.py:40"]
