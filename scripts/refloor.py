"""Re-floor the ground of ``core/`` (issue 47, items 1-3), as a step that can be applied again.

Run from the repository root (the folder of the package ``fixport``)::

    python scripts/refloor.py            # move, rewrite, delete shims, then ruff's import fixes
    python scripts/refloor.py --dry-run  # say what it would move and which files it would rewrite

It moves every module of ``core/model/`` to the room named for what it is (``MODEL_MAP``; a module
not in the map goes to ``core/words/`` and is listed at the end), renames ``core/script_support/``
to ``core/foundation/`` (every file, known or new), rewrites every mention of an old module path in
the .py, .md, .toml and .yml files (dotted, ``core.x.y`` and ``core/x/y.py`` forms), points every
``from A import n`` whose ``A`` only re-imports ``n`` at the module that defines ``n``, deletes the
modules that only re-export, and updates pyproject's packages and import-linter contracts. Run on
a tree it already re-floored, it changes nothing. Standard library only; ruff is run if installed.

What it cannot do, and says where it can: place a new module of core/model/ anywhere but words/
(lint-imports then names any that import upwards); fix code that reaches a re-exported name through
a module object (``getattr(errors, name)``, ``module.name`` after ``from package import module``),
which the tests find; or rewrite prose that names the old folders themselves (listed at the end).
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# core/model/<module> -> its new home (dotted, under fixport).
RECORDS = "core.records"  # what crosses the worker: requests, results and what they hold
PROJECT = "core.project"  # what the user saves: the project and everything it keeps
WORDS = "core.words"  # the words every room shares: vocabulary, errors, problems, graph, cancel
STATISTICS = "core.statistics"  # torch against ONNX Runtime, in numbers (no torch)
FOUNDATION = "core.foundation"  # what the engine stands on and every fix script carries whole
MODEL_MAP = {
    "requests": f"{RECORDS}.requests",
    "results": f"{RECORDS}.results",
    "compare_result": f"{RECORDS}.compare_result",
    "exporter_comparison": f"{RECORDS}.exporter_comparison",
    "fix_choices": f"{RECORDS}.fix_choices",
    "fix_records": f"{RECORDS}.fix_records",
    "fix_strategies": f"{RECORDS}.fix_strategies",
    "runtime_cost": f"{RECORDS}.runtime_cost",
    "baseline": f"{RECORDS}.baseline",
    "traced_sizes": f"{RECORDS}.traced_sizes",
    "generation_result": f"{RECORDS}.generation_result",
    "project": f"{PROJECT}.project",
    "export_options": f"{PROJECT}.export_options",
    "capture_settings": f"{PROJECT}.capture_settings",
    "inputs": f"{PROJECT}.inputs",
    "shape_sets": f"{PROJECT}.shape_sets",
    "dynamic_shapes": f"{PROJECT}.dynamic_shapes",
    "proposed_shapes": f"{PROJECT}.proposed_shapes",
    "tolerances": f"{PROJECT}.tolerances",
    "model_files": f"{PROJECT}.model_files",
    "atomic_files": f"{PROJECT}.atomic_files",
    "vocabulary": f"{WORDS}.vocabulary",
    "errors": f"{WORDS}.errors",
    "advice": f"{WORDS}.advice",
    "problems": f"{WORDS}.problems",
    "graph": f"{WORDS}.graph",
    "cancel": f"{WORDS}.cancel",
    "internal_error": f"{WORDS}.internal_error",
    "output_stats": f"{STATISTICS}.output_stats",
    "tied_order": f"{STATISTICS}.tied_order",
    # The exporters' torch-free helpers: the dynamo profile's code changes, TorchScript's tracer warnings.
    "capture_changes": "core.exporters.capture_changes",
    "trace_warnings": "core.exporters.trace_warnings",
    # The window's state: the session's workbench, and the window's own runners' bookkeeping.
    "workbench": "core.session.workbench",
    "latest": "gui.latest",
}
MODEL_FALLBACK = WORDS  # a module of core/model/ not in MODEL_MAP
# Other single modules that move (old -> new, dotted under fixport): one home for checkpoint code.
OTHER_MOVES = {
    "core.checks.generation_check": "core.checkpoints.generation_check",
}
# Whole packages renamed, every file in them (new ones too).
PACKAGE_MOVES = {"core.script_support": FOUNDATION}
NEW_PACKAGE_DOCS = {
    RECORDS: "What crosses the worker: one request per job, what it returns, and the records those hold.",
    PROJECT: "What the user saves: the project, its export options, inputs, shapes and tolerances, and files.",
    WORDS: "The words every room shares: vocabulary, errors, problems and advice, the neutral graph, cancel.",
    STATISTICS: "torch against ONNX Runtime in numbers: per-output statistics and tied orders (no torch).",
}
# Modules that re-export on purpose: the public template API is one import for templates.
FACADES = {"fixport.symbolics.api"}
# pyproject: the old room, replaced where it is named alone (packages, contracts) by the new rooms.
OLD_ROOM = "fixport.core.model"
NEW_ROOMS = [f"fixport.{RECORDS}", f"fixport.{PROJECT}", f"fixport.{STATISTICS}", f"fixport.{WORDS}"]
TORCH_FREE_HELPERS = ["fixport.core.exporters.capture_changes", "fixport.core.exporters.trace_warnings"]
TORCH_FREE_CONTRACT = "The torch-free rooms stay torch-free"
LAYERS_NAME = ('name = "Rooms: front ends over the session over the worker over the jobs over the exporters over '
               'the fix library over loaders over the records over the project over the statistics over the words '
               'over the foundation"')
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".cfg", ".ini", ".txt"}
NOT_REWRITTEN = {"CHANGELOG.md", "scripts/refloor.py"}  # history is kept as written; this script names old paths


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def is_tracked(path: Path) -> bool:
    return subprocess.run(["git", "ls-files", "--error-unmatch", str(path)], capture_output=True).returncode == 0


def to_path(dotted: str) -> Path:
    return Path(*dotted.split(".")).with_suffix(".py")


def planned_moves() -> dict[str, str]:
    """old dotted module (under fixport) -> new, for every file that is still in an old place."""
    moves: dict[str, str] = {}
    model = Path("core/model")
    if model.is_dir():
        for path in sorted(model.glob("*.py")):
            stem = path.stem
            if stem == "__init__":
                moves["core.model.__init__"] = f"{WORDS}.__init__"
            else:
                moves[f"core.model.{stem}"] = MODEL_MAP.get(stem, f"{MODEL_FALLBACK}.{stem}")
    for old, new in OTHER_MOVES.items():
        if to_path(old).is_file():
            moves[old] = new
    for old, new in PACKAGE_MOVES.items():
        folder = Path(*old.split("."))
        if folder.is_dir():
            for path in sorted(folder.rglob("*.py")):
                rest = ".".join(path.relative_to(folder).with_suffix("").parts)
                moves[f"{old}.{rest}"] = f"{new}.{rest}"
    return moves


def move_files(moves: dict[str, str], dry_run: bool) -> None:
    for old, new in moves.items():
        source, target = to_path(old), to_path(new)
        if target.exists():
            raise SystemExit(f"refloor: {target} exists already; move or merge it by hand, then run again")
        print(f"move {source} -> {target}")
        if dry_run:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if is_tracked(source):
            git("mv", str(source), str(target))
        else:
            source.rename(target)
    if dry_run:
        return
    for dotted, doc in NEW_PACKAGE_DOCS.items():
        init = Path(*dotted.split(".")) / "__init__.py"
        if init.parent.is_dir() and (not init.exists() or not init.read_text().strip()):
            init.write_text(f'"""{doc}"""\n')
            git("add", str(init))
    for old in ["core.model", *PACKAGE_MOVES]:
        folder = Path(*old.split("."))
        if folder.is_dir() and not any(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            shutil.rmtree(folder)


def rename_table(moves: dict[str, str]) -> list[tuple[str, str]]:
    """(old, new) dotted module names under fixport, longest first, for every module the map knows,
    moved now or before (so a mention of an old path is rewritten in a tree moved already)."""
    table = {f"core.model.{stem}": new for stem, new in MODEL_MAP.items()}
    table.update(OTHER_MOVES)
    table.update({old: new for old, new in moves.items() if not old.endswith("__init__")})
    return sorted(table.items(), key=lambda item: -len(item[0]))


def text_files() -> list[Path]:
    listed = git("ls-files", "--cached", "--others", "--exclude-standard").splitlines()
    return [Path(name) for name in sorted(set(listed))
            if Path(name).suffix in TEXT_SUFFIXES and name not in NOT_REWRITTEN and Path(name).is_file()]


def _module_patterns(old: str, new: str) -> list[tuple[re.Pattern[str], str]]:
    """An old module's spellings: fixport.core.x.y, core.x.y, core/x/y.py, core/x/y, x/y.py."""
    slash_old, slash_new = old.replace(".", "/"), new.replace(".", "/")
    short_old = "/".join(old.split(".")[-2:])  # model/graph.py, as docstrings name files short
    short_new = "/".join(new.split(".")[-2:])
    return [
        (re.compile(rf"(?<![\w.])(fixport\.)?{re.escape(old)}(?![\w])"), rf"\g<1>{new}"),
        (re.compile(rf"(?<![\w/]){re.escape(slash_old)}(?=\.py\b|/|(?![\w/.]))"), slash_new),
        (re.compile(rf"(?<![\w/.]){re.escape(short_old)}\.py\b"), f"{short_new}.py"),
    ]


def _package_patterns() -> list[tuple[re.Pattern[str], str]]:
    patterns = []
    for old, new in PACKAGE_MOVES.items():
        patterns.append((re.compile(rf"(?<![\w.])(fixport\.)?{re.escape(old)}(?![\w])"), rf"\g<1>{new}"))
        old_slash, new_slash = old.replace(".", "/"), new.replace(".", "/")
        patterns.append((re.compile(rf"(?<![\w/]){re.escape(old_slash)}(?![\w])"), new_slash))
        short_old, short_new = old.split(".")[-1], new.split(".")[-1]
        patterns.append((re.compile(rf"(?<![\w/.]){re.escape(short_old)}/"), f"{short_new}/"))
        # Short dotted (``script_support.script`` in prose) and the folder's name as a string.
        patterns.append((re.compile(rf"(?<![\w.]){re.escape(short_old)}\.(?=[a-z])"), f"{short_new}."))
        # The folder's name as a string ("script_support" in path.parts).
        patterns.append((re.compile(rf"(?<=[\"']){re.escape(short_old)}(?=[\"'])"), short_new))
    return patterns


_FROM_OLD_PACKAGE = re.compile(r"^(?P<indent>[ \t]*)from fixport\.core\.model import (?P<names>\([^)]*\)|[^\n]*)$",
                               re.M)


def _split_package_imports(text: str) -> str:
    """``from fixport.core.model import a, b``: each submodule from its new package."""
    def split(match: re.Match[str]) -> str:
        names = [n.strip() for n in match["names"].strip("()").replace("\n", " ").split(",") if n.strip()]
        by_package: dict[str, list[str]] = {}
        for entry in names:
            stem = entry.split(" as ")[0].strip()
            new = MODEL_MAP.get(stem, f"{MODEL_FALLBACK}.{stem}")
            by_package.setdefault(new.rsplit(".", 1)[0], []).append(entry)
        return "\n".join(f"{match['indent']}from fixport.{package} import {', '.join(entries)}"
                         for package, entries in by_package.items())
    return _FROM_OLD_PACKAGE.sub(split, text)


def rewrite_mentions(table: list[tuple[str, str]], dry_run: bool) -> list[Path]:
    patterns = [p for old, new in table for p in _module_patterns(old, new)] + _package_patterns()
    changed = []
    for path in text_files():
        text = path.read_text(encoding="utf-8")
        new_text = _split_package_imports(text) if path.suffix == ".py" else text
        for pattern, replacement in patterns:
            new_text = pattern.sub(replacement, new_text)
        if new_text != text:
            changed.append(path)
            if not dry_run:
                path.write_text(new_text, encoding="utf-8")
    return changed


# ---- one import path per name ----

def module_name(path: Path) -> str:
    parts = list(path.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["fixport", *parts])


class Module:
    """What one module defines and what it takes from other Fixport modules."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = module_name(path)
        self.tree = ast.parse(path.read_text(encoding="utf-8"))
        self.imported: dict[str, tuple[str, str]] = {}  # local name -> (module, name there)
        self.defined: set[str] = set()
        for node in self._top_level(self.tree.body):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("fixport"):
                for alias in node.names:
                    self.imported[alias.asname or alias.name] = (node.module or "", alias.name)
            elif isinstance(node, ast.ImportFrom | ast.Import):
                self.defined.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.defined.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    self.defined.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))

    @staticmethod
    def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
        nodes = []
        for node in body:
            nodes.append(node)
            if isinstance(node, ast.If | ast.Try):
                nodes += Module._top_level(node.body + node.orelse + getattr(node, "finalbody", []))
                for handler in getattr(node, "handlers", []):
                    nodes += Module._top_level(handler.body)
        return nodes

    def is_shim(self) -> bool:
        """Only a docstring, ``__future__``, Fixport imports and ``__all__``: a second path, nothing else."""
        if not self.imported or self.path.name == "__init__.py":
            return False
        for node in self.tree.body:
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue
            if isinstance(node, ast.ImportFrom) and (node.module == "__future__" or node.module in {
                    m for m, _ in self.imported.values()}):
                continue
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]:
                continue
            return False
        return True


def fixport_modules() -> dict[str, Module]:
    modules = {}
    for path in text_files():
        if path.suffix == ".py" and "scripts" not in path.parts[:1]:
            try:
                module = Module(path)
            except SyntaxError:
                continue
            modules[module.name] = module
    return modules


def origin(modules: dict[str, Module], module: str, name: str) -> tuple[str, str]:
    """Where ``module``'s ``name`` is defined, following re-imports."""
    seen = set()
    while module in modules and (module, name) not in seen:
        seen.add((module, name))
        found = modules[module]
        if name in found.defined or name not in found.imported:
            break
        imported_from, imported_name = found.imported[name]
        if imported_from not in modules:  # a package import of a submodule, or outside the tree
            break
        module, name = imported_from, imported_name
    return module, name


def _import_lines(indent: str, groups: dict[str, list[str]]) -> str:
    lines = []
    for module, names in groups.items():
        one = f"{indent}from {module} import {', '.join(names)}"
        if len(one) <= 120:
            lines.append(one)
        else:
            lines.append(f"{indent}from {module} import (\n" + "".join(f"{indent}    {n},\n" for n in names)
                         + f"{indent})")
    return "\n".join(lines)


def one_path_per_name(dry_run: bool) -> tuple[list[Path], list[Path]]:
    """Point every import at the module that defines the name; delete modules that only re-export."""
    modules = fixport_modules()
    changed: list[Path] = []
    for module in modules.values():
        lines = module.path.read_text(encoding="utf-8").split("\n")
        edits = []
        for node in ast.walk(module.tree):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in modules):
                continue
            if node.module in FACADES:
                continue
            groups: dict[str, list[str]] = {}
            moved = False
            for alias in node.names:
                source, name = origin(modules, node.module, alias.name)
                moved |= source != node.module
                local = alias.asname or alias.name
                entry = name if local == name else f"{name} as {local}"
                groups.setdefault(source, []).append(entry)
            if moved:
                indent = re.match(r"[ \t]*", lines[node.lineno - 1])[0]
                end = node.end_lineno or node.lineno
                comment = lines[end - 1][node.end_col_offset:].rstrip() if node.end_col_offset is not None else ""
                edits.append((node.lineno, end, _import_lines(indent, groups) + comment))
        if edits:
            for start, end, replacement in sorted(edits, reverse=True):
                lines[start - 1:end] = replacement.split("\n")
            changed.append(module.path)
            if not dry_run:
                module.path.write_text("\n".join(lines), encoding="utf-8")
    deleted = []
    for module in fixport_modules().values() if not dry_run else modules.values():
        if module.name in FACADES:
            continue
        if module.is_shim():
            deleted.append(module.path)
            if not dry_run:
                if is_tracked(module.path):
                    git("rm", "-q", "-f", str(module.path))
                else:
                    module.path.unlink()
        elif not dry_run and _drop_reexports_from_all(module):
            changed.append(module.path)
    return changed, deleted


def _drop_reexports_from_all(module: Module) -> bool:
    """``__all__`` lists only what the module defines (ruff then drops imports left unused)."""
    for node in module.tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]:
            if not isinstance(node.value, ast.List | ast.Tuple):
                return False
            names = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
            kept = [n for n in names if n not in module.imported]
            if kept == names:
                return False
            lines = module.path.read_text(encoding="utf-8").split("\n")
            text = f"__all__ = [{', '.join(repr(n).replace(chr(39), chr(34)) for n in kept)}]"
            lines[node.lineno - 1:node.end_lineno] = [text] if len(text) <= 120 else (
                ["__all__ = ["] + [f'    "{n}",' for n in kept] + ["]"])
            module.path.write_text("\n".join(lines), encoding="utf-8")
            return True
    return False


# ---- pyproject ----

def update_pyproject(dry_run: bool) -> bool:
    """The packages and the contracts name the new rooms where they named the old one."""
    path = Path("pyproject.toml")
    text = path.read_text(encoding="utf-8")
    old = f'"{OLD_ROOM}"'
    lines = []
    for line in text.split("\n"):
        if line.strip() == old + ",":  # one room per line: a layer each, or a package each
            indent = line[:len(line) - len(line.lstrip())]
            lines += [f'{indent}"{room}",' for room in NEW_ROOMS]
        elif old in line:
            lines += _wrapped(line.replace(old, ", ".join(f'"{room}"' for room in NEW_ROOMS)))
        else:
            lines.append(line)
    new = "\n".join(lines)
    new = re.sub(r'^name = "Rooms: [^"\n]*"', LAYERS_NAME, new, flags=re.M)
    start = new.find(TORCH_FREE_CONTRACT)
    line_start = new.find("source_modules = [", start) if start >= 0 else -1
    if line_start >= 0:
        listed = new[line_start:new.find("]", line_start)]
        missing = [m for m in TORCH_FREE_HELPERS if f'"{m}"' not in listed]
        if missing:
            indent = " " * len("source_modules = [")
            insert = line_start + len(indent)
            new = new[:insert] + ", ".join(f'"{m}"' for m in missing) + ",\n" + indent + new[insert:]
    if new != text and not dry_run:
        path.write_text(new, encoding="utf-8")
    return new != text


def _wrapped(line: str, width: int = 118) -> list[str]:
    """A TOML list's line, broken after a comma where it passes ``width``, continued under its first item."""
    if line.lstrip().startswith('"'):
        indent = line[:len(line) - len(line.lstrip())]
    elif "[" in line:
        indent = " " * (line.index("[") + 1)
    else:
        return [line]
    if len(line) <= width:
        return [line]
    out, current = [], ""
    for part in re.split(r"(?<=,) ", line):
        if current and len(current) + 1 + len(part) > width:
            out.append(current)
            current = indent + part
        else:
            current = f"{current} {part}" if current else part
    return [*out, current]


def leftovers(table: list[tuple[str, str]]) -> list[str]:
    """Mentions of an old room the rewrite cannot place (prose about the folder itself)."""
    pattern = re.compile(r"(?<![\w])(core[./]model(?![\w])|core[./]script_support(?![\w])|script_support/)")
    found = []
    for path in text_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            if pattern.search(line):
                found.append(f"{path}:{number}: {line.strip()[:110]}")
    return found


def mentions_of_deleted(deleted: list[Path]) -> list[str]:
    """Where a deleted module is still imported as a module (``from package import module``) or named."""
    found = []
    for path in deleted:
        dotted = module_name(path)
        package, stem = dotted.rsplit(".", 1)
        pattern = re.compile(rf"{re.escape(dotted)}(?![\w])|from {re.escape(package)} import[^\n]*\b{stem}\b"
                             rf"|^\s+{stem},$")
        for text_path in text_files():
            text = text_path.read_text(encoding="utf-8")
            for number, line in enumerate(text.split("\n"), 1):
                if pattern.search(line) and (not line.strip().endswith(",") or package in text):
                    found.append(f"{text_path}:{number}: {line.strip()[:100]}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="say what would change; change nothing")
    parser.add_argument("--no-ruff", action="store_true", help="leave imports unsorted (ruff not run)")
    options = parser.parse_args()
    if 'name = "fixport"' not in Path("pyproject.toml").read_text(encoding="utf-8") if Path(
            "pyproject.toml").is_file() else True:
        print("refloor: run it from Fixport's repository root (the folder with pyproject.toml)", file=sys.stderr)
        return 2
    moves = planned_moves()
    unknown = sorted(old for old, new in moves.items()
                     if old.startswith("core.model.") and old.split(".")[-1] not in MODEL_MAP
                     and not old.endswith("__init__"))
    move_files(moves, options.dry_run)
    table = rename_table(moves)
    rewritten = rewrite_mentions(table, options.dry_run)
    if options.dry_run:
        print(f"would rewrite {len(rewritten)} files")
        return 0
    repointed, deleted = one_path_per_name(options.dry_run)
    pyproject = update_pyproject(options.dry_run)
    touched = sorted({str(p) for p in [*rewritten, *repointed] if p.suffix == ".py" and p.exists()})
    if touched and not options.no_ruff and shutil.which("ruff"):
        # Sort the imports the rewrite renamed and drop those a deleted re-export left unused.
        subprocess.run(["ruff", "check", "--fix", "--quiet", "--select", "I,F401", *touched], check=False)
    print(f"moved {len(moves)} modules, rewrote {len(rewritten)} files, re-pointed imports in {len(repointed)}, "
          f"deleted {len(deleted)} re-export modules{', updated pyproject.toml' if pyproject else ''}")
    for path in deleted:
        print(f"  deleted {path}")
    for line in mentions_of_deleted(deleted):
        print(f"  still named (fix by hand): {line}")
    if unknown:
        print(f"modules of core/model/ not in the map, put in {MODEL_FALLBACK.replace('.', '/')}/ (place them):")
        for old in unknown:
            print(f"  {old}")
    rest = leftovers(table)
    if rest:
        print(f"{len(rest)} mentions of an old room left for a person (prose about the folder):")
        for line in rest:
            print(f"  {line}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
