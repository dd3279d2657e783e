"""The switch between the real-size config and a tiny one of the same architecture."""
from __future__ import annotations

import os

QUICK_ENV = "FIXPORT_BENCH_QUICK"


def quick() -> bool:
    """True when bench/real_size.py --quick asked for the tiny configs."""
    return os.environ.get(QUICK_ENV) == "1"
