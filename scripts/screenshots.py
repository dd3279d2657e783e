"""Render the workbench at each stage of the fixing flow to PNG files, to look at them.

Usage (a real X server, e.g. `Xvfb :99 & DISPLAY=:99`, or QT_QPA_PLATFORM=offscreen):
    python scripts/screenshots.py [--out screenshots] [--example threshold]
Stages: opened (problems flagged), template chosen, fixed and re-exported, compared.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# A throwaway data folder: the user's own autosaves must neither show up nor be touched.
os.environ["FIXPORT_DATA_DIR"] = tempfile.mkdtemp(prefix="fixport-screenshots-")

from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from fixport.examples.catalog import example_path  # noqa: E402
from fixport.gui.main_window import MainWindow  # noqa: E402

WINDOW_SIZE = (1600, 960)
JOB_TIMEOUT_S = 300
SETTLE_S = 0.8  # layouts run off the UI thread; let them land before grabbing


def wait(app: QApplication, window: MainWindow, seconds: float = SETTLE_S) -> None:
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while window.runner.busy and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.02)
    settle = time.monotonic() + seconds
    while time.monotonic() < settle:
        app.processEvents()
        time.sleep(0.02)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="screenshots")
    parser.add_argument("--example", default="threshold")
    parser.add_argument("--template", default="decompose.threshold_where")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication(sys.argv[:1])
    settings = QSettings(str(Path(tempfile.mkdtemp()) / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings=settings)
    window.resize(*WINDOW_SIZE)
    window.show()
    window.open_path(example_path(args.example))
    wait(app, window)
    window.grab().save(str(out / "1-opened.png"))
    window.template.select_offer(args.template)
    wait(app, window, 0.3)
    window.grab().save(str(out / "2-template.png"))
    window.template.apply_kind_button.click()
    wait(app, window)
    window.grab().save(str(out / "3-fixed.png"))
    window.actions["compare"].trigger()
    wait(app, window)
    window.grab().save(str(out / "4-compared.png"))
    print(f"Wrote {len(list(out.glob('*.png')))} screenshots to {out}/")
    window.close()


if __name__ == "__main__":
    main()
