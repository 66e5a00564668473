"""The encoder: input columns -> preprocessing -> feature map -> quantizer -> packed rows.

An :class:`Encoder` is everything needed to encode new rows exactly as a store's rows were
encoded; stores and model files carry its state, and its fingerprint identifies it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rfcli.errors import ConfigError, IncompatibleError, UsageError
from rfcli.maps import FeatureMap, Preprocessor
from rfcli.quantize import Quantizer
from rfcli.registry import require

#: rows per encode block (see Encoder.encode_chunk); part of the reproducibility contract
BLOCK_ROWS = 256


@dataclass
class EncodedChunk:
    """Encoded rows as a store keeps them (:meth:`Encoder.encode_chunk`,
    ``FeatureStore.iter_encoded``).

    Parameters
    ----------
    row0 : int
        The global index of the first row.
    packed : ndarray of shape (n, row_bytes), uint8
        The rows' packed codes.
    norms : ndarray of shape (n,), float32
        ``||Q(z)||`` per row (the normalized estimator divides by it).
    row_scale : ndarray of shape (n,), float32, or None
        The input row norms of arc-cosine order 1 (None for the other maps).
    """

    row0: int
    packed: np.ndarray  # uint8 (n, row_bytes)
    norms: np.ndarray  # float32 (n,): ||Q(z)|| per row
    row_scale: np.ndarray | None  # float32 (n,) input row norms (arc-cosine order 1)


@dataclass
class Encoder:
    """What turns rows of named columns into compressed features: the preprocessing, the
    map and the quantizer, fitted together (by an encode or :func:`rfcli.fit_encoder`),
    stored in every store and model file and identified by its :meth:`fingerprint`.

    Parameters
    ----------
    columns : list of str
        The input columns, in the order the map reads them.
    preprocess : Preprocessor
        The fitted standardization / row normalization.
    fmap : FeatureMap
        The fitted map.
    quantizer : Quantizer
        The quantizer of the map's raw values (one that fits the map's value law).
    fit_report : dict, default={}
        How the fit chose what it chose (the gamma search, the bits choice); not part of
        the state or the fingerprint.

    Attributes
    ----------
    n_features : int
        The number of features m.
    row_bytes : int
        Bytes of packed codes per row.

    Raises
    ------
    UsageError
        A quantizer that does not fit the map's value law.
    IncompatibleError
        An empirical quantizer fitted for another map.
    """

    columns: list[str]
    preprocess: Preprocessor
    fmap: FeatureMap
    quantizer: Quantizer
    #: how the fit chose what it chose (e.g. the gamma search); not part of the state
    fit_report: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        check_quantizer_fits_map(self.quantizer, self.fmap)
        fp = getattr(self.quantizer, "map_fingerprint", None)
        if fp is not None and fp != map_fingerprint(self.columns, self.preprocess, self.fmap):
            raise IncompatibleError(
                "the empirical quantizer was fitted for another map (map fingerprint "
                f"{fp}); fit it again for this map (fit-quantizer on a store or model of it)"
            )

    @property
    def n_features(self) -> int:
        """The number of features m (the map's)."""
        return self.fmap.n_features

    @property
    def input_dtype(self) -> type:
        """The dtype of the rows :meth:`encode_chunk` reads best: float32 when the map
        rounds its inputs to float32 and there is no preprocessing (the same codes as from
        float64 rows, without the float64 copy), else float64."""
        pre = self.preprocess
        if pre.standardize or pre.normalize_rows:
            return np.float64
        return self.fmap.input_dtype

    @property
    def row_bytes(self) -> int:
        """Bytes of packed codes per row."""
        return self.quantizer.row_bytes(self.n_features)

    def encode_chunk(
        self, X: np.ndarray, row0: int, out: EncodedChunk | None = None
    ) -> EncodedChunk:
        """Encode rows ``row0 .. row0+len(X)`` (global indices), into the arrays of ``out``
        (an earlier result of as many rows or more that nothing holds any more) when given: a chunk
        loop that recycles its results touches no new memory for them (a new page costs a
        fault and its zeroing; docs/benchmarks.md, Implementation choices, measures the
        loop both ways).

        The work is done in blocks of :data:`BLOCK_ROWS` rows aligned to global row
        indices (partial blocks zero-padded), so every row goes through exactly the same
        GEMM/cos/quantize calls at the same position whatever the chunking or threads:
        codes are byte-identical for any chunk size.  Blocks also keep the float features
        cache-resident between the map and the packer.

        For cosine features (Fourier maps) quantized by a threshold quantizer, the map gives
        the phases in turns (one GEMM, the phase inside it) and the codes come from them by
        comparisons, with no cosine computed (:meth:`rfcli.quantize.Quantizer.encode_turns`;
        docs/store-format.md, Codes from the phase); other quantizers get the cosines.

        Parameters
        ----------
        X : ndarray of shape (n, len(columns))
            Raw rows, columns in the order of :attr:`columns`, row- or column-major (the
            same bytes either way).
        row0 : int
            The global index of the first row (blocks and the stoc quantizer's hash use it).
        out : EncodedChunk or None, default=None
            An earlier result to encode into.

        Returns
        -------
        EncodedChunk
            The rows' packed codes, norms and row scales.
        """
        Xp = self.preprocess.transform(X)  # (row-major when it preprocesses)
        n, R = Xp.shape[0], BLOCK_ROWS
        packed, norms, row_scale = self._outputs(n, out)
        pad = None
        turns = self.fmap.cosine_phase and self.quantizer.threshold_codes
        if not turns:
            # the maps' products and reductions see rows in one layout whatever the chunk's:
            # a row-major copy of a column-major chunk (transform_turns instead copies each
            # 256-row block into its own row-major array; preprocessing copies row-major)
            Xp = np.ascontiguousarray(Xp)
        for b0 in range(row0 - row0 % R, row0 + n, R):
            lo, hi = max(b0, row0), min(b0 + R, row0 + n)
            if hi - lo == R:
                block = Xp[lo - row0 : hi - row0]
            else:
                if pad is None:
                    pad = np.zeros((R, Xp.shape[1]), dtype=Xp.dtype)
                pad[:] = 0
                pad[lo - b0 : hi - b0] = Xp[lo - row0 : hi - row0]
                block = pad
            if turns:  # cosine features, threshold codes: from the phases (no cosine)
                u, rs = self.fmap.transform_turns(block), None
                p, nr = self.quantizer.encode_turns(u[lo - b0 : hi - b0], lo)
            else:
                z, rs = self.fmap.transform_raw(block)
                p, nr = self.quantizer.encode_rows(z[lo - b0 : hi - b0], lo)
            packed[lo - row0 : hi - row0] = p
            norms[lo - row0 : hi - row0] = nr
            if row_scale is not None:
                row_scale[lo - row0 : hi - row0] = rs[lo - b0 : hi - b0]
        return EncodedChunk(row0, packed, norms, row_scale)

    def _outputs(self, n: int, out: EncodedChunk | None):
        """Arrays for ``n`` encoded rows: views of ``out``'s when it is large enough."""
        scaled = self.fmap.uses_row_scale
        if (
            out is not None
            and len(out.norms) >= n
            and out.packed.shape[1] == self.row_bytes
            and (out.row_scale is not None) == scaled
        ):
            return out.packed[:n], out.norms[:n], out.row_scale[:n] if scaled else None
        packed = np.empty((n, self.row_bytes), dtype=np.uint8)
        norms = np.empty(n, dtype=np.float32)
        return packed, norms, np.empty(n, dtype=np.float32) if scaled else None

    def features(self, X: np.ndarray) -> np.ndarray:
        """Unquantized features of raw rows: ``F(x)`` of the map after preprocessing.  For
        the ``none`` quantizer it equals ``decode(encode_chunk(X))`` up to the float32
        rounding of the stored values.

        Parameters
        ----------
        X : ndarray of shape (n, len(columns))
            Raw rows.

        Returns
        -------
        ndarray of shape (n, n_features)
            The features (float64 for maps that compute in float64, e.g. GLF).
        """
        return self.fmap.transform(self.preprocess.transform(X))

    def decode(
        self,
        packed: np.ndarray,
        norms: np.ndarray,
        row_scale: np.ndarray | None,
        normalized: bool = False,
    ) -> np.ndarray:
        """Decoded features: ``F(x).F(y)`` estimates k(x, y) (plain estimator), or unit rows
        ``Q(z)/||Q(z)||`` with ``normalized`` (Li & Li 2021's normalized estimator).

        Parameters
        ----------
        packed : ndarray of shape (n, row_bytes), uint8
            Packed codes.
        norms : ndarray of shape (n,), float32
            Their norms ``||Q(z)||``.
        row_scale : ndarray of shape (n,), float32, or None
            The input row norms of arc-cosine order 1.
        normalized : bool, default=False
            Unit rows.

        Returns
        -------
        ndarray of shape (n, n_features), float32
            The features.
        """
        if normalized:
            F = self.quantizer.decode_rows(packed, self.n_features)
            safe = np.where(norms > 0, norms, np.float32(1)).astype(np.float32)
            F /= safe[:, None]
            return F
        F = self.quantizer.decode_rows(packed, self.n_features, scale=self.fmap.feature_scale)
        if row_scale is not None:
            F *= row_scale[:, None]
        return F

    # -- state --------------------------------------------------------------------------
    def to_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The encoder as JSON config and arrays (what stores and model files keep).

        Returns
        -------
        config : dict
            JSON types: columns, preprocessing, map and quantizer configs.
        arrays : dict of str to ndarray
            The fitted arrays (``map/W``, ``preprocess/mean``, ...).
        """
        mc, ma = self.fmap.to_state()
        pc, pa = self.preprocess.to_state()
        config = {
            "columns": list(self.columns),
            "preprocess": pc,
            "map": mc,
            "quantizer": self.quantizer.to_config(),
        }
        arrays = {f"map/{k}": v for k, v in ma.items()}
        arrays.update({f"preprocess/{k}": v for k, v in pa.items()})
        return config, arrays

    @classmethod
    def from_state(cls, config: dict[str, Any], arrays: dict[str, np.ndarray]) -> Encoder:
        """The encoder :meth:`to_state` describes.

        Parameters
        ----------
        config : dict
            :meth:`to_state`'s config.
        arrays : dict of str to ndarray
            :meth:`to_state`'s arrays.

        Returns
        -------
        Encoder
            The encoder.

        Raises
        ------
        ConfigError
            A malformed config, or arrays that do not match it.
        """

        def sub(prefix):
            return {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}

        columns = require(config, "columns", list, "encoder")
        if not all(isinstance(c, str) for c in columns):
            raise ConfigError("encoder: columns must be strings")
        fmap = FeatureMap.from_state(require(config, "map", dict, "encoder"), sub("map/"))
        if fmap.n_inputs_ != len(columns):
            raise ConfigError(
                f"encoder: map expects {fmap.n_inputs_} inputs, {len(columns)} columns listed"
            )
        return cls(
            columns=columns,
            preprocess=Preprocessor.from_state(
                require(config, "preprocess", dict, "encoder"), sub("preprocess/")
            ),
            fmap=fmap,
            quantizer=Quantizer.from_config(require(config, "quantizer", dict, "encoder")),
        )

    def fingerprint(self) -> str:
        """The encoder's identity: equal fingerprints, the same codes for the same rows.

        Returns
        -------
        str
            SHA-256 (first 16 hex digits) of the canonical config and every array's bytes.
        """
        return _hash_state(*self.to_state())

    def check_same(self, other: Encoder, what: str = "store") -> None:
        """Refuse ``other`` unless it has this encoder's fingerprint.

        Parameters
        ----------
        other : Encoder
            The encoder of what is used with this one.
        what : str, default="store"
            What ``other`` belongs to, for the message.

        Raises
        ------
        IncompatibleError
            Another map or quantizer.
        """
        if self.fingerprint() != other.fingerprint():
            raise IncompatibleError(
                f"the {what} was encoded with another map/quantizer "
                f"(fingerprint {other.fingerprint()} vs {self.fingerprint()})"
            )

    def describe(self) -> dict[str, Any]:
        """A structured summary (JSON types): the kernel, the map's parameters as numbers
        (``map["gamma"]``: the fitted bandwidth, not text), the quantizer and its bits, the
        preprocessing steps, the input columns; ``summary`` is the map in words.

        Returns
        -------
        dict
            ``kernel``, ``map``, ``summary``, ``features``, ``quantizer``, ``bits``,
            ``preprocess``, ``inputs``, ``columns``.
        """
        fm, q, pre = self.fmap, self.quantizer, self.preprocess
        params = {**fm.params(), **{k: v for k, v in fm.fitted_params().items() if v is not None}}
        return {
            "kernel": fm.kind,
            "map": {
                "kind": fm.kind,
                "n_features": fm.n_features,
                "seed": fm.seed,
                **jsonable(params),
            },  # fmt: skip
            "summary": fm.describe(),
            "features": self.n_features,
            "quantizer": q.kind,
            "bits": q.bits_per_feature,
            "preprocess": {
                "standardize": bool(pre.standardize),
                "normalize_rows": bool(pre.normalize_rows),
            },  # fmt: skip
            "inputs": len(self.columns),
            "columns": list(self.columns),
        }


def jsonable(v):
    """NumPy scalars and arrays (and containers of them) as plain JSON values."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return jsonable(v.tolist())
    if isinstance(v, np.generic):
        return v.item()
    return v


def _hash_state(config: dict[str, Any], arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256(json.dumps(config, sort_keys=True, separators=(",", ":")).encode())
    for k in sorted(arrays):
        a = np.ascontiguousarray(arrays[k])
        h.update(f"{k}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def map_fingerprint(columns: list[str], preprocess: Preprocessor, fmap: FeatureMap) -> str:
    """Fingerprint of everything before the quantizer (columns, preprocessing, map): what a
    fitted (empirical) quantizer depends on."""
    mc, ma = fmap.to_state()
    pc, pa = preprocess.to_state()
    arrays = {f"map/{k}": v for k, v in ma.items()}
    arrays.update({f"preprocess/{k}": v for k, v in pa.items()})
    return _hash_state({"columns": list(columns), "preprocess": pc, "map": mc}, arrays)


_LAW_HINTS = {
    "binary": "arc-cosine order 0 features are 0/1: use quantizer binary (1 bit) or none",
    "ternary": "ternary features are exact symbols: use quantizer ternary (2 bits) or "
    "trits (1.6 bits)",
    "relu-normalized": "arc-cosine order 1 features: use quantizer lm, empirical or none",
}


def check_quantizer_fits_map(quantizer: Quantizer, fmap: FeatureMap) -> None:
    if fmap.value_law in quantizer.laws:
        return
    if "*" in quantizer.laws and fmap.value_law not in ("binary", "ternary"):
        return
    hint = _LAW_HINTS.get(
        fmap.value_law,
        f"its values have no universal law: use quantizer empirical (fitted on the "
        f"{fmap.kind} features) or none",
    )
    raise UsageError(f"quantizer {quantizer.kind!r} does not fit the {fmap.kind} map: {hint}")
