"""Gauss-Legendre features (GLF) for Gaussian-process regression (Fink Shustin & Avron 2022).

For a stationary kernel with spectral density ``p_theta`` (convention ``e^{2 pi i eta'x}``)
``k(x, y) = s^2 int p_theta(eta) cos(2 pi eta'(x - y)) d eta``.  Truncating to
``[-L_j, L_j]`` per dimension and applying a tensor quadrature rule (nodes ``eta_l``,
weights ``omega_l``) gives ``k~(x, y) = s^2 sum_l omega_l p_theta(eta_l) cos(2 pi eta_l'(x - y))``:
with the *fixed* features ``V(x) = [cos(2 pi x'H'), sin(2 pi x'H')]`` (H the nodes of one
half-space, weights doubled), ``K~ = V D_theta V' + lambda I`` and only the diagonal
``D_theta`` depends on the hyperparameters.  One data pass gives ``V'V`` and ``V'y``;
hyperparameter learning then costs O(s^3) per step, independent of n.

Spectral densities, lengthscales ``l_j`` (ARD; isotropic = all equal), ``u = l * eta``:
Gaussian ``p = prod(l_j) (2 pi)^{d/2} exp(-2 pi^2 |u|^2)``;
Matern-nu ``p = prod(l_j) 2^d pi^{d/2} Gamma(nu + d/2) (2 nu)^nu / Gamma(nu)
(2 nu + 4 pi^2 |u|^2)^{-(nu + d/2)}``.

The rule serves a *range* of lengthscales per dimension, ``[lo_j, hi_j]`` (``lengthscale_bounds``;
GPR narrows it around the lengthscales it reaches, rfcli/jobs/gpr_levels.py): L_j from the
spectral tail mass at lo_j; per dimension either one Gauss-Legendre rule of q_j nodes or a
composite (panelled) rule -- equal panels of :data:`PANEL_NODES` nodes, the panel at 0 split
geometrically so that the narrow spectrum of the largest lengthscale is resolved -- whichever
needs fewer nodes (a single rule wastes nodes at the ends of [-L, L], where Gauss-Legendre
nodes cluster and the density is smallest); then the tensor product, without the nodes whose
weight times density is negligible at every probed lengthscale, grown until the kernel error
on probe differences spanning the data bounding box is below ``tol`` at lengthscales spread
over the range (:func:`probe_lengthscales`).

References
----------
Fink Shustin, P. and Avron, H. "Gauss-Legendre features for Gaussian process
regression", Journal of Machine Learning Research 23, 2022.  Formulas: docs/methods.md,
Gauss-Legendre features.  The rules themselves: :mod:`rfcli.maps.glf_rules`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rfcli.errors import ConfigError, UsageError
from rfcli.maps.base import MAPS, FeatureMap
from rfcli.maps.glf_phases import phase_features, tensor_factors
from rfcli.maps.glf_rules import (
    DEFAULT_BOUNDS,
    GLF_KERNELS,
    MAX_DIM,
    RULES,
    check_bounds,
    cutoff_for,
    design_rule,
    half_space_nodes,
    kernel_error,
    lengthscale_ranges,
    log_spectral_density,
    max_log_spectral_density,
    probe_differences,
    probe_lengthscales,
)

#: rows per tile of :meth:`GaussLegendreMap.transform_raw`
TRANSFORM_ROWS = 512


@MAPS.register("glf")
class GaussLegendreMap(FeatureMap):
    """Gauss-Legendre features (see module docstring).  Features are not random: ``seed``
    only chooses the probe differences used to size the rule.  ``lengthscale_bounds``: one
    range (lo, hi) for every dimension (isotropic probes), or one per input (ARD probes:
    the corners of the box of ranges too); None: :data:`DEFAULT_BOUNDS`."""

    value_law = "any"
    default_quantizer = "none"
    needs_box = True
    array_names = ("H_", "w_")

    def __init__(
        self,
        kind: str = "glf",
        n_features: int = 0,
        seed: int = 0,
        kernel: str = "gaussian",
        lengthscale_bounds=None,
        tol: float = 1e-4,
        nodes: list[int] | None = None,
        cutoff: list[float] | None = None,
        rule: str = "auto",
        max_nodes: int | None = None,
    ):
        super().__init__(0, seed)
        if kernel not in GLF_KERNELS:
            raise UsageError(f"GLF kernel must be one of {', '.join(GLF_KERNELS)}, got {kernel!r}")
        if not 0 < tol < 1:
            raise UsageError(f"tol must be in (0, 1), got {tol}")
        if rule not in RULES:
            raise UsageError(f"rule must be one of {', '.join(RULES)}, got {rule!r}")
        self.kind = "glf"
        self.kernel_name = kernel
        self.lengthscale_bounds = check_bounds(lengthscale_bounds)
        self.tol = float(tol)
        self.nodes = None if nodes is None else [int(v) for v in nodes]
        self.cutoff = None if cutoff is None else [float(v) for v in cutoff]
        self.rule = rule
        #: the node budget of the rule's design (None: glf_rules.MAX_NODES); a budget of this
        #: fit, not a parameter of the map (not stored)
        self.max_nodes = max_nodes
        self.n_features = int(n_features)
        self.probe_error_: float | None = None

    @property
    def feature_scale(self) -> float:
        return 1.0

    def ranges(self, d: int | None = None) -> tuple[np.ndarray, bool]:
        """(d, 2) lengthscale ranges the rule serves, and whether they are per dimension."""
        d = self.n_inputs_ if d is None else d
        return lengthscale_ranges(
            DEFAULT_BOUNDS if self.lengthscale_bounds is None else self.lengthscale_bounds, d
        )

    def fit(self, n_inputs: int, sample=None, box: tuple[np.ndarray, np.ndarray] | None = None):
        d = int(n_inputs)
        if d > MAX_DIM:
            raise UsageError(
                f"GLF features are for d <= {MAX_DIM} inputs (nodes grow as q^d); "
                f"this input has {d}: "
                "use random Fourier features (features='rff')"
            )
        ranges, ard = self.ranges(d)
        for name, per_input in (("nodes", self.nodes), ("cutoff", self.cutoff)):
            if per_input is not None and len(per_input) not in (1, d):
                raise UsageError(f"{name}: {len(per_input)} values for {d} inputs (give one, "
                                 "or one per input)")  # fmt: skip
        if box is None:
            width = np.ones(d)
        else:
            width = np.maximum(np.asarray(box[1], float) - np.asarray(box[0], float), 1e-12)
        if self.nodes is not None:
            q = np.broadcast_to(np.array(self.nodes, dtype=int), (d,)).copy()
            if np.any(q < 2) or np.any(q % 2):
                raise UsageError(f"nodes must be even numbers >= 2, got {self.nodes}")
            if self.cutoff is not None:
                L = np.broadcast_to(np.array(self.cutoff, dtype=float), (d,)).copy()
            else:
                L = np.array(
                    [cutoff_for(self.kernel_name, ranges[j, 0], self.tol / 10) for j in range(d)]
                )
            H, w = half_space_nodes(L, q)
            rule = {
                "H": H,
                "w": w,
                "q": [int(v) for v in q],
                "L": [float(v) for v in L],
                "rules": ["single"] * d,
            }
        else:
            rule = design_rule(
                self.kernel_name,
                width,
                ranges,
                self.tol,
                self.seed,
                ard,
                self.cutoff,
                self.rule,
                self.max_nodes,
            )
        self.H_, self.w_ = rule["H"], rule["w"]
        self.q_, self.L_, self.rules_ = rule["q"], rule["L"], rule["rules"]
        self.n_features = 2 * len(self.w_)
        self.n_inputs_ = d
        self.probe_error_ = self.probe_error(width)
        return self

    def probe_error(self, width, ell=None) -> float:
        """max |k~ - k| on probe differences in a box of ``width``, at the lengthscale vectors
        ``ell`` (k, d) or (d,) -- by default the probe lengthscales of the map's ranges."""
        self._check_fitted()
        if ell is None:
            ell = probe_lengthscales(*self.ranges())
        ell = np.asarray(ell, dtype=np.float64)
        if ell.ndim <= 1:
            ell = np.broadcast_to(ell, (self.n_inputs_,))[None, :]
        delta = probe_differences(np.maximum(np.asarray(width, float), 1e-12), self.seed)
        from rfcli.threads import one_blas_thread

        with one_blas_thread():
            return kernel_error(self.kernel_name, self.H_, self.w_, delta, ell)

    def transform_raw(self, X):
        """cos and sin of 2 pi X H' (:func:`rfcli.maps.glf_phases.phase_features`: from
        per-input factors for a tensor rule's nodes) by row tiles of TRANSFORM_ROWS, on the
        threads of an enclosing :func:`rfcli.threads.tile_threads` block (a GP pass that
        keeps its rows transforms them all as one chunk); each row's features are the same
        whatever the tiles."""
        from rfcli.threads import run_tiles

        self._check_fitted()
        X = np.asarray(X, dtype=np.float64)
        H = self.H_
        m = H.shape[0]
        out = np.empty((X.shape[0], 2 * m))
        factors = self._tensor_factors()

        def rows(a: int) -> None:
            phase_features(X[a : a + TRANSFORM_ROWS], H, out[a : a + TRANSFORM_ROWS], factors)

        run_tiles(rows, range(0, len(X), TRANSFORM_ROWS))
        return out, None

    def _tensor_factors(self):
        """:func:`rfcli.maps.glf_phases.tensor_factors` of the nodes, kept with the node
        array they were made from (a refit's new H_ makes new ones)."""
        if getattr(self, "_factors_of", None) is not self.H_:
            self._factors = tensor_factors(self.H_)
            self._factors_of = self.H_
        return self._factors

    def weights(self, ell) -> np.ndarray:
        """Quadrature weight times spectral density per feature (cos and sin halves)."""
        ell = np.broadcast_to(np.asarray(ell, dtype=np.float64), (self.n_inputs_,))
        return self._halves(log_spectral_density(self.kernel_name, self.H_, ell))

    def _halves(self, log_density: np.ndarray) -> np.ndarray:
        """Quadrature weight times ``exp(log_density)`` per node, for the cos and sin
        halves of the features."""
        wp = self.w_ * np.exp(log_density)
        return np.concatenate([wp, wp])

    def weight_envelope(self, ranges) -> np.ndarray:
        """Per feature, an upper bound of :meth:`weights` over the lengthscales in ``ranges``
        (n_ell x 2: one row, one lengthscale for every input; else one row per input):
        :func:`rfcli.maps.glf_rules.max_log_spectral_density`.  The GP's factor of the
        rows weighs its features by it (rfcli.learn.gpr.Reduced)."""
        r = np.asarray(ranges, dtype=np.float64).reshape(-1, 2)
        ard = len(r) > 1
        return self._halves(
            max_log_spectral_density(self.kernel_name, self.H_, r[:, 0], r[:, 1], ard)
        )

    def kernel(self, X, Y):
        raise UsageError("a GLF map has no fixed kernel (its lengthscale is learned by GPR)")

    def params(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel_name,
            "lengthscale_bounds": self.lengthscale_bounds,
            "tol": self.tol,
            "nodes": self.nodes,
            "cutoff": self.cutoff,
            "rule": self.rule,
            "n_features": self.n_features,
        }

    def fitted_params(self) -> dict[str, Any]:
        return {
            "q": self.q_,
            "L": self.L_,
            "rules": getattr(self, "rules_", None),
            "probe_error": self.probe_error_,
        }

    def _check_arrays(self) -> None:
        if (
            self.H_.ndim != 2
            or self.H_.shape[1] != self.n_inputs_
            or self.w_.shape != (len(self.H_),)
        ):
            raise ConfigError("map glf: node arrays do not match")
        if self.n_features != 2 * len(self.w_):
            raise ConfigError("map glf: n_features does not match the nodes")

    def describe(self) -> str:
        L = [round(v, 4) for v in self.L_]
        rules = getattr(self, "rules_", None)
        kinds = "" if not rules or set(rules) == {"single"} else f", {'/'.join(rules)}"
        return f"glf {self.kernel_name} (q={self.q_}, L={L}{kinds}, {len(self.w_)} nodes)"
