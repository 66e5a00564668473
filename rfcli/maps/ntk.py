"""Neural Tangent Kernel features of a fully connected ReLU network (Han et al. 2021).

Exact NTK with L hidden layers: ``K^0 = X X'``, ``Theta^0 = K^0``; for l = 1..L
``K^l = F1(K^{l-1})`` and ``Theta^l = Theta^{l-1} * F0(K^{l-1}) + K^l`` (elementwise),
F0, F1 the arc-cosine kernels of order 0 and 1 applied to the normalized entries.

Features, layer by layer (Han et al.'s algorithm): ``phi^0 = psi^0 = x``; for each layer
``phi^l = Phi1(phi^{l-1})`` (m1 order-1 arc-cosine features, estimating K^l) and
``psi^l = [TS(psi^{l-1} (x) Phi0(phi^{l-1})), phi^l]`` (m0 order-0 features, the tensor
product sketched to m_cs dimensions by TensorSketch, estimating Theta^l).  The output is
``psi^L`` with m_cs + m1 features.

TensorSketch (Pham & Pagh 2013): CountSketches ``C1(a), C2(b)`` of the two factors, then
``IFFT(FFT(C1 a) * FFT(C2 b))``: an unbiased sketch of ``a (x) b``.  The CountSketch is a
(p, m_cs) matrix with one +-1 per row, applied as one GEMM; both FFTs are real FFTs over
the rows of the chunk.

``modified``: the order-1 features use the importance-sampled weights of
:func:`rfcli.maps.arccos.relu_weights` (unbiased, lower variance).

References
----------
Han, I., Avron, H., Shoham, N., Kim, C. and Shin, J. "Random features for the neural
tangent kernel", arXiv:2104.01351, 2021.  Formulas: docs/methods.md, NTK features.
Pham, N. and Pagh, R. "Fast and scalable polynomial kernels via explicit feature maps",
KDD 2013.
"""

from __future__ import annotations

import numpy as np

from rfcli.errors import ConfigError, ParameterTypeError, UsageError
from rfcli.maps.arccos import relu_weights
from rfcli.maps.base import MAPS, FeatureMap, check_n_features
from rfcli.random import generator


def _normalized(K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    d = np.sqrt(np.clip(np.diag(K), 0.0, None))
    outer = np.outer(d, d)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.clip(np.where(outer > 0, K / outer, 1.0), -1.0, 1.0)
    np.fill_diagonal(t, 1.0)  # exactly: arccos is steep at 1
    return t, outer


def _f0(t):
    return (np.pi - np.arccos(t)) / np.pi


def _f1(t, outer):
    return outer * (np.sqrt(1.0 - t * t) + (np.pi - np.arccos(t)) * t) / np.pi


def ntk_kernel(X: np.ndarray, Y: np.ndarray, depth: int) -> np.ndarray:
    """Exact NTK of a ReLU network with ``depth`` hidden layers between rows of X and Y
    (float64), by the recursion of docs/methods.md (NTK features) on the joint
    Gram matrix."""
    Z = np.vstack([np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.float64)])
    K = Z @ Z.T
    theta = K.copy()
    for _ in range(depth):
        t, outer = _normalized(K)
        K_next = _f1(t, outer)
        theta = theta * _f0(t) + K_next
        K = K_next
    return theta[: len(X), len(X) :]


class CountSketch:
    """CountSketch ``C(a)_k = sum_{h(j)=k} s(j) a_j`` as a dense (p, m) matrix (one GEMM)."""

    def __init__(self, h: np.ndarray, s: np.ndarray, m: int):
        self.h, self.s, self.m = h, s, m
        S = np.zeros((h.size, m), dtype=np.float32)
        S[np.arange(h.size), h] = s
        self.matrix = S

    @classmethod
    def draw(cls, rng: np.random.Generator, p: int, m: int) -> CountSketch:
        h = rng.integers(0, m, size=p)
        s = rng.choice(np.array([-1.0, 1.0], dtype=np.float32), size=p)
        return cls(h, s, m)

    def __call__(self, A: np.ndarray) -> np.ndarray:
        return np.asarray(A, dtype=np.float32) @ self.matrix


def tensor_sketch(A: np.ndarray, B: np.ndarray, c1: CountSketch, c2: CountSketch) -> np.ndarray:
    """Row-wise TensorSketch of ``a (x) b``: ``<TS(a(x)b), TS(c(x)e)>`` estimates
    ``<a, c> <b, e>`` without bias.  float32 (n, m)."""
    m = c1.m
    fa = np.fft.rfft(c1(A), n=m, axis=1)
    fb = np.fft.rfft(c2(B), n=m, axis=1)
    return np.fft.irfft(fa * fb, n=m, axis=1).astype(np.float32)


def split_features(m: int) -> tuple[int, int, int]:
    """(m0, m1, m_cs) for a total of m output features: half order-1 features, half
    sketch, and as many order-0 features as order-1 ones."""
    m1 = max(1, m // 2)
    m_cs = max(1, m - m1)
    return m1, m1, m_cs


@MAPS.register("ntk")
class NTKMap(FeatureMap):
    """NTK features (see module docstring); ``n_features = m_cs + m1``."""

    input_dtype = np.float32

    kind = "ntk"
    value_law = "ntk"
    default_quantizer = "empirical"

    def __init__(
        self,
        kind: str = "ntk",
        n_features: int | None = 1024,
        seed: int = 0,
        depth: int = 1,
        m0: int | None = None,
        m1: int | None = None,
        m_cs: int | None = None,
        modified: bool = False,
    ):
        if isinstance(depth, bool) or not isinstance(depth, int):
            raise ParameterTypeError(f"depth must be an integer >= 1, got {depth!r}")
        if depth < 1:
            raise UsageError(f"depth must be an integer >= 1, got {depth!r}")
        a0, a1, acs = split_features(check_n_features(n_features or 2))
        self.m0 = check_n_features(m0 if m0 is not None else a0, "m0")
        self.m1 = check_n_features(m1 if m1 is not None else a1, "m1")
        self.m_cs = check_n_features(m_cs if m_cs is not None else acs, "m_cs")
        super().__init__(self.m1 + self.m_cs, seed)
        self.depth = depth
        self.modified = bool(modified)

    @property
    def array_names(self):  # type: ignore[override]
        names = []
        for layer in range(self.depth):
            names += [f"W0_{layer}_", f"W1_{layer}_"]
            names += [f"{c}{i}_{layer}_" for c in ("h", "s") for i in (1, 2)]
        return tuple(names)

    @property
    def feature_scale(self) -> float:
        return 1.0

    def estimate_bytes(self, n_inputs: int) -> int:
        p_phi = p_psi = n_inputs
        total = 0
        for _ in range(self.depth):  # weights and dense CountSketch matrices, float32
            total += 4 * (p_phi * (self.m0 + self.m1) + (p_psi + self.m0) * self.m_cs)
            p_phi, p_psi = self.m1, self.m1 + self.m_cs
        return total

    def fit(self, n_inputs: int, sample: np.ndarray | None = None) -> NTKMap:
        p_phi = p_psi = int(n_inputs)
        for layer in range(self.depth):
            rng = generator(self.seed, layer, 0)
            setattr(
                self,
                f"W0_{layer}_",
                rng.standard_normal((p_phi, self.m0)).astype(np.float32),
            )
            setattr(
                self,
                f"W1_{layer}_",
                relu_weights(self.seed, 1000 + layer, p_phi, self.m1, self.modified),
            )
            sk = generator(self.seed, layer, 2)
            c1 = CountSketch.draw(sk, p_psi, self.m_cs)
            c2 = CountSketch.draw(sk, self.m0, self.m_cs)
            for i, c in ((1, c1), (2, c2)):
                setattr(self, f"h{i}_{layer}_", c.h.astype(np.int32))
                setattr(self, f"s{i}_{layer}_", c.s.astype(np.int8))
            p_phi, p_psi = self.m1, self.m1 + self.m_cs
        self.n_inputs_ = int(n_inputs)
        self._sketches = None
        return self

    def _layer_sketches(self):
        if getattr(self, "_sketches", None) is None:
            self._sketches = [
                tuple(
                    CountSketch(
                        getattr(self, f"h{i}_{layer}_").astype(np.int64),
                        getattr(self, f"s{i}_{layer}_").astype(np.float32),
                        self.m_cs,
                    )
                    for i in (1, 2)
                )
                for layer in range(self.depth)
            ]
        return self._sketches

    def transform_raw(self, X):
        self._check_fitted()
        phi = psi = np.asarray(X, dtype=np.float32)
        for layer, (c1, c2) in enumerate(self._layer_sketches()):
            W0, W1 = getattr(self, f"W0_{layer}_"), getattr(self, f"W1_{layer}_")
            phi0 = (phi @ W0 > 0).astype(np.float32) * np.float32(np.sqrt(2.0 / self.m0))
            phi1 = np.maximum(phi @ W1, 0) * np.float32(np.sqrt(2.0 / self.m1))
            psi = np.concatenate([tensor_sketch(psi, phi0, c1, c2), phi1], axis=1)
            phi = phi1
        return np.ascontiguousarray(psi), None

    def kernel(self, X, Y):
        return ntk_kernel(X, Y, self.depth)

    def params(self):
        return {
            "depth": self.depth,
            "m0": self.m0,
            "m1": self.m1,
            "m_cs": self.m_cs,
            "modified": self.modified,
        }

    def _check_arrays(self) -> None:
        p_phi = p_psi = self.n_inputs_
        for layer in range(self.depth):
            shapes = {
                f"W0_{layer}_": (p_phi, self.m0),
                f"W1_{layer}_": (p_phi, self.m1),
                f"h1_{layer}_": (p_psi,),
                f"s1_{layer}_": (p_psi,),
                f"h2_{layer}_": (self.m0,),
                f"s2_{layer}_": (self.m0,),
            }
            for name, shape in shapes.items():
                a = getattr(self, name)
                if a.shape != shape:
                    raise ConfigError(f"map ntk: {name.rstrip('_')} has shape {a.shape}")
            for i in (1, 2):
                h = getattr(self, f"h{i}_{layer}_")
                if h.size and (h.min() < 0 or h.max() >= self.m_cs):
                    raise ConfigError(f"map ntk: hash h{i}_{layer} out of range")
            p_phi, p_psi = self.m1, self.m1 + self.m_cs
        self._sketches = None

    def describe(self) -> str:
        return f"ntk (depth {self.depth}{', modified' if self.modified else ''})"
