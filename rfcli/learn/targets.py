"""Targets: classification (classes, one-vs-rest / one-hot) or regression."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from rfcli.errors import ConfigError, InputError, UsageError
from rfcli.registry import require

TASKS = ("classification", "regression")


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
