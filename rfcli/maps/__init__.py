"""Random-feature maps (SPEC section 1)."""

from rfcli.maps.arccos import ArcCosineMap, arccos_kernel
from rfcli.maps.base import MAPS, FeatureMap
from rfcli.maps.fourier import FOURIER_KERNELS, FourierMap
from rfcli.maps.preprocess import ColumnStats, Preprocessor

KERNELS = (*FOURIER_KERNELS, "arccos0", "arccos1")


def make_map(kernel: str, n_features: int, gamma="auto", seed: int = 0) -> FeatureMap:
    """An unfitted map for ``kernel`` (one of :data:`KERNELS`)."""
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
    "Preprocessor",
    "arccos_kernel",
    "make_map",
]
