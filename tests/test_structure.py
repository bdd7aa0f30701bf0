"""The library's shape: data flows one way (no import cycle) and modules keep their privates.

Both read the source with ``ast`` (nothing is imported), so function-local imports count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ctxlab"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path):
    """(module, names) for every ``from ctxlab... import names`` and ``import ctxlab...`` in a file."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("ctxlab"):
            yield node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("ctxlab"):
                    yield alias.name, []


def dependency_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        deps = set()
        for module, names in imports(path):
            deps.add(module)
            deps.update(f"{module}.{n}" for n in names if f"{module}.{n}" in modules)
        # a package's __init__ is not a dependency of its own submodules' users in the cycle sense
        graph[name] = {d for d in deps if d in modules and d != name and not name.startswith(d + ".") and d != "ctxlab"}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return path[path.index(dep):] + [dep]
            if dep not in state and (cycle := visit(dep, path + [dep])):
                return cycle
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start, [start])):
            return cycle
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycle_in_ctxlab():
    assert find_cycle(dependency_graph()) is None


def test_nothing_imports_another_modules_private_names():
    sources = [*PACKAGE.rglob("*.py"), *(ROOT / "lessons").glob("*.py"), *(ROOT / "exercises" / "src").glob("*.py")]
    leaks = [f"{path.relative_to(ROOT)}: {module}.{name}" for path in sources for module, names in imports(path)
             for name in names if name.startswith("_") and not name.startswith("__")]
    assert not leaks, "private names imported across modules:\n" + "\n".join(leaks)




def test_modules_functions_and_lessons_stay_small():
    """One job per module (<= 400 lines), per function (<= 80 lines), one lesson per source (<= 450)."""
    too_long = []
    for path in sorted(PACKAGE.rglob("*.py")):  # none generated: the check-cell manifest is JSON data
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > 400:
            too_long.append(f"{path.relative_to(ROOT)}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                too_long.append(f"{path.relative_to(ROOT)}: {node.name} has {node.end_lineno - node.lineno + 1} lines")
    for path in sorted((ROOT / "lessons").glob("*.py")):
        if len(path.read_text(encoding="utf-8").splitlines()) > 450:
            too_long.append(f"{path.relative_to(ROOT)}: over 450 lines")
    assert not too_long, "\n".join(too_long)


def test_exactly_one_training_loop():
    """Only ``train.descend`` calls backward() inside a loop: every trainer goes through it."""
    loops = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for loop in ast.walk(fn):
                if isinstance(loop, (ast.For, ast.While)) and any(
                        isinstance(n, ast.Attribute) and n.attr == "backward" for n in ast.walk(loop)):
                    loops.append(f"{module_name(path)}.{fn.name}")
    assert sorted(set(loops)) == ["ctxlab.train.descend"], loops


def test_packages_re_export_their_modules_public_names():
    """``ctxlab.align.cka`` works whichever module of the package defines it (lessons import from the package)."""
    import importlib

    missing = []
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        if init.parent.name in ("course", "checks", "widgets"):
            continue  # these packages export a chosen interface, not every name
        package = importlib.import_module(module_name(init))
        for path in sorted(init.parent.glob("*.py")):
            if path.name == "__init__.py":
                continue
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    names = [node.name]
                elif isinstance(node, ast.Assign):
                    names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    names = [node.target.id]
                else:
                    names = []
                missing += [f"{module_name(path)}.{n}" for n in names if not n.startswith("_") and not hasattr(package, n)]
    assert not missing, "not re-exported by their package: " + ", ".join(missing)
