"""Random-feature maps (docs/methods.md, Feature maps).

The Fourier map, the base class and preprocessing are imported with the package; the
other maps' modules on first use (:func:`make_map`, a stored map's kind, or one of their
names below), so that a command loads only the map it runs.
"""

from rfcli.maps.base import MAPS, FeatureMap, RowReducer
from rfcli.maps.fourier import FourierMap
from rfcli.maps.preprocess import ColumnStats, Preprocessor
from rfcli.names import FOURIER_KERNELS, KERNELS, TARGET_NAMES

#: module of each lazily imported name (and of the map kinds it registers)
_LAZY = {
    "TARGETS": "rfcli.maps.activation",
    "RandomActivationMap": "rfcli.maps.activation",
    "target_kernel": "rfcli.maps.activation",
    "ArcCosineMap": "rfcli.maps.arccos",
    "arccos_kernel": "rfcli.maps.arccos",
    "GaussLegendreMap": "rfcli.maps.gauss_legendre",
    "TrainingRowsMap": "rfcli.maps.exact",
    "NTKMap": "rfcli.maps.ntk",
    "ntk_kernel": "rfcli.maps.ntk",
    "PositiveMap": "rfcli.maps.positive",
}
MAPS.lazy("rfcli.maps.arccos", "arccos0", "arccos1")
MAPS.lazy("rfcli.maps.activation", "activation", "ternary")
MAPS.lazy("rfcli.maps.gauss_legendre", "glf")
MAPS.lazy("rfcli.maps.exact", "exact")
MAPS.lazy("rfcli.maps.ntk", "ntk")
MAPS.lazy("rfcli.maps.positive", "positive")


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: the map options (beyond m, gamma, seed) each kernel takes
MAP_OPTIONS = {
    "arccos1": ("modified",),
    "positive": ("hyperbolic",),
    "ternary": ("target", "sparsity"),
    "activation": ("target",),
    "ntk": ("depth", "m0", "m1", "m_cs", "modified"),
    "glf": ("glf_kernel", "lengthscale_bounds", "tol", "nodes", "cutoff"),
}


def make_map(kernel: str, n_features: int, gamma="auto", seed: int = 0, **options) -> FeatureMap:
    """An unfitted map for ``kernel``.

    Parameters
    ----------
    kernel : str
        One of :data:`KERNELS` (docs/methods.md describes each).
    n_features : int
        The number of features m (``glf`` sizes its own from its quadrature).
    gamma : float or "auto", default="auto"
        The bandwidth of the kernels that have one (the Fourier kernels and
        ``positive``); "auto": the median heuristic at fit.
    seed : int, default=0
        The seed of the drawn weights.
    **options
        Any map option; those that ``kernel`` does not take (:data:`MAP_OPTIONS`) are
        ignored, so a CLI can pass all of its option values.  ``glf`` takes the
        GaussLegendreMap options (the GP's kernel as ``glf_kernel``,
        ``lengthscale_bounds``, ``tol``, ``nodes``, ``cutoff``).

    Returns
    -------
    FeatureMap
        The map, to be fitted (``fit(n_inputs)``, or by an encode).

    Raises
    ------
    UsageError
        An unknown kernel or a bad option value.

    Examples
    --------
    >>> fmap = make_map("laplacian", 256, gamma=0.5, seed=1).fit(4)
    >>> fmap.kind, fmap.n_features, fmap.gamma_
    ('laplacian', 256, 0.5)
    """
    opts = {k: v for k, v in options.items() if k in MAP_OPTIONS.get(kernel, ())}
    if kernel == "glf":
        klass = MAPS.get("glf")
        return klass(kernel=opts.pop("glf_kernel", "gaussian"), seed=seed, **opts)
    if kernel in FOURIER_KERNELS:
        return FourierMap(kernel, n_features=n_features, gamma=gamma, seed=seed)
    if kernel == "positive":
        opts["gamma"] = gamma
    if kernel in KERNELS:
        return MAPS.get(kernel)(kernel, n_features=n_features, seed=seed, **opts)
    from rfcli.errors import UsageError

    raise UsageError(f"unknown kernel {kernel!r} (known: {', '.join(KERNELS)})")


__all__ = [
    "KERNELS",
    "MAPS",
    "MAP_OPTIONS",
    "NTKMap",
    "PositiveMap",
    "RandomActivationMap",
    "RowReducer",
    "TARGETS",
    "TARGET_NAMES",
    "ntk_kernel",
    "target_kernel",
    "ArcCosineMap",
    "ColumnStats",
    "FeatureMap",
    "FourierMap",
    "GaussLegendreMap",
    "Preprocessor",
    "TrainingRowsMap",
    "arccos_kernel",
    "make_map",
]
