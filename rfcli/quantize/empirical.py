"""The empirical quantizer: Lloyd-Max fitted on a sample of feature values.

See docs/methods.md, Quantizers.

For maps whose marginal is not universal (positive features, NTK features, arc-cosine
order 1 without the row-norm scaling) the quantizer is designed on a sample of the map's
own raw values: exact 1-D Lloyd iterations on the sorted sample (borders at midpoints,
levels at cell means from prefix sums), not random-restart k-means.  ``domain="log"``
fits on ``log z`` (positive values only) and maps borders and levels back with ``exp``:
the log-domain quantizer of positive features, which spends its levels on the many small
values instead of the few large ones.

The config records the sample size, the seed of the sample and the fingerprint of the map
it was fitted for, so an encode with another map can refuse it.
"""

from __future__ import annotations

import numpy as np

from rfcli.errors import ConfigError, UsageError
from rfcli.quantize.base import QUANTIZERS, Quantizer, check_bits


def lloyd_max_sorted(
    values: np.ndarray, n_cells: int, tol: float = 1e-10, max_iter: int = 10_000
) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Lloyd-Max on the empirical law of ``values``.

    Returns ``(borders, levels, distortion, iterations)``: ``n_cells - 1`` increasing
    borders, ``n_cells`` levels, the mean squared error on the sample and the iterations
    run.  Cells are ``(t_{i-1}, t_i]`` as in :meth:`Quantizer.codes`.  Stops when the total
    absolute change of borders and levels is below ``tol`` times the value range; a cell
    that empties keeps its previous level (its borders move with the neighbours)."""
    v = np.sort(np.asarray(values, dtype=np.float64).ravel())
    v = v[np.isfinite(v)]
    n = v.size
    if n < n_cells:
        raise UsageError(f"the empirical quantizer needs at least {n_cells} values, got {n}")
    distinct = np.unique(v)
    csum = np.concatenate(([0.0], np.cumsum(v)))
    if distinct.size <= n_cells:  # every value its own level: exact
        levels = np.concatenate((distinct, np.full(n_cells - distinct.size, distinct[-1])))
        borders = (distinct[:-1] + distinct[1:]) / 2
        pad = n_cells - 1 - borders.size
        if pad:  # extra borders above the top value, strictly increasing
            top = distinct[-1] + np.arange(1, pad + 1) * max(abs(distinct[-1]), 1.0)
            borders = np.concatenate((borders, top))
        return borders, levels, 0.0, 0
    scale = max(v[-1] - v[0], np.finfo(float).tiny)
    # initialization: cell means of equal-count cells
    edges = np.linspace(0, n, n_cells + 1).round().astype(np.int64)
    levels = (csum[edges[1:]] - csum[edges[:-1]]) / np.maximum(np.diff(edges), 1)
    borders = (levels[:-1] + levels[1:]) / 2
    iters = 0
    while iters < max_iter:
        iters += 1
        idx = np.concatenate(([0], np.searchsorted(v, borders, side="right"), [n]))
        counts = np.diff(idx)
        sums = csum[idx[1:]] - csum[idx[:-1]]
        new_levels = np.where(counts > 0, sums / np.maximum(counts, 1), levels)
        new_levels = np.maximum.accumulate(new_levels)
        new_borders = (new_levels[:-1] + new_levels[1:]) / 2
        change = np.abs(new_levels - levels).sum() + np.abs(new_borders - borders).sum()
        levels, borders = new_levels, new_borders
        if change < tol * scale:
            break
    borders = _strictly_increasing(borders, scale)
    codes = np.searchsorted(borders, v, side="left")
    distortion = float(np.mean((v - levels[codes]) ** 2))
    return borders, levels, distortion, iters


def _strictly_increasing(borders: np.ndarray, scale: float) -> np.ndarray:
    out = borders.copy()
    eps = scale * 1e-12
    for i in range(1, out.size):  # at most 255 borders
        if out[i] <= out[i - 1]:
            out[i] = out[i - 1] + eps
    return out


@QUANTIZERS.register("empirical")
class EmpiricalQuantizer(Quantizer):
    """Lloyd-Max fitted on a sample of a map's values (see module docstring)."""

    kind = "empirical"
    laws = ("*",)  # fitted for one map: the encoder checks the map fingerprint instead

    def __init__(self, bits, borders, levels, info: dict | None = None):
        super().__init__(bits, borders, levels)
        self.info = dict(info or {})

    @classmethod
    def design(cls, bits: int) -> EmpiricalQuantizer:
        raise UsageError(
            "the empirical quantizer is fitted on data: use EmpiricalQuantizer.fit, "
            "fit_quantizer_on_input or encode with quantizer='empirical'"
        )

    @classmethod
    def fit(
        cls,
        values: np.ndarray,
        bits: int,
        domain: str = "linear",
        info: dict | None = None,
    ) -> EmpiricalQuantizer:
        """Fit on ``values`` (any shape); ``domain`` 'linear' or 'log' (values > 0)."""
        check_bits(bits)
        v = np.asarray(values, dtype=np.float64).ravel()
        if domain == "log":
            v = v[v > 0]
            if v.size == 0:
                raise UsageError("the log-domain quantizer needs positive feature values")
            v = np.log(v)
        elif domain != "linear":
            raise UsageError(f"unknown quantizer domain {domain!r} (linear or log)")
        borders, levels, distortion, iters = lloyd_max_sorted(v, 2**bits)
        if domain == "log":
            borders, levels = np.exp(borders), np.exp(levels)
            borders = _strictly_increasing(borders, float(levels[-1]))
        meta = {
            "domain": domain,
            "sample_values": int(v.size),
            "iterations": iters,
            "distortion": distortion,
            **(info or {}),
        }
        return cls(bits, borders, levels, info=meta)

    def to_config(self):
        return {**super().to_config(), **self.info}

    @classmethod
    def _from_config(cls, config):
        q = super()._from_config(config)
        info = {k: v for k, v in config.items() if k not in ("kind", "bits", "borders", "levels")}
        if "domain" in info and info["domain"] not in ("linear", "log"):
            raise ConfigError(f"quantizer empirical: unknown domain {info['domain']!r}")
        return cls(q.bits, q.borders, q.levels, info=info)

    @property
    def map_fingerprint(self) -> str | None:
        return self.info.get("map_fingerprint")
