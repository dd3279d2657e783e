"""The Template dock's rows for the new kinds of fix (issue 46): a code change, a graph rewrite, a
generated Function or a capture setting, each named in one line, with what it changes."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QListWidgetItem

from fixport.core.records.fix_offers import FixOffer

FIX_OFFER_ROLE = Qt.ItemDataRole.UserRole + 2
FIX_OFFER_TINT = QColor("#e8f5e9")  # apart from the op templates: these change code, graph or settings
SHORT_WHY = 90


def short_why(offer: FixOffer) -> str:
    """What the fix does, without the candidate's asides in brackets, short enough for one row."""
    text = offer.why.split(" (", 1)[0].rstrip(".")
    return text if len(text) <= SHORT_WHY else text[:SHORT_WHY].rstrip() + "…"


def fix_offer_item(offer: FixOffer) -> QListWidgetItem:
    """One row: the fix's name, then the kind of fix it is and what it does."""
    item = QListWidgetItem(f"{offer.name}\n    {offer.family}: {short_why(offer)}")
    item.setData(FIX_OFFER_ROLE, offer)
    item.setBackground(FIX_OFFER_TINT)
    item.setToolTip(f"{offer.name}\n{offer.why}")
    return item


def fix_offer_text(offer: FixOffer) -> str:
    """The dock's description of a fix offer, above what it changes."""
    if offer.setting:
        applies = f"Apply adds {offer.setting} to the project's capture settings and exports again, as Fix all does."
    else:
        applies = "Apply keeps it in the project and the fix script and exports again, as Fix all does."
    shown = ("Below, the change as a diff: the file itself is not changed, the fix makes it while exporting."
             if offer.is_diff else "Below, what it changes:")
    return f"{offer.family}: {offer.why}\n{applies} {shown}"
