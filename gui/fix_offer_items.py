"""The Template dock's rows for the new kinds of fix (issue 46): a code change, a graph rewrite, a
generated Function or a capture setting, each named in one line, with what it changes."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QListWidgetItem

from fixport.core.records.fix_offers import FixOffer

FIX_OFFER_ROLE = Qt.ItemDataRole.UserRole + 2
FIX_OFFER_TINT = QColor("#e8f5e9")  # apart from the op templates: these change code, graph or settings
WHAT_IT_CHANGES = {True: "The change to the code (a unified diff; the file itself is not changed: the fix makes "
                         "it while exporting, and the project and the fix script keep it):",
                   False: "What it changes:"}
SHORT_WHY = 160


def fix_offer_item(offer: FixOffer) -> QListWidgetItem:
    """One row: the fix's name, then the kind of fix it is and what it does, shortened."""
    why = offer.why if len(offer.why) <= SHORT_WHY else offer.why[:SHORT_WHY].rstrip() + "…"
    item = QListWidgetItem(f"{offer.name}\n    {offer.family}: {why}")
    item.setData(FIX_OFFER_ROLE, offer)
    item.setBackground(FIX_OFFER_TINT)
    item.setToolTip(f"{offer.name}\n{offer.why}")
    return item


def fix_offer_text(offer: FixOffer) -> str:
    """The dock's description of a fix offer, above what it changes."""
    applies = (f"Apply adds the capture setting {offer.setting} to the export options" if offer.setting
               else "Apply keeps it in the project as a fix")
    return (f"{offer.name} ({offer.family}): {offer.why}.\n{applies} and exports again, as Fix all does.\n"
            f"{WHAT_IT_CHANGES[offer.is_diff]}")
