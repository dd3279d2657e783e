"""The smallest set of passes to turn off: delta debugging over a tool's own switch names."""
from __future__ import annotations

from collections.abc import Callable, Sequence

from fixport.core.words.cancel import CancelCallback, check_cancelled

MAX_TRIES = 400  # sessions or optimizer runs; a 1-minimal set of ~60 names takes far fewer


def smallest_set_to_turn_off(candidates: Sequence[str], passes_with_off: Callable[[list[str]], bool],
                             cancelled: CancelCallback | None = None) -> tuple[list[str] | None, int]:
    """A 1-minimal subset of ``candidates`` whose turning off makes the variant pass (no single name
    can be turned back on), and the number of tries; None where turning all of them off does not help.

    Re-enables chunks of the set while it still passes, halving the chunk down to one name
    (Zeller's ddmin on the complement): a failure caused by two passes together (onnxruntime#32416)
    ends with one of them, which is enough to avoid it.
    """
    tries = 1
    kept = list(candidates)
    if not passes_with_off(kept):
        return None, tries
    chunk = max(1, len(kept) // 2)
    while kept:
        index = 0
        while index < len(kept) and tries < MAX_TRIES:
            check_cancelled(cancelled)
            trial = kept[:index] + kept[index + chunk:]
            tries += 1
            if passes_with_off(trial):
                kept = trial
            else:
                index += chunk
        if chunk == 1 or tries >= MAX_TRIES:
            break
        chunk = max(1, chunk // 2)
    return kept, tries
