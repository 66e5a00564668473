"""Random-feature maps (SPEC section 1)."""

from rfcli.maps.arccos import ArcCosineMap, arccos_kernel
from rfcli.maps.base import MAPS, FeatureMap
from rfcli.maps.fourier import FOURIER_KERNELS, FourierMap
from rfcli.maps.gauss_legendre import GaussLegendreMap
from rfcli.maps.preprocess import ColumnStats, Preprocessor

KERNELS = (*FOURIER_KERNELS, "arccos0", "arccos1", "glf")


def make_map(kernel: str, n_features: int, gamma="auto", seed: int = 0, **options) -> FeatureMap:
    """An unfitted map for ``kernel`` (one of :data:`KERNELS`); ``glf`` takes the
    GaussLegendreMap options (kernel of the GP via ``glf_kernel``, lengthscale_bounds, tol,
    nodes, cutoff)."""
    if kernel == "glf":
        opts = dict(options)
        return GaussLegendreMap(kernel=opts.pop("glf_kernel", "gaussian"), seed=seed, **opts)
    if kernel in FOURIER_KERNELS:
        return FourierMap(kernel, n_features=n_features, gamma=gamma, seed=seed)
    if kernel in ("arccos0", "arccos1"):
        return ArcCosineMap(kernel, n_features=n_features, seed=seed)
    from rfcli.errors import UsageError

    raise UsageError(f"unknown kernel {kernel!r} (known: {', '.join(KERNELS)})")


__all__ = [
    "KERNELS",
    "MAPS",
    "ArcCosineMap",
    "ColumnStats",
    "FeatureMap",
    "FourierMap",
    "GaussLegendreMap",
    "Preprocessor",
    "arccos_kernel",
    "make_map",
]
