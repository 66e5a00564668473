"""Fitting an encoder on the training input: what passes it needs and how their partial
results combine.

Pass 1 (when standardization, gamma='auto', a bounding box or an empirical quantizer need
it) gathers column statistics (fixed 4096-row blocks) and a hash sample of rows; the map
pass (maps with ``pass_reductions``: TRF's tau, positive features' kappa) reduces per-row
values of the preprocessed rows with the drawn map.  Every partial result can be computed
for a range of rows starting on a 4096-row boundary and merged in row order with exactly
the arithmetic of one sequential pass, so the local engine (one loop) and the Dask engine
(one task per range) fit bit-identical encoders.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from rfcli.encoder import Encoder, check_quantizer_fits_map, map_fingerprint
from rfcli.errors import ConfigError, InputError, PrecisionWarning, UsageError
from rfcli.maps import ColumnStats, FeatureMap, Preprocessor, RowReducer, make_map
from rfcli.quantize import Quantizer, make_quantizer
from rfcli.quantize.base import check_bits
from rfcli.random import keyed_uniform
from rfcli.threads import one_blas_thread


def bits_kind(quantizer: str | None, kernel: str, map_options: dict) -> str:
    """The quantizer kind an encode uses: the given one, else the map's default."""
    if quantizer is not None:
        return quantizer
    return make_map(kernel, 8, **map_options).default_quantizer


def budget_bits(bits, quantizer, kernel, map_options) -> float:
    """Bits per feature of the quantizer the settings describe (fixed ``bits``)."""
    from rfcli.quantize.base import FIXED_BITS

    kind = bits_kind(quantizer, kernel, map_options)
    if kind in FIXED_BITS:
        return FIXED_BITS[kind][1]
    return bits if bits is not None else default_bits(kind)


def budget_features(row_bytes, bits, quantizer, kernel, map_options) -> int:
    from rfcli.learn.bits_choice import features_for

    return features_for(row_bytes, budget_bits(bits, quantizer, kernel, map_options))


def resolved(settings):
    """``settings`` (an :class:`rfcli.jobs.encode.EncodeSettings`) with the number of
    features the encode uses: given, 1024, or what ``row_bytes`` hold at the bits
    (``bits='auto'``: at the smallest candidate, the most features, until the choice;
    rfcli.learn.bits_choice)."""
    from dataclasses import replace

    s = settings
    if s.n_features is not None:
        return s
    if s.row_bytes is None:
        return replace(s, n_features=1024)
    from rfcli.learn.bits_choice import candidate_bits, features_for

    if s.bits == "auto":
        b = candidate_bits(s.row_bytes, lambda b: True)[0]
        return replace(s, n_features=features_for(s.row_bytes, b), bits=b)
    return replace(s, n_features=budget_features(s.row_bytes, s.bits, s.quantizer, s.kernel,
                                                  s.map_options))  # fmt: skip


#: feature values the encoder's empirical quantizer is fitted on (docs/methods.md, Quantizers)
EMPIRICAL_SAMPLE = 200_000
#: rows per statistics block; partial passes start on multiples of it
FIT_BLOCK = 4096


def default_bits(kind: str) -> int:
    return {"none": 32, "sign": 1, "binary": 1}.get(kind, 2)


def build_quantizer(settings, fmap: FeatureMap) -> Quantizer | None:
    """The quantizer of ``settings`` for ``fmap``; None when it must be fitted on data
    (``empirical`` without a quantizer file)."""
    if settings.quantizer_config is not None:  # agrees with quantizer and bits (validate)
        try:
            return Quantizer.from_config(settings.quantizer_config)
        except ConfigError as e:
            raise ConfigError(f"quantizer_config: {e}") from None
    kind = settings.quantizer or fmap.default_quantizer
    if kind == "empirical":
        check_bits(settings.bits if settings.bits is not None else 2)
        return None
    bits = settings.bits if settings.bits is not None else default_bits(kind)
    return make_quantizer(kind, bits, seed=settings.seed, law=fmap.value_law)


class BottomK:
    """The k rows with the smallest hash of (seed, row index): a uniform row sample that
    does not depend on chunking, and merges exactly across row ranges."""

    def __init__(self, k: int, seed: int):
        self.k, self.seed = k, seed
        self.keys = np.empty(0)
        self.rows = None
        self.labels = None  # the sampled rows' labels, when update is given them

    def update(self, row0: int, X: np.ndarray, labels: np.ndarray | None = None) -> None:
        keys = keyed_uniform(self.seed, np.arange(row0, row0 + len(X)), 1)[:, 0]
        self._keep(keys, X, labels)

    def _keep(self, keys: np.ndarray, X: np.ndarray, labels: np.ndarray | None) -> None:
        allk = np.concatenate((self.keys, keys))
        allx = X if self.rows is None else np.concatenate((self.rows, X))
        ally = None
        if labels is not None:
            ally = labels if self.labels is None else np.concatenate((self.labels, labels))
        if len(allk) > self.k:
            idx = np.argpartition(allk, self.k - 1)[: self.k]
            allk, allx = allk[idx], allx[idx]
            ally = None if ally is None else ally[idx]
        order = np.argsort(allk, kind="stable")
        self.keys, self.rows = allk[order], allx[order]
        self.labels = None if ally is None else ally[order]

    def merge(self, other: BottomK) -> BottomK:
        if other.rows is not None:
            self._keep(other.keys, other.rows, other.labels)
        return self


#: float32's relative rounding (half an ulp: 2^-24), and the share of a column's standard
#: deviation above which that rounding of its largest value is reported
#: (:func:`float32_precision_notes`)
F32_EPS, PRECISION_SHARE = 2.0**-24, 1e-3


def float32_precision_notes(stats, input_dtype) -> list[tuple[int, float, float]]:
    """The columns whose largest magnitude, rounded to float32 as a float32 map reads it,
    moves by more than PRECISION_SHARE of the column's standard deviation: (column index,
    largest magnitude, standard deviation) each; none for float64 maps.  x = 1e9 + u (u
    uniform on [-3, 3]) keeps steps of 64 in float32: a ridge on its Gaussian features
    had R^2 -0.003, 0.92 with the column standardized (Unix times in seconds with a spread
    of a year are at 3e-6: fine)."""
    if input_dtype is not np.float32:
        return []
    stats.finish()  # (its count and spread include the rows not yet merged)
    if not stats.n:
        return []
    top = np.maximum(np.abs(stats.min), np.abs(stats.max))
    std = stats.std
    bad = (top * F32_EPS > PRECISION_SHARE * std) & (std > 0)
    return [(int(j), float(top[j]), float(std[j])) for j in np.flatnonzero(bad)]


class Pass1:
    """Column statistics, the row sample and the row count of (a range of) the input."""

    def __init__(self, d: int, k: int, seed: int, record: bool = False, labels: bool = False):
        self.stats = ColumnStats(d, FIT_BLOCK, record=record)
        self.sample = BottomK(k, seed)
        self.with_labels = labels  # keep the sampled rows' labels (gamma='search')
        self.n = 0

    def update(self, row0: int, X: np.ndarray, labels: np.ndarray | None = None) -> None:
        self.stats.update(X)
        self.sample.update(row0, X, labels if self.with_labels else None)
        self.n += len(X)

    @classmethod
    def merge_ordered(cls, parts: list[Pass1]) -> Pass1:
        """Merge recorded passes over consecutive row ranges (in row order)."""
        out = cls.__new__(cls)
        out.stats = ColumnStats.merge_ordered([p.stats for p in parts])
        out.sample = parts[0].sample
        for p in parts[1:]:
            out.sample.merge(p.sample)
        out.with_labels = parts[0].with_labels
        out.n = sum(p.n for p in parts)
        return out


class EncoderFitter:
    """Builds an :class:`Encoder` from ``settings`` (an
    :class:`rfcli.jobs.encode.EncodeSettings`); the caller makes
    the passes it asks for (``needs_pass1``, ``needs_map_pass``).  Constructing one is
    cheap and checks the map/quantizer choice, so callers use it to plan passes before
    the input's columns are known."""

    def __init__(self, settings, fmap: FeatureMap | None = None, fits=None):
        settings.validate()
        #: bits='auto': ``fits(m, task, k, rows)``, None when the default learner trains m
        #: features in the memory budget, else why not (None: no limit; rfcli.jobs.encode)
        self.fits = fits
        #: bits='auto': (gamma, b) chosen on the sample (rfcli.learn.bits_choice); until
        #: then the settings hold the most features a candidate has
        self.auto_bits = settings.bits == "auto"
        self.settings = settings = resolved(settings)
        self.search = settings.gamma == "search"
        self.labelled = self.search or self.auto_bits  # the row sample keeps its labels
        self.fmap = fmap or self._new_map("auto" if self.search else settings.gamma)
        self.search_report: dict | None = None
        self.bits_report: dict | None = None
        self.pre = Preprocessor(
            standardize=settings.standardize, normalize_rows=settings.normalize_rows
        )
        self.quantizer = build_quantizer(settings, self.fmap)
        #: columns a float32 map reads with their variation lost to rounding (warned of
        #: when the encoder is made: float32_precision_notes)
        self.precision_notes: list[tuple[int, float, float]] = []
        if self.quantizer is not None:
            check_quantizer_fits_map(self.quantizer, self.fmap)  # before any pass
        self._sample: np.ndarray | None = None

    def _new_map(self, gamma) -> FeatureMap:
        s = self.settings
        return make_map(s.kernel, s.n_features, gamma, s.seed, **s.map_options)

    @property
    def needs_pass1(self) -> bool:
        f = self.fmap
        return (self.pre.needs_stats or f.needs_sample or f.needs_box or self.quantizer is None
                or self.auto_bits)  # fmt: skip

    @property
    def needs_map_pass(self) -> bool:
        return self.fmap.needs_pass

    @property
    def n_passes(self) -> int:
        return int(self.needs_pass1) + int(self.needs_map_pass)

    def new_pass1(self, d: int, record: bool = False) -> Pass1:
        from rfcli.learn.bandwidth import SEARCH_ROWS

        k = self.settings.sample_rows
        if self.labelled:  # the first sample_rows of the larger sample are the same rows
            k = max(k, SEARCH_ROWS)
        return Pass1(d, k, self.settings.seed, record=record, labels=self.labelled)

    def finish_pass1(self, p1: Pass1 | None, d: int, where: str) -> None:
        """Fit preprocessing and map for ``d`` inputs from pass 1 (``None`` when no pass
        was needed)."""
        fmap = self.fmap
        if p1 is None:
            fmap.fit(d)
            return
        if p1.n == 0:
            raise InputError(f"{where}: no rows")
        if fmap.needs_sample and p1.n < 2:
            raise InputError(
                f"{where}: {p1.n} row: gamma='auto' needs at least 2 rows (give a numeric gamma)"
            )
        self.pre.fit_stats(p1.stats)
        if not (self.pre.standardize or self.pre.normalize_rows):
            # the map reads the raw columns: in float32 when it computes in float32
            self.precision_notes = float32_precision_notes(p1.stats, fmap.input_dtype)
        #: the row sample, preprocessed (the preprocessing is fitted now)
        self._sample = self.pre.transform(p1.sample.rows[: self.settings.sample_rows])
        if self.labelled:
            fmap = self.fmap = self._validated_map(p1.sample, d, p1.n)
        if fmap.needs_box:
            stats = p1.stats
            corners = self.pre.transform(np.vstack([stats.min, stats.max]))  # affine per column
            fmap.fit(d, box=(corners.min(0), corners.max(0)))
        else:
            fmap.fit(d, self._sample if fmap.needs_sample else None)

    def _validated_map(self, sample: BottomK, d: int, n_rows: int) -> FeatureMap:
        """The map at the gamma chosen by validation on the labelled row sample (see
        :mod:`rfcli.learn.bandwidth`), with the bits and features chosen for the budget
        (``bits='auto'``, :mod:`rfcli.learn.bits_choice`; only those whose features the
        default learner trains on the input's ``n_rows`` rows in memory, ``fits``); the
        searches are kept in ``search_report`` and ``bits_report``."""
        from dataclasses import replace

        from rfcli.learn.bandwidth import SEARCH_FEATURES, search_gamma
        from rfcli.learn.bits_choice import candidate_bits, choose_bits, features_for
        from rfcli.maps.bandwidth import nearest_neighbour_gamma

        what = "gamma='search'" if self.search else "bits='auto'"
        if sample.labels is None:
            raise UsageError(f"{what} needs a label column (label=...)")
        rows = self.pre.transform(sample.rows)
        keep = _finite_labels(sample.labels)
        rows, labels = rows[keep], sample.labels[keep]
        g0 = getattr(self.fmap.fit(d, self._sample), "gamma_", None)
        s = self.settings
        if self.auto_bits:
            kind = s.quantizer or self.fmap.default_quantizer
            bits = candidate_bits(s.row_bytes, lambda b: True)
            ref = 2 if 2 in bits else bits[len(bits) // 2]  # the search's bits: the default
            m_ref = features_for(s.row_bytes, ref)
        else:
            kind, ref, m_ref = None, s.bits, s.n_features

        def features(gamma, b, m: int) -> np.ndarray:
            fm = make_map(s.kernel, m, gamma, s.seed, **s.map_options).fit(d)
            if fm.needs_pass:
                red = RowReducer(fm.pass_reductions, FIT_BLOCK)
                red.update(0, fm.pass_values(rows))
                fm.finish_pass(red.totals(), red.n)
            # the values the learners will see: quantized as the store will be, decoded
            q = self._quantizer(fm, b, kind)
            enc = Encoder([f"x{j}" for j in range(d)], Preprocessor(), fm, q)
            c = enc.encode_chunk(rows, 0)
            return enc.decode(c.packed, c.norms, c.row_scale)

        gamma = g0 if s.gamma == "auto" else s.gamma
        if self.search:
            m = min(m_ref, SEARCH_FEATURES)
            metric = getattr(self.fmap, "metric", "sqeuclidean")
            res = search_gamma(lambda g: features(g, ref, m), labels, g0, s.seed, m,
                               nearest_neighbour_gamma(rows, metric))  # fmt: skip
            self.search_report = res.to_dict()
            gamma = res.gamma
        if self.auto_bits:
            fits = self.fits
            choice = choose_bits(features, labels, gamma, s.row_bytes, bits, s.seed,
                                 widen=self.search,
                                 fits=None if fits is None else
                                 (lambda m, task, k: fits(m, task, k, n_rows)))  # fmt: skip
            self.bits_report = choice.to_dict()
            self.settings = s = replace(s, bits=choice.bits, n_features=choice.features)
            if self.search:
                gamma = choice.gamma
            self.quantizer = build_quantizer(s, self.fmap)
            if self.quantizer is not None:
                check_quantizer_fits_map(self.quantizer, self.fmap)
        return self._new_map(gamma if self.search else s.gamma)

    def new_map_pass(self, row0: int = 0) -> RowReducer:
        return RowReducer(self.fmap.pass_reductions, FIT_BLOCK, row0=row0)

    def map_values(self, X: np.ndarray) -> dict[str, np.ndarray]:
        # one BLAS thread: the fitted encoder must not depend on threads or engine (other
        # thread counts sum the products in another order on some BLAS kernels)
        with one_blas_thread():
            return self.fmap.pass_values(self.pre.transform(X))

    def finish_map_pass(self, reducer: RowReducer, where: str) -> None:
        if reducer.n == 0:
            raise InputError(f"{where}: no rows")
        self.fmap.finish_pass(reducer.totals(), reducer.n)

    def _quantizer(self, fmap: FeatureMap, bits: int | None = None,
                   kind: str | None = None) -> Quantizer:  # fmt: skip
        """The settings' quantizer, or the empirical one fitted for ``fmap`` on the sample;
        with ``bits`` (a candidate of bits='auto'), the quantizer ``kind`` at ``bits``."""
        if bits is not None and kind is not None and kind != "empirical":
            return make_quantizer(kind, bits, seed=self.settings.seed, law=fmap.value_law)
        if self.quantizer is not None and kind is None:
            return self.quantizer
        bits = bits or self.settings.bits or 2
        return fit_empirical(
            fmap,
            self._sample,
            bits,
            self.settings.seed,
            domain=empirical_domain(self.settings.quantizer_domain, fmap, bits),
        )

    def fit_report(self) -> dict:
        """What was chosen on the sample: the gamma search, the bits for the budget."""
        out = {}
        if self.search_report:
            out["gamma_search"] = self.search_report
        if self.bits_report:
            out["bits_choice"] = self.bits_report
        return out

    def encoder(self, columns: list[str]) -> Encoder:
        for j, top, std in self.precision_notes:
            warnings.warn(
                f"column {columns[j]!r}: values up to {top:.6g} with a standard deviation of "
                f"{std:.3g}; the map computes in float32, whose rounding there "
                f"({top * F32_EPS:.2g}) is {top * F32_EPS / std:.2g} of the spread: "
                "standardize (--standardize) centres the columns first",
                PrecisionWarning,
                stacklevel=2,
            )
        quantizer = self.quantizer
        if quantizer is None:
            quantizer = self._quantizer(self.fmap)
            quantizer.info["map_fingerprint"] = map_fingerprint(list(columns), self.pre, self.fmap)
        return Encoder(
            columns=list(columns),
            preprocess=self.pre,
            fmap=self.fmap,
            quantizer=quantizer,
            fit_report=self.fit_report(),
        )


def _finite_labels(labels: np.ndarray) -> np.ndarray:
    if labels.dtype.kind == "f":
        return np.isfinite(labels)
    return np.ones(len(labels), dtype=bool)


def empirical_domain(domain: str, fmap: FeatureMap, bits: int) -> str:
    """``auto``: the log domain for positive features at 3 bits or more, else linear.
    Measured (docs/families-report.md, letter, D = 256..4096): at 4 bits the log-domain
    quantizer has the smaller plain and spectral kernel error at every D; at 2 bits the
    linear one has the smaller plain error."""
    if domain != "auto":
        return domain
    return "log" if fmap.value_law == "positive" and bits >= 3 else "linear"


def fit_empirical(
    fmap: FeatureMap,
    rows: np.ndarray,
    bits: int,
    seed: int,
    n_values: int = EMPIRICAL_SAMPLE,
    domain: str = "linear",
    info: dict[str, Any] | None = None,
    pool=None,
) -> Quantizer:
    """The empirical quantizer of ``fmap``'s raw values on preprocessed ``rows``: a hash
    sample of ``n_values`` (row, feature) values (independent of chunking), then exact
    Lloyd-Max (:class:`rfcli.quantize.empirical.EmpiricalQuantizer`).  The rows are mapped
    in fixed blocks of :data:`FIT_BLOCK` rows, each with one BLAS thread, on ``pool`` (an
    executor; None: this thread), joined in row order: the same values, and quantizer, for
    any threads or engine (``rfcli encode`` and ``rfcli fit-quantizer`` alike)."""
    from rfcli.quantize.empirical import EmpiricalQuantizer

    blocks = [rows[i : i + FIT_BLOCK] for i in range(0, len(rows), FIT_BLOCK)] or [rows]
    with one_blas_thread():
        if pool is None or len(blocks) == 1:
            outs = [fmap.transform_raw(b)[0] for b in blocks]
        else:
            outs = [o[0] for o in pool.map(fmap.transform_raw, blocks)]
    z = np.asarray(np.concatenate(outs), dtype=np.float64)
    if z.size > n_values:
        keys = keyed_uniform(seed, np.arange(z.shape[0]), z.shape[1]).ravel()
        z = z.ravel()[np.argpartition(keys, n_values - 1)[:n_values]]
    meta = {"sample_rows": int(len(rows)), "sample_seed": int(seed), **(info or {})}
    return EmpiricalQuantizer.fit(z, bits, domain=domain, info=meta)


class PreprocessFitter:
    """Pass 1 alone, for a job that chooses its map from the data first (GP regression):
    the preprocessing ``settings`` describe and the preprocessed hash row sample of
    ``settings.sample_rows`` rows -- the pass :class:`EncoderFitter` makes for a map that
    needs a sample, the same rows."""

    def __init__(self, settings):
        settings.validate()
        self.settings = settings
        self.pre = Preprocessor(
            standardize=settings.standardize, normalize_rows=settings.normalize_rows
        )

    def new_pass1(self, d: int, record: bool = False) -> Pass1:
        return Pass1(d, self.settings.sample_rows, self.settings.seed, record=record)


# -- the fitting passes, for any engine -----------------------------------------------------
def fit_pass_part(chunks, start: int, fitter, stage: str, d: int, record: bool):
    """One fitting pass over ``chunks``, the rows of a range that starts at row ``start``
    (on a :data:`FIT_BLOCK` boundary): a :class:`Pass1` (``stage="pass1"``; ``record``: its
    blocks kept for merging) or the map pass's :class:`RowReducer` (``"map"``).  Parts of
    consecutive ranges merge in row order into exactly what one pass over every row
    computes, so the encoder is the same whichever engine made the parts, and however many.
    ``fitter``: an :class:`EncoderFitter` (a :class:`PreprocessFitter` for pass 1 alone)."""
    if stage == "pass1":
        part = fitter.new_pass1(d, record=record)
        for ch in chunks:
            part.update(ch.row0, ch.X, ch.label)
    else:
        part = fitter.new_map_pass(start)
        for ch in chunks:
            part.update(ch.row0, fitter.map_values(ch.X))
    return part


def _pass1(engine, source, sel, read, fitter, title: str) -> Pass1:
    """Pass 1 of ``fitter`` (an :class:`EncoderFitter` or :class:`PreprocessFitter`) over
    the input by ``engine.chunk_pass``, its parts merged in row order."""
    record = not engine.whole_pass  # one part needs no block record (d floats per block)
    args = (fitter, "pass1", len(sel.features), record)
    parts = engine.chunk_pass(source, sel, read, fit_pass_part, args, title=title)
    return Pass1.merge_ordered(parts) if record else parts[0]


def fit_encoder_on(engine, source, sel, settings, read, fmap=None, fits=None) -> Encoder:
    """The encoder ``settings`` describe (or of the unfitted map ``fmap``), fitted on the
    open ``source``'s selected columns ``sel``: the passes :class:`EncoderFitter` asks for,
    each run by ``engine.chunk_pass`` (:class:`rfcli.engines.base.Engine`) over row ranges
    of the input and merged here in row order.  ``fits``: see :class:`EncoderFitter`."""
    fitter = EncoderFitter(settings, fmap, fits)
    d, path = len(sel.features), source.path
    total = fitter.n_passes + 1
    record = not engine.whole_pass  # one part needs no block record (d floats per block)
    if fitter.needs_pass1:
        p1 = _pass1(engine, source, sel, read, fitter, f"fitting (pass 1/{total})")
        fitter.finish_pass1(p1, d, path)
    else:
        fitter.finish_pass1(None, d, path)
    if fitter.needs_map_pass:
        parts = engine.chunk_pass(source, sel, read, fit_pass_part, (fitter, "map", d, record),
                                  title=f"fitting (pass {fitter.n_passes}/{total})")  # fmt: skip
        fitter.finish_map_pass(RowReducer.merge_ordered(parts), path)
    return fitter.encoder(sel.features)


def fit_preprocessing_on(engine, source, sel, settings, read, title: str = "fitting"):
    """(preprocessing, preprocessed row sample, rows) of ``settings`` (an EncodeSettings: its
    standardize, normalize_rows, seed and sample_rows) fitted on the open ``source``'s
    columns ``sel`` by one pass (``engine.chunk_pass``, parts merged in row order as in
    :func:`fit_encoder_on`): what a job that chooses its map from the data needs first."""
    fitter = PreprocessFitter(settings)
    p1 = _pass1(engine, source, sel, read, fitter, title)
    if p1.n == 0:
        raise InputError(f"{source.path}: no rows")
    fitter.pre.fit_stats(p1.stats)
    return fitter.pre, fitter.pre.transform(p1.sample.rows[: settings.sample_rows]), p1.n
