"""Real architectures with their natural dynamic axes declared: how many of the export failures
Fixport names does ``fix --auto`` fix?

    python bench/dynamic_axes_sweep.py [--only NAME,NAME] [--exporters torchscript,dynamo] [--out DIR]

Every model file of bench/dynamic_axes/ (tiny configs, random weights) declares ``INPUT_NAMES`` and
``DYNAMIC_AXES`` the way a user passes ``--input-names`` and ``--dynamic-axes``. For each exporter, in
a warm worker, as bench/held_out_sweep.py runs a model: ``check`` (which also checks the export at a
larger and a smaller size of each declared dim), ``fix --auto`` when it names problems, ``compare``
with the fixes, and an independent check of the saved export at the file's ``other_inputs()``
(other sizes and other values). A row is **fixed** when problems were named and, after the fixes,
none is left, compare passes and the independent check agrees.

Writes ``DIR/dynamic_axes_sweep.json`` and ``.md`` with the fixed fraction, stamped with the date,
commit and machine.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from held_out_sweep import Row, _load, markdown, missing_library, sweep_one  # noqa: E402

from fixport.core.sweep.stamp import machine_stamp  # noqa: E402
from fixport.core.worker.client import ExportWorker  # noqa: E402

MODELS = Path(__file__).resolve().parent / "dynamic_axes"


def declared_options(path: Path) -> dict[str, Any]:
    """The export options the model file declares, as a user's --input-names and --dynamic-axes."""
    module = _load(path)
    return {"input_names": list(module.INPUT_NAMES),
            "dynamic_axes": {name: {int(d): label for d, label in dims.items()}
                             for name, dims in module.DYNAMIC_AXES.items()}}


def failed(row: Row) -> bool:
    """Fixport named an export failure: a problem from check."""
    return bool(row.problems)


def fixed(row: Row) -> bool:
    return failed(row) and row.verdict == "fixed" and row.other_inputs_ok is not False


def summary(rows: list[Row]) -> str:
    named = [r for r in rows if failed(r)]
    done = [r for r in named if fixed(r)]
    return (f"fix --auto fixed {len(done)} of the {len(named)} runs whose export Fixport named as failing "
            f"({len(rows)} runs, {sum(r.verdict == 'clean' for r in rows)} clean; "
            f"{sum(r.verdict == 'silent PASS' for r in rows)} silent PASS).")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="")
    parser.add_argument("--exporters", default="torchscript,dynamo")
    parser.add_argument("--exporter", dest="exporters", help="the same as --exporters")
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--append", action="store_true",
                        help="keep the rows of DIR/dynamic_axes_sweep.json for models and exporters not run now")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    paths = [p for p in sorted(MODELS.glob("*.py")) if not p.stem.startswith("_") and (not only or p.stem in only)]
    exporters = args.exporters.split(",")
    out_json = args.out / "dynamic_axes_sweep.json"
    stamp, rows, skipped = machine_stamp(), [], {}
    kept: list[Row] = []
    if args.append and out_json.is_file():
        earlier = json.loads(out_json.read_text(encoding="utf-8"))
        kept = [Row(**r) for r in earlier["rows"]
                if not (r["model"] in {p.stem for p in paths} and r["exporter"] in exporters)]
        skipped = {k: v for k, v in earlier.get("skipped", {}).items() if k not in {p.stem for p in paths}}
    worker = ExportWorker(job_timeout_s=args.timeout)
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory() as folder:
            for path in paths:
                why = missing_library(path)
                if why:
                    skipped[path.stem] = why
                    continue
                for exporter in exporters:
                    row = sweep_one(worker, path, exporter, Path(folder), args.timeout,
                                    options=declared_options(path))
                    rows.append(row)
                    print(f"{path.stem} {exporter}: {row.verdict} ({row.seconds:.0f} s) {row.error[:120]}", flush=True)
                    all_rows = sorted(kept + rows, key=lambda r: (r.model, r.exporter))
                    out_json.write_text(json.dumps(
                        {"stamp": stamp, "summary": summary(all_rows), "rows": [asdict(r) for r in all_rows],
                         "skipped": skipped}, indent=1, default=str), encoding="utf-8")
    finally:
        worker.stop()
    all_rows = sorted(kept + rows, key=lambda r: (r.model, r.exporter))
    text = markdown(all_rows, skipped, stamp) + "\n" + summary(all_rows) + "\n"
    (args.out / "dynamic_axes_sweep.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    if importlib.util.find_spec("fixport") is None:
        sys.exit("fixport is not importable: install it (pip install -e .) or set PYTHONPATH.")
    main()
