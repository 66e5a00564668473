"""Random-feature maps (docs/methods.md, Feature maps)."""

from rfcli.maps.activation import TARGETS, RandomActivationMap, target_kernel
from rfcli.maps.arccos import ArcCosineMap, arccos_kernel
from rfcli.maps.base import MAPS, FeatureMap, RowReducer
from rfcli.maps.fourier import FOURIER_KERNELS, FourierMap
from rfcli.maps.gauss_legendre import GaussLegendreMap
from rfcli.maps.ntk import NTKMap, ntk_kernel
from rfcli.maps.positive import PositiveMap
from rfcli.maps.preprocess import ColumnStats, Preprocessor

KERNELS = (
    *FOURIER_KERNELS,
    "arccos0",
    "arccos1",
    "positive",
    "ternary",
    "activation",
    "ntk",
    "glf",
)

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
    """An unfitted map for ``kernel`` (one of :data:`KERNELS`).  ``options`` may hold any
    map option; those that ``kernel`` does not take (:data:`MAP_OPTIONS`) are ignored, so
    a CLI can pass all of its option values.  ``glf`` takes the GaussLegendreMap options
    (kernel of the GP via ``glf_kernel``, lengthscale_bounds, tol, nodes, cutoff)."""
    opts = {k: v for k, v in options.items() if k in MAP_OPTIONS.get(kernel, ())}
    if kernel == "glf":
        return GaussLegendreMap(kernel=opts.pop("glf_kernel", "gaussian"), seed=seed, **opts)
    if kernel in FOURIER_KERNELS:
        return FourierMap(kernel, n_features=n_features, gamma=gamma, seed=seed)
    if kernel in ("arccos0", "arccos1"):
        return ArcCosineMap(kernel, n_features=n_features, seed=seed, **opts)
    if kernel == "positive":
        return PositiveMap(kernel, n_features=n_features, gamma=gamma, seed=seed, **opts)
    if kernel in ("ternary", "activation"):
        return RandomActivationMap(kernel, n_features=n_features, seed=seed, **opts)
    if kernel == "ntk":
        return NTKMap(kernel, n_features=n_features, seed=seed, **opts)
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
    "ntk_kernel",
    "target_kernel",
    "ArcCosineMap",
    "ColumnStats",
    "FeatureMap",
    "FourierMap",
    "GaussLegendreMap",
    "Preprocessor",
    "arccos_kernel",
    "make_map",
]
