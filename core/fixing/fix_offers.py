"""The fix-offers job: the new kinds of fix for one problem, from the candidates `fix --auto` tries.

The exporter's own candidate generation (``Exporter.fix_candidates``) gives the code change, graph
rewrite or generated Function for the problem; the capture settings that may cure it
(:func:`~fixport.core.project.capture_settings.may_cure`) follow, in the order `fix --auto` tries
them. Each becomes a :class:`~fixport.core.records.fix_offers.FixOffer` naming what it changes.
"""
from __future__ import annotations

import textwrap

from fixport.core.exporters.capture_change_fix import diff_in
from fixport.core.exporters.choice import exporter_for
from fixport.core.project.capture_settings import describe_setting, may_cure
from fixport.core.records.fix_choices import (
    CODE_CHANGE_FAMILIES,
    FAMILY_CODE_CHANGE,
    FAMILY_GRAPH_REWRITE,
    FAMILY_TRACED_SIZE_CHANGE,
    FAMILY_TRACED_VALUE_INPUT,
    Candidate,
)
from fixport.core.records.fix_offers import OFFERED_FOR, FixOffer, FixOffers, diff_places
from fixport.core.records.fix_records import FAMILY_CAPTURE_SETTING
from fixport.core.records.requests import FixOffersRequest
from fixport.core.words.cancel import CancelCallback, ProgressCallback, check_cancelled
from fixport.core.words.problems import UnsupportedNode

CHANGE_WIDTH = 56  # characters: the Template dock's editor at its usual width
NEW_KINDS = (FAMILY_TRACED_SIZE_CHANGE, FAMILY_CODE_CHANGE, FAMILY_GRAPH_REWRITE, FAMILY_TRACED_VALUE_INPUT)


def fix_offers(request: FixOffersRequest, progress: ProgressCallback | None = None,
               cancelled: CancelCallback | None = None) -> FixOffers:
    """The fix-offers job: ``request.problem``'s fixes of the new kinds, in `fix --auto`'s order."""
    check_cancelled(cancelled)
    problem = request.problem
    answer = FixOffers(problem, request.opset, request.exporter)
    if problem.reason not in OFFERED_FOR:
        return answer
    exporter = exporter_for(request.exporter)
    candidates = exporter.fix_candidates(problem, request.opset, exporter.profile.template_library(), False)
    answer.offers.extend(_offer(c, problem) for c in candidates if c.family in NEW_KINDS)
    answer.offers.extend(_setting_offer(s) for s in exporter.profile.capture_settings if may_cure(s, problem))
    return answer


def _offer(candidate: Candidate, problem: UnsupportedNode) -> FixOffer:
    family, mapping = candidate.family, candidate.mapping
    node = f"{problem.kind}" + (f" at {problem.source}" if problem.source else "")
    if family in CODE_CHANGE_FAMILIES:
        diff = diff_in(mapping.source) or problem.code_change
        places = ", ".join(diff_places(diff)) or problem.source or "the model's code"
        name = (f"Change {places} while tracing, so the size stays traced" if family == FAMILY_TRACED_SIZE_CHANGE
                else f"Change {places} for the capture only")
        return FixOffer(name, family, candidate.why, diff, mapping)
    if family == FAMILY_GRAPH_REWRITE:
        return FixOffer(f"Rewrite the captured graph at {node}", family, candidate.why,
                        f"node: {node}\n{_wrapped('rewrite', candidate.why)}", mapping)
    return FixOffer(f"Keep the value an input: {problem.kind} as a generated autograd.Function", family,
                    candidate.why, f"node: {node}\n{_wrapped('becomes', candidate.why)}", mapping)


def _setting_offer(setting: str) -> FixOffer:
    what = describe_setting(setting)
    return FixOffer(f"Capture setting {setting}", FAMILY_CAPTURE_SETTING, what,
                    f"export option capture_settings: + {setting}\n{_wrapped('what', what)}", setting=setting)


def _wrapped(label: str, text: str) -> str:
    """``label: text`` in lines the dock's editor shows without scrolling sideways."""
    return textwrap.fill(f"{label}: {text}", CHANGE_WIDTH, subsequent_indent=" " * (len(label) + 2))
