"""The implementation choices the code's docstrings name without numbers (docs/benchmarks.md,
Implementation choices): each against the plain alternative, on the same arrays, in one
process, one BLAS thread, best of the turns.

* ``Quantizer.codes``: the codes as a sum of vectorized comparisons against a binary
  search per element (``np.searchsorted``), 2 bits;
* ``Quantizer.decode_rows``: the byte table's rows gathered with ``np.take`` against
  ``lut[packed]``, 2 bits;
* ``Encoder.encode_chunk``: a chunk loop that encodes into its earlier results (``out=``)
  against one that allocates new arrays for each chunk (CPU seconds: the page faults and
  zeroing of new memory).

    .venv/bin/python bench/impl_choices.py [--rows 200000] [--features 2048] [--turns 3]
        [--doc]   # also (re)write the section "Implementation choices" of docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np


def best(fn, turns: int, clock=time.perf_counter) -> float:
    out = float("inf")
    for _ in range(turns):
        t = clock()
        fn()
        out = min(out, clock() - t)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=2048)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--doc", action="store_true", help="write the docs/benchmarks.md section")
    a = ap.parse_args(argv)
    import rfcli
    from rfcli.threads import one_blas_thread

    load0 = os.getloadavg()[0]
    rows = []
    with one_blas_thread():
        q = rfcli.make_quantizer("lm", 2)
        rng = np.random.default_rng(0)
        z = np.cos(rng.uniform(0, 7, size=(8192, 1024))).astype(np.float32)
        borders = q.borders.astype(np.float32)
        assert np.array_equal(q.codes(z), np.searchsorted(borders, z).astype(np.uint8))
        t_cmp = best(lambda: q.codes(z), a.turns)
        t_bin = best(lambda: np.searchsorted(borders, z, side="left").astype(np.uint8), a.turns)
        rows.append(("`Quantizer.codes`, 8192 x 1024 values, 2 bits", "comparisons",
                     t_cmp, "np.searchsorted", t_bin))  # fmt: skip
        packed, _ = q.encode_rows(z)
        lut = q._scaled_lut(1.0)
        t_take = best(lambda: np.take(lut, packed, axis=0), a.turns)
        t_index = best(lambda: lut[packed], a.turns)
        rows.append(("`Quantizer.decode_rows`, 8192 x 1024 codes, 2 bits", "np.take",
                     t_take, "lut[packed]", t_index))  # fmt: skip
        X = rng.normal(size=(a.rows, 16))
        enc = rfcli.fit_encoder(X, rfcli.EncodeSettings(n_features=a.features, bits=2))
        step = 8192

        def loop(recycle: bool) -> None:
            out = None
            for r0 in range(0, a.rows, step):
                res = enc.encode_chunk(X[r0 : r0 + step], r0, out if recycle else None)
                out = res

        cpu = time.process_time
        t_out = best(lambda: loop(True), a.turns, cpu)
        t_new = best(lambda: loop(False), a.turns, cpu)
        rows.append((f"`Encoder.encode_chunk`, {a.rows:,} x 16 rows, m = {a.features}, b = 2, "
                     "8192-row chunks (CPU s)", "out= (recycled)", t_out, "new arrays",
                     t_new))  # fmt: skip
    load1 = os.getloadavg()[0]
    table = ["| what | chosen | s | alternative | s | alternative / chosen |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for what, name, t, alt, t_alt in rows:
        table.append(f"| {what} | {name} | {t:.4f} | {alt} | {t_alt:.4f} | {t_alt / t:.2f}x |")
    print("\n".join(table))
    print(f"load {load0:.1f} -> {load1:.1f}")
    if a.doc:
        sys.path.insert(0, os.path.dirname(__file__))
        from doc_section import write_section

        write_section("## Implementation choices", [
            f"`python bench/impl_choices.py --turns {a.turns} --doc` (not part of `make "
            "bench`): the choices the code's docstrings name, each against the plain "
            "alternative on the same arrays, in one process with one BLAS thread, best of "
            f"{a.turns} turns; one-minute load average {load0:.1f} before, {load1:.1f} after "
            "(2 cores, shared).", "", *table])  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
