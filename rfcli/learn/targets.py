"""Targets: classification (classes, one-vs-rest / one-hot) or regression."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from rfcli.errors import ConfigError, InputError, UsageError
from rfcli.registry import require

TASKS = ("classification", "regression")


def target_shift(first):
    """What learners subtract from regression targets before their sums of squares (GP
    regression's statistics, the ridge's): the first row's target(s), 0 where not finite.
    Sums of squares of targets far from zero lose their digits (y = 1e9 + sin x: a ridge's
    training MSE came out -131); any value near the targets removes the offset, and the
    model's intercept gets it back.  A scalar for a scalar."""
    a = np.asarray(first, dtype=np.float64)
    out = np.where(np.isfinite(a), a, 0.0)
    return float(out) if out.ndim == 0 else out


class Targets:
    def __init__(self, task: str, classes: list | None = None):
        if task not in TASKS:
            raise UsageError(f"task must be one of {', '.join(TASKS)}")
        self.task = task
        self.classes = list(classes) if classes is not None else None
        if task == "classification":
            if not self.classes or len(self.classes) < 2:
                raise InputError("classification needs at least 2 classes in the label column")
            self._sorted = np.array(sorted(self.classes, key=_key), dtype=object)
            self._order = np.array([self.classes.index(c) for c in self._sorted])

    @classmethod
    def fit(
        cls, label_chunks: Iterable[np.ndarray], task: str | None, label_kind: str | None
    ) -> Targets:
        """Infer the task (int/text labels: classification; float: regression) and classes."""
        if task is None:
            task = "regression" if label_kind == "float" else "classification"
        if task == "regression":
            if label_kind == "category":
                raise UsageError("a text label cannot be a regression target")
            return cls("regression")
        seen: set = set()
        for y in label_chunks:
            seen.update(np.unique(y).tolist())
            if len(seen) > 10000:
                raise InputError(
                    "the label has more than 10000 distinct values: is it a regression target?"
                )
        return cls("classification", sorted(seen, key=_key))

    @property
    def value_kind(self) -> str:
        """The type of the label values: ``int``, ``float``, ``bool`` or ``text`` (a
        regression's values are ``float``; classes of mixed types are ``text``)."""
        if self.task == "regression":
            return "float"
        kinds = {_kind(c) for c in self.classes}
        if len(kinds) == 1:
            return kinds.pop()
        return "float" if kinds <= {"int", "float"} else "text"

    @property
    def value_dtype(self) -> np.dtype:
        """The NumPy dtype of predictions: int64, float64, bool, or unicode for text (as
        wide as the longest class)."""
        kind = self.value_kind
        if kind == "text":
            return np.dtype(f"<U{max(len(str(c)) for c in self.classes)}")
        return np.dtype({"int": np.int64, "float": np.float64, "bool": np.bool_}[kind])

    def typed(self, values: np.ndarray) -> np.ndarray:
        """Predicted values (an object array of classes, or floats) with the label's type:
        int64, float64 or bool arrays, text as an object array of ``str``."""
        kind = self.value_kind
        if kind == "text":
            return np.asarray([str(v) for v in values], dtype=object)
        return np.asarray(values, dtype=self.value_dtype)

    def comparable(self, y: np.ndarray, where: str = "the test data") -> np.ndarray:
        """Labels ``y`` (of a test set) as values of the model's label type, so that they
        can be compared with its classes: text that spells the numbers exactly for numeric
        classes, numbers for text classes that spell them (``3`` for ``"3"``).  InputError
        when they do not convert exactly, or when none of them is a class of the model
        (text labels for a model of integer classes, or the other way round)."""
        y = np.asarray(y)
        want, have = self.value_kind, _array_kind(y)
        if have == want or len(y) == 0 or (want == "float" and have == "int"):
            return y
        model = f"the model was trained on {_KIND_WORDS[want]} ({_sample(self.classes)})"
        got = f"{where} has {_LABEL_WORDS[have]} labels ({_sample(np.unique(y).tolist())})"
        try:
            out = _convert(y, want)
        except ValueError:
            raise InputError(
                f"{got} but {model}; relabel the test data as the training data"
            ) from None
        known = set(self.classes) if self.task == "classification" else None
        if known is not None and not any(v in known for v in np.unique(out).tolist()):
            raise InputError(f"{got}: none of them is a class of the model; {model}")
        return out

    def regression_values(self, y: np.ndarray, where: str = "the test data") -> np.ndarray:
        """Regression targets as float64 (InputError for text that is not numbers)."""
        try:
            return np.asarray(y, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError(
                f"{where} has text labels ({_sample(np.unique(np.asarray(y)).tolist())}) but "
                "the model is a regression of numbers"
            ) from None

    @property
    def n_outputs(self) -> int:
        return len(self.classes) if self.task == "classification" else 1

    def index(self, y: np.ndarray) -> np.ndarray:
        """Class index of each label (-1 for a class not seen in training)."""
        y = np.asarray(y, dtype=object)
        pos = np.searchsorted(self._sorted, y) if len(y) else np.zeros(0, int)
        pos = np.clip(pos, 0, len(self._sorted) - 1)
        ok = self._sorted[pos] == y
        return np.where(ok, self._order[pos], -1)

    def encode(self, y: np.ndarray) -> np.ndarray:
        """Float64 target matrix: one-hot (+1/0) for classes, the values for regression."""
        if self.task == "regression":
            return np.asarray(y, dtype=np.float64).reshape(-1, 1)
        idx = self.index(y)
        Y = np.zeros((len(idx), len(self.classes)))
        Y[np.arange(len(idx))[idx >= 0], idx[idx >= 0]] = 1.0
        return Y

    def decode(self, scores: np.ndarray) -> np.ndarray:
        """Predictions from scores (n, n_outputs): class values, or the regression values."""
        if self.task == "regression":
            return scores[:, 0]
        return np.asarray(self.classes, dtype=object)[np.argmax(scores, axis=1)]

    def to_config(self) -> dict[str, Any]:
        return {"task": self.task, "classes": self.classes}

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> Targets:
        task = require(cfg, "task", str, "targets")
        classes = cfg.get("classes")
        if classes is not None and not isinstance(classes, list):
            raise ConfigError("targets: classes must be a list")
        return cls(task, classes)


def _key(v):
    # numbers before text, each in natural order
    return (isinstance(v, str), v)


_KIND_WORDS = {"int": "integer classes", "float": "numbers", "bool": "true/false classes",
               "text": "text classes"}  # fmt: skip


_LABEL_WORDS = {"int": "integer", "float": "non-integer", "bool": "true/false", "text": "text"}


def _kind(v) -> str:
    if isinstance(v, bool | np.bool_):
        return "bool"
    if isinstance(v, int | np.integer):
        return "int"
    if isinstance(v, float | np.floating):
        return "float"
    return "text"


def _array_kind(y: np.ndarray) -> str:
    k = y.dtype.kind
    if k == "b":
        return "bool"
    if k in "iu":
        return "int"
    if k == "f":
        return "float"
    if k == "O":
        kinds = {_kind(v) for v in y[:1000]}
        if kinds and "text" not in kinds:
            return kinds.pop() if len(kinds) == 1 else "float"
    return "text"


def _sample(values, n: int = 3) -> str:
    values = list(values)
    s = ", ".join(repr(v) for v in values[:n])
    return s + (", ..." if len(values) > n else "")


def _convert(y: np.ndarray, want: str) -> np.ndarray:
    """``y`` as values of kind ``want``; ValueError when a value does not convert exactly."""
    uniq, inv = np.unique(y.astype(object) if y.dtype.kind == "O" else y, return_inverse=True)
    out = [_convert_one(v, want) for v in uniq.tolist()]
    if want == "text":
        return np.asarray(out, dtype=object)[inv]
    return np.asarray(out, dtype={"int": np.int64, "float": np.float64, "bool": np.bool_}[want])[
        inv
    ]


def _convert_one(v, want: str):
    if want == "text":
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        return str(v)
    if want == "bool":
        if isinstance(v, str) and v.strip().lower() in ("true", "false"):
            return v.strip().lower() == "true"
        if v in (0, 1):
            return bool(v)
        raise ValueError(v)
    f = float(v.strip()) if isinstance(v, str) else float(v)  # ValueError for other text
    if want == "int":
        if not f.is_integer():
            raise ValueError(v)
        return int(f)
    return f


class Outputs(Targets):
    """Regression targets of ``k`` outputs (the columns of a 2-D label) for the ridge
    statistics: ``k`` problems that share the features and alpha."""

    def __init__(self, k: int):
        super().__init__("regression")
        self.k = k

    @property
    def n_outputs(self) -> int:
        return self.k

    def encode(self, y: np.ndarray) -> np.ndarray:
        return np.asarray(y, dtype=np.float64).reshape(len(y), self.k)

    def decode(self, scores: np.ndarray) -> np.ndarray:
        return scores if self.k > 1 else scores[:, 0]
