"""The house rules: the rooms' import contracts hold, and an install puts one package in site-packages."""
from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import tomllib

from tests.conftest import REPO

PACKAGE_FOLDERS = ("cli", "core", "examples", "gui", "symbolics")


def test_import_contracts_hold() -> None:
    """pyproject.toml's [tool.importlinter] contracts: Qt only in gui/, torch never in the front ends."""
    code = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    result = subprocess.run([sys.executable, "-c", code, "--config", str(REPO / "pyproject.toml"), "--no-cache"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_every_package_folder_is_installed() -> None:
    """pyproject.toml lists packages by hand (the root is mapped to `fixport`): none may be missing."""
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"fixport"} | {
        "fixport." + ".".join(init.parent.relative_to(REPO).parts)
        for folder in PACKAGE_FOLDERS for init in (REPO / folder).rglob("__init__.py")}
    assert found == listed


def test_no_import_cycles() -> None:
    """No module of Fixport imports, directly or through others, a module that imports it back."""
    import grimp  # import-linter's own import graph
    import networkx

    graph = grimp.build_graph("fixport")
    imports = networkx.DiGraph([(module, imported) for module in graph.modules
                                for imported in graph.find_modules_directly_imported_by(module)
                                if imported.startswith("fixport.") and imported != module])
    assert list(networkx.simple_cycles(imports)) == []


def test_the_wheel_installs_one_top_level_package(tmp_path: Path) -> None:
    """Nothing called core, gui or main lands at the top of site-packages."""
    source = tmp_path / "source"  # a copy: setuptools leaves a build/ folder beside what it builds
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".git", "build", "*.egg-info", "__pycache__",
                                                                 ".venv", "venv", "screenshots"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                    "--wheel-dir", str(tmp_path), str(source)], check=True, capture_output=True, timeout=300)
    wheel = next(tmp_path.glob("fixport-*.whl"))
    top_level = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {name for name in top_level if not name.endswith(".dist-info")} == {"fixport"}
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in zipfile.ZipFile(wheel).namelist()
                                                     if n.endswith("entry_points.txt"))).decode()
    assert "fixport = fixport.main:run" in entry_points


def _exporter_words() -> re.Pattern[str]:
    """Words that name an exporter or its own graph: each exporter's name (--exporter), its source
    graph's kind, and torch.export. Letters may not touch them ('dynamo_export' names one; 'fxa' not)."""
    from fixport.core.exporters.profiles import PROFILES

    words = {*PROFILES, *(profile.source_graph.kind for profile in PROFILES.values()), "torch.export"}
    alternatives = "|".join(sorted(map(re.escape, words), key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z])(?:{alternatives})(?![A-Za-z])", re.IGNORECASE)


def _profile_constants() -> set[str]:
    """The module-level names of core/exporters/profiles.py that hold an exporter's profile."""
    from fixport.core.exporters import profiles

    return {name for name, value in vars(profiles).items() if isinstance(value, profiles.ExporterProfile)}


def _exporter_name_comparisons(tree: ast.AST, names: set[str], profiles: set[str] | None = None) -> list[int]:
    """Lines of ``tree`` that compare a value with an exporter's name or profile, in any spelling: a
    literal alone or in a literal collection (``x == "dynamo"``, ``kind in ("torchscript", "onnx")``),
    a profile or anything read off one (``options.exporter == TORCHSCRIPT.name``, ``p is DYNAMO``,
    ``kind != profiles.DYNAMO.source_graph.kind``, under any alias), or a match case on one."""
    constants = _profile_constants() if profiles is None else profiles
    aliases = set(constants)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("exporters.profiles"):
            aliases |= {alias.asname or alias.name for alias in node.names if alias.name in constants}

    def names_one(side: ast.expr) -> bool:
        if isinstance(side, (ast.Tuple, ast.List, ast.Set)):
            return any(names_one(element) for element in side.elts)
        while isinstance(side, ast.Attribute):  # TORCHSCRIPT.name, profiles.DYNAMO.source_graph.kind
            if side.attr in constants:
                return True
            side = side.value
        return (isinstance(side, ast.Constant) and side.value in names) or (
            isinstance(side, ast.Name) and side.id in aliases)

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(names_one(side) for side in (node.left, *node.comparators)):
            lines.append(node.lineno)
        elif isinstance(node, ast.MatchValue) and names_one(node.value):
            lines.append(node.lineno)
    return lines


def test_the_exporter_name_check_sees_every_spelling() -> None:
    """The check itself: each way of asking an exporter's name is caught, asking its profile is not."""
    asked = [
        'options.exporter == "dynamo"', 'kind in ("torchscript", "onnx")', "options.exporter == TORCHSCRIPT.name",
        "name != T.name", "profile is DYNAMO", "kind == profiles.DYNAMO.source_graph.kind",
        "exporter in {TORCHSCRIPT.name, 'x'}", "match e:\n    case 'dynamo':\n        pass",
    ]
    fine = ["profile.keeps_process_state", "profile_for(options.exporter).default_opset is None",
            "node.name == EXPORT_FUNCTION", "options.exporter == run.exporter"]
    imports = "from fixport.core.exporters.profiles import DYNAMO, TORCHSCRIPT, TORCHSCRIPT as T\n"
    names = {"torchscript", "dynamo", "fx"}
    for source in asked:
        assert _exporter_name_comparisons(ast.parse(imports + source), names), source
    for source in fine:
        assert not _exporter_name_comparisons(ast.parse(imports + source), names), source


def test_only_the_exporters_ask_which_exporter_it_is() -> None:
    """Outside core/exporters/, code asks the exporter (its object or profile) what it needs and never
    compares an exporter's name or its source graph's kind: a third exporter is a new class, not new
    branches."""
    from fixport.core.exporters.profiles import PROFILES

    names = {*PROFILES, *(profile.source_graph.kind for profile in PROFILES.values())}
    asking = []
    for folder in (*PACKAGE_FOLDERS, "bench", "scripts"):
        for path in (REPO / folder).rglob("*.py"):
            if path.is_relative_to(REPO / "core" / "exporters"):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            asking += [f"{path.relative_to(REPO)}:{line}" for line in _exporter_name_comparisons(tree, names)]
    assert not asking, f"ask the Exporter or its profile instead: {asking}"


# Texts of the window that may name an exporter's words, by file, with the reason.
WINDOW_TEXTS_NAMING_AN_EXPORTER = {
    ("gui/window_actions.py", "torch.export's dynamic_shapes"):
        "names the format the Dynamic shapes dialog writes, which both exporters take",
}


def _spoken_texts(tree: ast.AST) -> list[tuple[int, str]]:
    """The string literals of ``tree`` (f-strings' literal parts too), less docstrings."""
    documented = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree) if isinstance(node, documented)
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_the_window_speaks_of_the_source_graph_and_the_onnx_graph() -> None:
    """The window (gui/ and the pane layout in core/panes/) names no exporter and no exporter's graph
    in its own texts and keys: pane keys are "source" and "onnx", and titles, labels and hints that
    differ by exporter come from the exporter's profile (core/exporters/profiles.py)."""
    words = _exporter_words()
    naming = []
    for folder in ("gui", "core/panes"):
        for path in sorted((REPO / folder).rglob("*.py")):
            relative = path.relative_to(REPO).as_posix()
            allowed = [text for (file, text) in WINDOW_TEXTS_NAMING_AN_EXPORTER if file == relative]
            naming += [f"{relative}:{line}: {text!r}" for line, text in _spoken_texts(ast.parse(path.read_text()))
                       if words.search(text) and not any(allowed_text in text for allowed_text in allowed)]
    assert not naming, f"take these words from the exporter's profile, or key by side ('source', 'onnx'): {naming}"


def test_ruff_passes_with_the_projects_rules() -> None:
    """`ruff check` with the rule set in pyproject.toml ([tool.ruff.lint])."""
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(REPO)], cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def _private_fixport_names(path: Path) -> list[str]:
    """``_name``s this module takes from another Fixport module: imported, or read off an imported module."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: set[str] = set()  # names bound to Fixport modules here (`from fixport.x import y as m`)
    taken = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fixport"):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    taken.append(f"{node.module}.{alias.name}")
                modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            modules.update((a.asname or a.name) for a in node.names if a.name.startswith("fixport"))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            taken.append(f"{node.value.id}.{node.attr}")
    return taken


def test_no_module_takes_a_private_name_from_another() -> None:
    """A ``_name`` is its module's own business: another module (engine, bench, scripts) that needs it
    needs a public name, so a rename inside one module never breaks another."""
    taken = {f"{path.relative_to(REPO)}: {', '.join(names)}"
             for folder in (*PACKAGE_FOLDERS, "bench", "scripts") for path in (REPO / folder).rglob("*.py")
             if (names := _private_fixport_names(path))}
    assert taken == set()


def test_the_private_name_check_sees_imports_and_attribute_reads(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from fixport.core.loaders import loading as ld\nfrom fixport.core.x import _y, z\n"
                      "a = ld._private_thing\nb = ld.public\n")
    assert _private_fixport_names(module) == ["fixport.core.x._y", "ld._private_thing"]


MAIN_WINDOW_MAX_LINES = 400


def test_the_main_window_stays_a_thin_view() -> None:
    """gui/main_window.py wires widgets to the session; what grows goes to a module of its own
    (the export's drawing, the jobs' reports, the actions)."""
    lines = len((REPO / "gui" / "main_window.py").read_text(encoding="utf-8").splitlines())
    assert lines <= MAIN_WINDOW_MAX_LINES, f"gui/main_window.py has {lines} lines"


# The public template API re-exports on purpose: a template imports Fixport from one module.
REEXPORTING_FACADES = {"fixport.symbolics.api"}


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(["fixport", *(parts[:-1] if parts[-1] == "__init__" else parts)])


def _top_level_imports(tree: ast.Module) -> tuple[dict[str, str], set[str]]:
    """(name -> the Fixport module it is imported from, names the module defines itself)."""
    imported: dict[str, str] = {}
    defined: set[str] = set()
    statements = list(tree.body)
    while statements:
        node = statements.pop(0)
        if isinstance(node, ast.If | ast.Try):
            statements += [*node.body, *node.orelse, *[s for h in getattr(node, "handlers", []) for s in h.body]]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("fixport"):
            imported.update({alias.asname or alias.name: node.module or "" for alias in node.names})
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return {name: module for name, module in imported.items() if name not in defined}, defined


def second_import_paths(root: Path, folders: tuple[str, ...]) -> list[str]:
    """Every ``from A import n`` where ``A`` only imported ``n`` itself, every ``__all__`` that lists an
    imported name, and every module that is nothing but re-exports (a shim)."""
    paths = [p for folder in folders for p in (root / folder).rglob("*.py")] + sorted(root.glob("*.py"))
    trees = {_module_name(p, root): (p, ast.parse(p.read_text(encoding="utf-8"))) for p in paths}
    reimported = {name: _top_level_imports(tree)[0] for name, (_, tree) in trees.items()}
    found = []
    for name, (path, tree) in trees.items():
        where = path.relative_to(root)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in reimported \
                    and node.module not in REEXPORTING_FACADES:
                found += [f"{where}: {node.module}.{a.name} is {reimported[node.module][a.name]}.{a.name}"
                          for a in node.names if a.name in reimported[node.module]]
        for node in tree.body:
            if isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == ["__all__"] \
                    and name not in REEXPORTING_FACADES:
                listed = {e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant)}
                found += [f"{where}: __all__ lists {n}, imported" for n in sorted(listed & set(reimported[name]))]
        own = [node for node in tree.body if not (
            isinstance(node, ast.Import | ast.ImportFrom)
            or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
            or (isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == ["__all__"]))]
        if reimported[name] and not own and path.name != "__init__.py" and name not in REEXPORTING_FACADES:
            found.append(f"{where}: a shim, it only re-exports")
    return sorted(found)


def test_every_name_has_one_import_path_and_no_shim_is_left() -> None:
    """A name is imported from the module that defines it (issue 47): no engine module re-exports the
    foundation's names, and no module exists only to give a second path."""
    assert second_import_paths(REPO, (*PACKAGE_FOLDERS, "bench", "tests")) == []


def test_the_import_path_check_sees_second_paths_all_and_shims(tmp_path: Path) -> None:
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "a.py").write_text("def f() -> None: ...\n")
    (tmp_path / "core" / "b.py").write_text("from fixport.core.a import f\n\n__all__ = ['f']\n")
    (tmp_path / "core" / "c.py").write_text("from fixport.core.b import f\n\nx = f\n")
    assert second_import_paths(tmp_path, ("core",)) == [
        "core/b.py: __all__ lists f, imported", "core/b.py: a shim, it only re-exports",
        "core/c.py: fixport.core.b.f is fixport.core.a.f"]


# What the window may ask the workbench directly: questions, never edits (those are session methods).
WORKBENCH_QUESTIONS = {"model_request", "analyze_request", "autosave_file", "has_newer_autosave", "opset",
                       "exporter_name"}
MUTATING_METHODS = {"append", "extend", "insert", "remove", "pop", "clear", "update", "setdefault", "add",
                    "discard"}
STATE_NAMES = {"workbench", "project"}


def _reaches_state(node: ast.AST) -> bool:
    """Whether an expression reads through the workbench or its project (``window.workbench.project.x``,
    or a local ``project`` taken from it)."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        if isinstance(node, ast.Attribute) and node.attr in STATE_NAMES:
            return True
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name) and node.id in STATE_NAMES


def session_bypasses(tree: ast.AST) -> list[int]:
    """Lines that edit the workbench or its project without the session: an assignment to one of their
    attributes or items, ``setattr`` on them, a call of a list/dict edit on them, or a workbench method
    that is not a question."""
    lines = []
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute | ast.Subscript) and _reaches_state(part.value):
                    lines.append(node.lineno)
                    break
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "setattr" and node.args and _reaches_state(node.args[0]):
            lines.append(node.lineno)
        elif isinstance(func, ast.Attribute) and _reaches_state(func.value):
            owner = func.value
            on_workbench = (isinstance(owner, ast.Attribute) and owner.attr == "workbench") or (
                isinstance(owner, ast.Name) and owner.id == "workbench")
            if func.attr in MUTATING_METHODS or (on_workbench and func.attr not in WORKBENCH_QUESTIONS):
                lines.append(node.lineno)
    return sorted(set(lines))


def test_no_edit_in_the_window_bypasses_the_session() -> None:
    """Every toolbar and dialog edit is a session method that emits a session event (issue 47): gui/
    reads the workbench and its project, and never writes to them."""
    found = [f"{path.relative_to(REPO)}:{line}" for path in sorted((REPO / "gui").rglob("*.py"))
             for line in session_bypasses(ast.parse(path.read_text(encoding="utf-8")))]
    assert found == []


def test_the_session_bypass_check_sees_each_kind_of_edit() -> None:
    edits = ["window.workbench.project.trust = True", "self.workbench.comparison = None",
             "project = window.workbench.project\nproject.export_options['opset'] = 18",
             "window.workbench.project.mappings.append(m)", "setattr(window.workbench.project, 'trust', 1)",
             "window.workbench.save(path)", "workbench.discard_autosave()", "project.input_specs += ['x']"]
    reads = ["options = dict(window.workbench.project.export_options)\noptions['opset'] = 18",
             "request = window.workbench.model_request()", "window.session.save(path)",
             "self.selected = window.workbench.project.model_path", "items.append(window.workbench.project)"]
    for source in edits:
        assert session_bypasses(ast.parse(source)), source
    for source in reads:
        assert not session_bypasses(ast.parse(source)), source


ERROR_TEXT_FIELDS = {"message", "hint", "details", "window_hint", "messages"}
ERROR_NAMES = {"error", "exc", "exception", "err"}


def text_decisions(tree: ast.AST) -> list[int]:
    """Lines that decide by searching an error's text: ``"x" in error.hint``, ``str(error)``'s words,
    ``error.message.startswith(...)``."""
    def is_text(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr in ERROR_TEXT_FIELDS) or (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str"
            and len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id in ERROR_NAMES)

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops) and any(
                is_text(side) for side in node.comparators):
            lines.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_text(node.func.value)
              and node.func.attr in {"startswith", "endswith", "find", "count", "index"}):
            lines.append(node.lineno)
    return lines


def test_the_window_and_the_session_act_on_failure_kinds_not_words() -> None:
    """A failed job's meaning is its record (the error's class and fields), never a search of its text."""
    found = [f"{path.relative_to(REPO)}:{line}" for folder in ("gui", "core/session")
             for path in sorted((REPO / folder).rglob("*.py"))
             for line in text_decisions(ast.parse(path.read_text(encoding="utf-8")))]
    assert found == []
    for source in ['"--trust" in error.hint', "error.message.startswith('x')", "'CUDA' not in str(exc)"]:
        assert text_decisions(ast.parse(source)), source
    for source in ["isinstance(error, UntrustedFileError) and 'x' in names", "str(path).endswith('.json')"]:
        assert not text_decisions(ast.parse(source)), source
