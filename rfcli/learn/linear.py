"""What every linear model on random features shares: weights ``W`` (m, K) and intercepts
``b`` (K,), scores ``F W + b``, targets, and the JSON + arrays state."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from rfcli.errors import ConfigError
from rfcli.learn.targets import Targets
from rfcli.registry import Registry, require

MODELS = Registry("model")
MODELS.lazy("rfcli.learn.svm", "svm")
MODELS.lazy("rfcli.learn.ridge", "krr")
MODELS.lazy("rfcli.learn.gpr", "gpr")


class LinearModel:
    kind: ClassVar[str]

    def __init__(
        self,
        targets: Targets,
        W: np.ndarray,
        b: np.ndarray,
        normalized: bool,
        info: dict | None = None,
    ):
        self.targets = targets
        self.W = np.asarray(W, dtype=np.float64)
        self.b = np.asarray(b, dtype=np.float64)
        self.normalized = bool(normalized)
        self.info = dict(info or {})  # training report: hyperparameters, iterations, objective
        if self.W.ndim != 2 or self.b.shape != (self.W.shape[1],):
            raise ConfigError(
                f"model {self.kind}: W {self.W.shape} and b {self.b.shape} do not fit"
            )
        self._W32 = self.W.astype(np.float32)

    @property
    def n_features(self) -> int:
        return self.W.shape[0]

    def scores(self, F: np.ndarray, precise: bool = True) -> np.ndarray:
        """``F W + b`` as a float64 product, whose rows do not depend on which other rows
        share the product (some BLAS kernels round a float32 row differently by its place
        in the block: predictions would depend on the batch); ``precise=False``: the float32
        product (half the cost)."""
        if precise:
            return np.asarray(F, dtype=np.float64) @ self.W + self.b
        return (F @ self._W32).astype(np.float64) + self.b

    def predict(self, F: np.ndarray) -> np.ndarray:
        return self.targets.decode(self.scores(F))

    def to_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        cfg = {
            "kind": self.kind,
            "targets": self.targets.to_config(),
            "normalized": self.normalized,
            "info": self.info,
        }
        return cfg, {"W": self.W, "b": self.b}

    @classmethod
    def from_state(cls, cfg: dict[str, Any], arrays: dict[str, np.ndarray]) -> LinearModel:
        klass = MODELS.get(require(cfg, "kind", str, "model"))
        for k in ("W", "b"):
            if k not in arrays:
                raise ConfigError(f"model: array {k!r} is missing")
        return klass(
            Targets.from_config(require(cfg, "targets", dict, "model")),
            arrays["W"],
            arrays["b"],
            require(cfg, "normalized", bool, "model"),
            cfg.get("info", {}),
            **klass._extra(cfg, arrays),
        )

    @classmethod
    def _extra(cls, cfg: dict[str, Any], arrays: dict[str, np.ndarray]) -> dict[str, Any]:
        """Constructor arguments beyond the linear part (subclasses with more state)."""
        return {}
