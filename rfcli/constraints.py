"""Declarative checks of the settings objects: each settings dataclass (EncodeSettings,
ReadSettings, TrainSettings, GPRSettings, DaskSettings) declares, per field, the values it
takes (a list of alternatives: a type and range, a choice of words, None), and the rules
that tie fields together; :meth:`Validated.validate` checks an object against them before
any work, in the spirit of scikit-learn's ``_parameter_constraints`` (Pedregosa et al.,
"Scikit-learn: Machine Learning in Python", JMLR 2011).

A value that none of a field's alternatives takes is refused in one line naming the field:
a :class:`~rfcli.errors.ParameterTypeError` (a ``TypeError``) when no alternative takes its
type (``normalized="yes"``, ``max_iter=2.5``, ``tol="abc"``), else a
:class:`~rfcli.errors.UsageError` (a ``ValueError``: ``tol=-1``, ``max_iter=0``).  The
command line validates the same objects, naming its flags instead of the fields
(``names``: field -> flag), so there is one copy of every check.

No NumPy here: the command line imports this module to build its messages.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar


def show(value) -> str:
    """A value in a message: numbers as ``%g`` (``-1``, ``1e-09``), the rest as repr."""
    if isinstance(value, float | numbers.Real) and not isinstance(value, bool | numbers.Integral):
        return f"{float(value):g}"
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    return repr(value)


def _is_bool(v) -> bool:
    return isinstance(v, bool) or (
        type(v).__module__ == "numpy" and type(v).__name__ in ("bool", "bool_")
    )


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not _is_bool(v)


def _is_real(v) -> bool:
    return isinstance(v, numbers.Real) and not _is_bool(v)


class Constraint:
    """One alternative of a field: ``takes_type`` (whether the value is of its type) and
    ``takes`` (whether it is one of its values); ``text`` says which values, for messages."""

    text = ""

    def takes_type(self, v) -> bool:
        raise NotImplementedError

    def takes(self, v) -> bool:
        return self.takes_type(v)


class Boolean(Constraint):
    """True or False (a NumPy bool too); never 1, 0 or "yes"."""

    text = "True or False"

    def takes_type(self, v) -> bool:
        return _is_bool(v)


class Null(Constraint):
    text = "None"

    def takes_type(self, v) -> bool:
        return v is None


@dataclass(frozen=True)
class Interval(Constraint):
    """Numbers of ``kind`` ("int": integers, bools refused; "real": finite numbers, ints
    too) in a range: ``lo``/``hi`` bounds, ``lo_open``/``hi_open`` strict."""

    kind: str = "real"
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False

    def takes_type(self, v) -> bool:
        return _is_int(v) if self.kind == "int" else _is_real(v)

    def takes(self, v) -> bool:
        if not self.takes_type(v):
            return False
        if self.kind == "real" and not math.isfinite(float(v)):
            return False
        if self.lo is not None and (v <= self.lo if self.lo_open else v < self.lo):
            return False
        return not (self.hi is not None and (v >= self.hi if self.hi_open else v > self.hi))

    def bounds(self) -> str:
        """The range alone (``>= 1``, ``> 0``, ``in 1..8``, ``in (0, 1)``)."""
        lo = None if self.lo is None else (">" if self.lo_open else ">=", show(self.lo))
        hi = None if self.hi is None else ("<" if self.hi_open else "<=", show(self.hi))
        if lo and hi:
            if self.kind == "int" and not (self.lo_open or self.hi_open):
                return f"in {lo[1]}..{hi[1]}"
            left, right = "(" if self.lo_open else "[", ")" if self.hi_open else "]"
            return f"in {left}{lo[1]}, {hi[1]}{right}"
        if lo or hi:
            return " ".join(lo or hi)
        return ""

    @property
    def text(self) -> str:  # type: ignore[override]
        what = "an integer" if self.kind == "int" else "a number"
        return f"{what} {self.bounds()}".strip()


class Even(Constraint):
    """An even integer >= 2 (Gauss-Legendre nodes per dimension)."""

    text = "an even integer >= 2"

    def takes_type(self, v) -> bool:
        return _is_int(v)

    def takes(self, v) -> bool:
        return _is_int(v) and v >= 2 and v % 2 == 0


class Options(Constraint):
    """One of some words (strings)."""

    def __init__(self, *words: str):
        self.words = tuple(words)

    def takes_type(self, v) -> bool:
        return isinstance(v, str)

    def takes(self, v) -> bool:
        return isinstance(v, str) and v in self.words

    @property
    def text(self) -> str:  # type: ignore[override]
        if len(self.words) == 1:
            return repr(self.words[0])
        return "one of " + ", ".join(self.words)


class Text(Constraint):
    """Any non-empty string."""

    text = "a string"

    def takes_type(self, v) -> bool:
        return isinstance(v, str)

    def takes(self, v) -> bool:
        return isinstance(v, str) and v != ""


class Dict(Constraint):
    """A mapping with string keys."""

    text = "a dict with string keys"

    def takes_type(self, v) -> bool:
        return isinstance(v, Mapping)

    def takes(self, v) -> bool:
        return isinstance(v, Mapping) and all(isinstance(k, str) for k in v)


def _seq(v) -> bool:
    """A list or tuple (or an array-like with a length), not a string."""
    return (
        not isinstance(v, str | bytes | Mapping)
        and isinstance(v, Sequence)
        or (type(v).__module__ == "numpy" and hasattr(v, "__len__"))
    )


class ListOf(Constraint):
    """A non-empty list (or tuple) whose items all satisfy ``item``."""

    def __init__(self, item: Constraint, empty: bool = False):
        self.item, self.empty = item, empty

    def takes_type(self, v) -> bool:
        return _seq(v) and all(self.item.takes_type(x) for x in v)

    def takes(self, v) -> bool:
        return (
            self.takes_type(v) and (self.empty or len(v) > 0) and all(self.item.takes(x) for x in v)
        )

    @property
    def text(self) -> str:  # type: ignore[override]
        return f"a list of {'' if self.empty else 'one or more '}values each {self.item.text}"


class Range(Constraint):
    """A pair ``(lo, hi)`` of numbers with ``0 < lo <= hi < inf``."""

    text = "a pair (lo, hi) with 0 < lo <= hi"

    def takes_type(self, v) -> bool:
        return _seq(v) and all(_is_real(x) for x in v)

    def takes(self, v) -> bool:
        if not self.takes_type(v) or len(v) != 2:
            return False
        lo, hi = (float(x) for x in v)
        return 0 < lo <= hi < math.inf


class Ranges(Constraint):
    """One or more pairs ``(lo, hi)`` with ``0 < lo <= hi`` (one per input)."""

    text = "a list of pairs (lo, hi) with 0 < lo <= hi"

    def takes_type(self, v) -> bool:
        return _seq(v) and all(Range().takes_type(p) for p in v)

    def takes(self, v) -> bool:
        return self.takes_type(v) and len(v) > 0 and all(Range().takes(p) for p in v)


@dataclass(frozen=True)
class Rule:
    """A condition on several fields (``fields``: the ones it reads, in order); ``ok`` gets
    their values, ``message`` a function (field -> name in messages) and the values.  Rules
    are checked after every field passed its own constraints."""

    fields: tuple[str, ...]
    ok: Callable[..., bool]
    message: Callable[..., str]


def _name(names: Mapping[str, str] | None, field: str) -> str:
    return (names or {}).get(field, field)


def check_field(name: str, value, allowed: Sequence[Constraint]) -> None:
    """``value`` taken by one of the ``allowed`` alternatives, else refused naming ``name``."""
    from rfcli.errors import ParameterTypeError, UsageError

    if any(c.takes(value) for c in allowed):
        return
    typed = [c.takes_type(value) for c in allowed]
    # a value of the right type out of range: the range alone (``-1``: "must be > 0")
    texts = [c.bounds() if t and isinstance(c, Interval) and c.bounds() else c.text
             for c, t in zip(allowed, typed, strict=True)]  # fmt: skip
    what = texts[0] if len(texts) == 1 else ", ".join(texts[:-1]) + " or " + texts[-1]
    if any(typed):  # a value out of range: as a number reads (-1, 1e-09)
        raise UsageError(f"{name} must be {what}, got {show(value)}")
    raise ParameterTypeError(f"{name} must be {what}, got {value!r}")  # its type shown: 40.0


def check(obj, constraints: Mapping[str, Sequence[Constraint]], rules: Sequence[Rule] = (),
          names: Mapping[str, str] | None = None) -> None:  # fmt: skip
    """Check every field of ``obj`` named in ``constraints``, then the ``rules``; messages
    name the fields, or ``names[field]`` (the command line's flags)."""
    from rfcli.errors import UsageError

    for field, allowed in constraints.items():
        check_field(_name(names, field), getattr(obj, field), allowed)
    for rule in rules:
        values = [getattr(obj, f) for f in rule.fields]
        if not rule.ok(*values):
            raise UsageError(rule.message(lambda f: _name(names, f), *values))


class Validated:
    """Mixin of the settings dataclasses: ``_parameter_constraints`` (field -> list of
    alternatives; every field must be listed) and ``_rules`` (checks across fields)."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {}
    _rules: ClassVar[tuple[Rule, ...]] = ()

    def validate(self, names: Mapping[str, str] | None = None):
        """Refuse a bad field value, or fields that contradict each other, in one line
        naming the field.

        Parameters
        ----------
        names : mapping of str to str or None, default=None
            The name a message gives each field (a CLI passes its flags: ``--tol``); a
            field not in it is named as it is.

        Returns
        -------
        Validated
            The object itself, so that ``Settings(...).validate()`` chains.

        Raises
        ------
        ParameterTypeError
            A field of the wrong type (a ``TypeError``).
        UsageError
            A value out of range, or fields that contradict each other (a ``ValueError``).
        """
        check(self, self._parameter_constraints, self._rules, names)
        return self


def settings_check(value, cls, name: str):
    """``value`` (an instance of the settings class ``cls``, or None for its defaults),
    validated: what a job does with each settings argument before any work."""
    from rfcli.errors import ParameterTypeError

    if value is None:
        value = cls()
    elif not isinstance(value, cls):
        raise ParameterTypeError(f"{name} must be a {cls.__name__}, got {type(value).__name__}")
    return value.validate()


def describe_table(cls) -> dict[str, Any]:
    """Field -> the text of its alternatives (documentation, tests)."""
    return {f: [c.text for c in cs] for f, cs in cls._parameter_constraints.items()}
