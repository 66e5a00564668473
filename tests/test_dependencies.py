"""Every package rfcli imports is declared in pyproject.toml: a runtime dependency, or an
optional extra that is imported only where it is used (inside a function or a ``try``),
so that ``import rfcli`` and every command work with the runtime dependencies alone."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: modules that exist for an optional extra: they may import it at their top level
OPTIONAL_MODULES = ("rfcli/sklearn/", "rfcli/engines/dask.py")


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].strip().lower().replace("_", "-")


def _names(requirement: str) -> set[str]:
    """The distribution a requirement names, and those its extras bring that rfcli imports
    (``dask[distributed]``: dask and distributed)."""
    names = {_name(requirement)}
    bracket = re.search(r"\[([^\]]*)\]", requirement)
    if bracket:
        names |= {e.strip().lower() for e in bracket.group(1).split(",")}
    return names


def _declared() -> tuple[set[str], set[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = set().union(*(_names(r) for r in project["dependencies"]))
    extras = set().union(
        *(_names(r) for reqs in project["optional-dependencies"].values() for r in reqs)
    )
    return runtime, extras


def _imports(path: pathlib.Path):
    """(top-level package, at the module's top level?) of every absolute import."""
    tree = ast.parse(path.read_text())
    top_level = set()
    for node in tree.body:  # statements run at import (not in functions, try or if blocks)
        if isinstance(node, ast.Import | ast.ImportFrom):
            top_level.add(id(node))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            yield name.split(".")[0], id(node) in top_level


@functools.cache
def _packages() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _distributions(package: str) -> set[str]:
    dists = _packages().get(package, [])
    return {d.lower().replace("_", "-") for d in dists}


def test_every_imported_package_is_declared():
    runtime, extras = _declared()
    problems = []
    for path in sorted((ROOT / "rfcli").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        optional_module = rel.startswith(OPTIONAL_MODULES)
        for package, at_top in _imports(path):
            if package == "rfcli" or package in sys.stdlib_module_names:
                continue
            dists = _distributions(package) or {package.lower().replace("_", "-")}
            if dists & runtime:
                continue
            if not dists & extras:
                problems.append(f"{rel}: {package} ({', '.join(sorted(dists))}) is not declared")
            elif at_top and not optional_module:
                problems.append(f"{rel}: {package} is an optional extra imported at load")
    assert not problems, "\n".join(problems)


def test_the_runtime_dependencies_are_the_ones_rfcli_imports_or_needs():
    runtime, _ = _declared()
    imported = set()
    for path in (ROOT / "rfcli").rglob("*.py"):
        for package, _ in _imports(path):
            imported |= _distributions(package)
    # numcodecs: zarr-python's codecs, which zarr reads stores with; not imported by rfcli
    assert runtime - imported <= {"numcodecs"}
