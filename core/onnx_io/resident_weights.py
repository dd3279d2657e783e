"""Weight files' pages dropped from the process while another copy of the weights is in use.

A check holds a model's weights twice over: torch's, mapped from the checkpoint (or from the export's
file), and ONNX Runtime's, mapped from the export. Torch and ONNX Runtime take turns (torch's runs
first, then the session's), so the pages of the one not running need not stay in the process: a
weight file's mapping whose pages are all clean (none written, so each is the file's byte for byte)
is told ``MADV_DONTNEED``. Its pages leave the process's resident set and stay in the page cache, free
for the kernel to reclaim; a later read maps them back (from the cache, or the file). A private
mapping with a page written through it (its copy-on-write copy is anonymous memory) is left alone:
dropping it would lose the write. A shared mapping's writes are the page cache's, and stay.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from collections.abc import Callable

WEIGHT_FILE_SUFFIXES = (".safetensors", ".bin", ".onnx", ".data", ".pt", ".pt2", ".pth")
MADV_DONTNEED = 4
WRITTEN_FIELD = "Anonymous:"  # a private mapping's pages written through it


def release_clean_weight_pages() -> int:
    """Drop the resident pages of every clean mapping of a weight file from this process (Linux only;
    elsewhere nothing). Returns the bytes that were resident."""
    if not sys.platform.startswith("linux"):
        return 0
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    released = 0
    for start, end, resident in _clean_weight_mappings():
        if resident and libc.madvise(start, end - start, MADV_DONTNEED) == 0:
            released += resident
    return released


def _clean_weight_mappings() -> list[tuple[int, int, int]]:
    """(start, end, resident bytes) of each weight-file mapping in /proc/self/smaps with no page written
    through it (a file just written shows its pages dirty: they are the page cache's, not the mapping's)."""
    found: list[tuple[int, int, int]] = []
    current: list | None = None  # [start, end, resident, clean]
    try:
        with open("/proc/self/smaps") as smaps:
            for line in smaps:
                head = line.split(maxsplit=5)
                if len(head) >= 5 and "-" in head[0] and not head[0].endswith(":"):  # a mapping's header
                    if current is not None and current[3]:
                        found.append((current[0], current[1], current[2]))
                    path = head[5].strip() if len(head) == 6 else ""
                    start, end = (int(part, 16) for part in head[0].split("-"))
                    current = [start, end, 0, True] if path.endswith(WEIGHT_FILE_SUFFIXES) else None
                elif current is not None and head[0] == "Rss:":
                    current[2] = int(head[1]) * 1024
                elif current is not None and head[0] == WRITTEN_FIELD and int(head[1]) != 0:
                    current[3] = False
    except OSError:
        return []
    if current is not None and current[3]:
        found.append((current[0], current[1], current[2]))
    return found


def turn_taker(big: bool) -> Callable[[], object]:
    """What to call each time torch or ONNX Runtime has run on a model whose weights both hold, so that
    the next one's weights are not resident beside them: for a model kept on disk, the pages handed
    back (they map back from the page cache in well under a second); for a smaller one, nothing."""
    return release_clean_weight_pages if big else no_turns


def no_turns() -> None:
    """Nothing to hand back: a model small enough that both copies of its weights fit."""
    return None


class WeightPagesHandedBack:
    """While torch converts a traced model (no model code runs then), every ``every_s`` the weight
    pages it read are handed back (:func:`release_clean_weight_pages`): constant folding reads each
    weight once to write its transpose, so the weights and their transposes need not be resident
    together."""

    def __init__(self, every_s: float = 0.5) -> None:
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None and sys.platform.startswith("linux"):
            self._thread = threading.Thread(target=self._run, name="fixport-weight-pages", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            release_clean_weight_pages()
