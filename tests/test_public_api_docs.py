"""The public API is documented in numpydoc sections: every function and class that
``import rfcli`` exports (``rfcli._EXPORTS``) and that ``rfcli.sklearn`` exports, and the
public methods of the scikit-learn estimators.

* a function (or method) with parameters beyond ``self``/``cls`` has a ``Parameters``
  section naming each of them;
* a function that returns something (a ``return`` with a value in its own body) has a
  ``Returns`` section, a generator a ``Yields`` section;
* a class whose constructor takes parameters has a ``Parameters`` section (in the class
  docstring) naming each of them.

An override without a docstring of its own is documented by the method it overrides
(``inspect.getdoc`` finds it, as Sphinx does).

Names defined in modules other people were changing when a check was added are listed in
:data:`KNOWN_GAPS`, with the sections they lacked then: those may still be missing (take a
name off the list once its sections are there)."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap

import pytest

import rfcli

sklearn_api = pytest.importorskip("rfcli.sklearn")

#: name -> the sections it still lacks (none now)
KNOWN_GAPS: dict[str, set[str]] = {}


def _section(doc: str, name: str) -> str | None:
    """The text of a numpydoc section (up to the next section), or None without one."""
    head = f"{name}\n{'-' * len(name)}\n"
    if head not in doc:
        return None
    body = doc.split(head, 1)[1]
    lines = body.splitlines()
    for i in range(1, len(lines)):  # a section ends where the next heading starts
        if lines[i] and set(lines[i]) == {"-"} and lines[i - 1].strip():
            return "\n".join(lines[: i - 1])
    return body


def _names(section: str) -> set[str]:
    """The parameter names a Parameters section documents: its unindented lines, ``name :
    type`` or ``a, b, c`` (several sharing a description)."""
    names = set()
    for line in section.splitlines():
        if line and not line[0].isspace():
            head = re.split(r"\s:(?:\s|$)", line, maxsplit=1)[0]
            names.update(n.strip().lstrip("*") for n in head.split(","))
    return names


def _params(obj) -> list[str]:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in sig.parameters.values()
        if p.name not in ("self", "cls") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def _returns(fn) -> str | None:
    """ "Returns" if ``fn``'s own body returns a value, "Yields" for a generator, else None."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    body = tree.body[0]
    todo, found = list(body.body), None
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue  # a nested function's returns are its own
        if isinstance(node, ast.Yield | ast.YieldFrom):
            return "Yields"
        if isinstance(node, ast.Return) and node.value is not None:
            if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                found = "Returns"
        todo.extend(ast.iter_child_nodes(node))
    return found


def _function_gaps(fn, params: list[str]) -> set[str]:
    doc = inspect.getdoc(fn) or ""
    gaps = set()
    if params:
        section = _section(doc, "Parameters")
        if section is None or not set(params) <= _names(section):
            gaps.add("Parameters")
    kind = _returns(fn)
    if kind is not None and _section(doc, kind) is None:
        gaps.add(kind)
    return gaps


def _class_gaps(cls) -> set[str]:
    params = _params(cls)
    if not params:
        return set()
    section = _section(inspect.getdoc(cls) or "", "Parameters")
    if section is None or not set(params) <= _names(section):
        return {"Parameters"}
    return set()


def _methods(cls):
    """The public methods (and class/static methods) of ``cls`` defined in rfcli."""
    for klass in cls.__mro__:
        if not klass.__module__.startswith("rfcli"):
            continue
        for name, v in vars(klass).items():
            if name.startswith("_"):
                continue
            fn = getattr(v, "__func__", v)
            fn = getattr(fn, "fn", fn)  # rfcli.sklearn._linear._needs_probability
            if inspect.isfunction(fn):
                yield name, fn


def _api():
    """(qualified name, object) of every export and of the estimators' public methods."""
    items = [(f"rfcli.{n}", getattr(rfcli, n)) for n in sorted(rfcli._EXPORTS)]
    items += [(f"rfcli.sklearn.{n}", getattr(sklearn_api, n)) for n in sklearn_api.__all__]
    out = []
    for name, obj in items:
        if inspect.isclass(obj):
            out.append((name, obj))
            if name.startswith("rfcli.sklearn.") or name in METHODS_OF:
                seen = set()
                for m, fn in _methods(obj):
                    if m not in seen:
                        seen.add(m)
                        out.append((f"{name}.{m}", fn))
        elif inspect.isfunction(obj):
            out.append((name, obj))
    return out


#: exported classes whose public methods are checked too (the estimators' always are)
METHODS_OF = {f"rfcli.{n}" for n in rfcli._EXPORTS}


def _gaps(obj) -> set[str]:
    if inspect.isclass(obj):
        return _class_gaps(obj)
    return _function_gaps(obj, _params(obj))


API = _api()


@pytest.mark.parametrize("name, obj", API, ids=[n for n, _ in API])
def test_the_public_api_has_numpydoc_sections(name, obj):
    assert (inspect.getdoc(obj) or "").strip(), f"{name} has no docstring"
    assert _gaps(obj) <= KNOWN_GAPS.get(name, set()), name


def test_the_walk_covers_the_api():
    names = {n for n, _ in API}
    assert {"rfcli.encode", "rfcli.Encoder", "rfcli.sklearn.RandomFeatureSVC.fit",
            "rfcli.sklearn.load", "rfcli.TrainResult.save"} <= names  # fmt: skip
    assert set(KNOWN_GAPS) <= names


def test_the_checks_find_a_missing_section():
    def documented(x, y=1):
        """Sum.

        Parameters
        ----------
        x, y : int
            Terms.

        Returns
        -------
        int
            The sum.
        """
        return x + y

    def undocumented_y(x, y=1):
        """Sum.

        Parameters
        ----------
        x : int
            A term.

        Returns
        -------
        int
            The sum.
        """
        return x + y

    def no_returns(x):
        """Twice.

        Parameters
        ----------
        x : int
            A term.
        """
        return 2 * x

    assert _gaps(documented) == set()
    assert _gaps(undocumented_y) == {"Parameters"}
    assert _gaps(no_returns) == {"Returns"}
