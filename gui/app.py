"""Start the workbench window: `python main.py` (a built-in example) or `python main.py gui FILE`."""
from __future__ import annotations

import argparse
import sys

from fixport.examples.catalog import example_path

DEFAULT_EXAMPLE = "threshold"


def run_gui(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python main.py gui", description="Open the Fixport workbench.")
    parser.add_argument("file", nargs="?", help="a model file or a .fixport.json project "
                                                f"(default: the built-in '{DEFAULT_EXAMPLE}' example)")
    args = parser.parse_args(argv)
    from PySide6.QtWidgets import QApplication

    from fixport.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Fixport")
    app.setOrganizationName("Fixport")
    window = MainWindow()
    window.show()
    window.open_path(args.file or str(example_path(DEFAULT_EXAMPLE)))
    return app.exec()
