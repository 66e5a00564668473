"""Positive random features for the Gaussian kernel (Choromanski et al. 2021).

``omega_j ~ N(0, I_d)``, ``phi_j(u) = D^{-1/2} exp(sqrt(2 beta) omega_j'u - 2 beta ||u||^2
+ kappa)`` with ``E[phi(u).phi(u')] = e^{2 kappa} exp(-beta ||u - u'||^2)``.  kappa is the
negated maximum of the exponent over the training rows (one pass after the draw, stored
with the map), so the raw values ``z = exp(...)`` of training rows lie in (0, 1] and exp
cannot overflow; test rows reuse it.  The map's feature scale ``e^{-kappa} D^{-1/2}``
removes ``e^{2 kappa}`` again, so decoded features estimate the Gaussian kernel itself.
``hyperbolic``: D/2 draws, each used as omega and -omega (lower variance).

The raw values have no universal law: quantize them with the ``empirical`` quantizer
(linear or log domain), fitted on the map's own values.

References
----------
Choromanski, K. et al. "Rethinking attention with Performers", International Conference
on Learning Representations (ICLR), 2021 (the positive and hyperbolic constructions), as
transported to the Gaussian kernel in the documentation of the R package nmfkc
(``nmfkc.rff.positive``, K. Satoh).  Formulas: docs/methods.md, Positive random features.
"""

from __future__ import annotations

import numpy as np

from rfcli.errors import ConfigError, InputError, UsageError
from rfcli.maps.bandwidth import median_heuristic
from rfcli.maps.base import MAPS, FeatureMap, check_n_features, pairwise_sq_dists
from rfcli.maps.fourier import check_gamma
from rfcli.random import generator

#: beyond this |kappa|, e^{-kappa} would overflow float32 features
MAX_KAPPA = 80.0


@MAPS.register("positive")
class PositiveMap(FeatureMap):
    """Positive random features (see module docstring); ``gamma`` is beta."""

    input_dtype = np.float32

    kind = "positive"
    value_law = "positive"
    default_quantizer = "empirical"
    array_names = ("W_",)
    pass_reductions = {"exponent_max": "max"}

    def __init__(
        self,
        kind: str = "positive",
        n_features: int = 1024,
        gamma: float | str = "auto",
        seed: int = 0,
        hyperbolic: bool = False,
    ):
        super().__init__(check_n_features(n_features), seed)
        self.gamma = check_gamma(gamma)
        self.hyperbolic = bool(hyperbolic)
        if self.hyperbolic and self.n_features % 2:
            raise UsageError(f"hyperbolic needs an even n_features, got {n_features}")
        self.gamma_: float | None = None
        self.kappa_: float | None = None

    @property
    def needs_sample(self) -> bool:
        return self.gamma == "auto"

    def fit(self, n_inputs: int, sample: np.ndarray | None = None) -> PositiveMap:
        d = int(n_inputs)
        self.gamma_ = median_heuristic(sample) if self.gamma == "auto" else float(self.gamma)
        draws = self.n_features // 2 if self.hyperbolic else self.n_features
        W = generator(self.seed, 0).standard_normal((d, draws))
        if self.hyperbolic:
            W = np.concatenate([W, -W], axis=1)
        self.W_ = W.astype(np.float32)
        self.n_inputs_ = d
        self.kappa_ = None
        return self

    def _exponent(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float32)
        b = self.gamma_
        E = X @ (self.W_ * np.float32(np.sqrt(2 * b)))
        sq = np.einsum("ij,ij->i", X, X, dtype=np.float64)
        E -= (2 * b * sq).astype(np.float32)[:, None]
        return E

    def pass_values(self, X):
        return {"exponent_max": self._exponent(X).max(axis=1)}

    def finish_pass(self, totals, n_rows):
        kappa = -float(totals["exponent_max"])
        if not np.isfinite(kappa) or abs(kappa) > MAX_KAPPA:
            raise InputError(
                f"positive features: kappa = {kappa:.4g} is out of range (|kappa| <= "
                f"{MAX_KAPPA:g}); centre and scale the input (standardize or "
                "normalize_rows) or lower gamma"
            )
        self.kappa_ = kappa

    @property
    def fitted(self) -> bool:
        return self.n_inputs_ is not None and self.kappa_ is not None

    @property
    def feature_scale(self) -> float:
        return float(np.exp(-self.kappa_) / np.sqrt(self.n_features))

    def transform_raw(self, X):
        self._check_fitted()
        E = self._exponent(X)
        E += np.float32(self.kappa_)
        return np.exp(E, out=E), None

    def kernel(self, X, Y):
        return np.exp(-self.gamma_ * pairwise_sq_dists(X, Y))

    def params(self):
        return {"gamma": self.gamma, "hyperbolic": self.hyperbolic}

    def fitted_params(self):
        return {"gamma": self.gamma_, "kappa": self.kappa_}

    def _check_arrays(self) -> None:
        if self.W_.shape != (self.n_inputs_, self.n_features):
            raise ConfigError(f"map positive: W has shape {self.W_.shape}")
        if self.kappa_ is None or self.gamma_ is None:
            raise ConfigError("map positive: fitted gamma and kappa are missing")

    def describe(self) -> str:
        return "positive (hyperbolic)" if self.hyperbolic else "positive"
