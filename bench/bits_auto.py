"""The cost of ``-b auto`` against ``--gamma search`` alone (docs/benchmarks.md, Bits for a
budget).

For each set, in turns in one process: the encoder fit of ``--standardize --gamma search
-b 2 --row-bytes N`` (today's search, m = 4N) and of ``--standardize --gamma search -b auto
--row-bytes N`` (the search, then the choice of b among 1, 2, 3, 4, 8).  The Lloyd-Max
designs of every b are made once before the turns (a process pays them once; their cost
is printed apart).  Reported: the median fit time of each side, their ratio, the chosen
(m, b) and its validation score.  The sets are rfcli's ../shared/data training splits.

    .venv/bin/python bench/bits_auto.py [--turns 2] [--row-bytes 512] [--sets quakes,...]
        [--doc]   # also (re)write the section "Bits for a budget" of docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

SETS = {"quakes": "y", "optdigits": "label", "letter": "label"}
DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")


def fit_seconds(path: str, label: str, bits, row_bytes: int, out: str):
    import rfcli
    from rfcli.io.settings import ReadSettings
    from rfcli.jobs.encode import EncodeSettings

    s = EncodeSettings(gamma="search", standardize=True, bits=bits, row_bytes=row_bytes)
    res = rfcli.encode(path, out, s, ReadSettings(label=label), overwrite=True)
    return res.fit_seconds, res.encoder


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=2)
    ap.add_argument("--row-bytes", type=int, default=512)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--doc", action="store_true", help="write the docs/benchmarks.md section")
    a = ap.parse_args(argv)
    load0 = os.getloadavg()[0]
    table = []
    from rfcli.quantize import make_quantizer

    t0 = time.perf_counter()
    for b in (1, 2, 3, 4, 8):
        make_quantizer("lm", b)
    t_design = time.perf_counter() - t0
    print(f"Lloyd-Max designs of b = 1, 2, 3, 4, 8 (once per process): {t_design:.2f} s")
    out = os.path.join(tempfile.mkdtemp(prefix="rfcli-bits-"), "s.zarr")
    # a first job of the process pays one-time costs (SciPy's BLAS loaded, and limited to
    # one thread only from the next job on): one untimed fit of each side
    t0 = time.perf_counter()
    warm = os.path.join(DATA, "quakes.train.parquet")
    for bits in (2, "auto"):
        fit_seconds(warm, "y", bits, a.row_bytes, out)
    print(f"warm-up (quakes, both sides once): {time.perf_counter() - t0:.2f} s")
    print(f"row bytes {a.row_bytes}; {a.turns} turns; seconds of the encoder fit (median)")
    table += ["| set | rows | --gamma search -b 2 | + -b auto | ratio | chosen (m, b) | score |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    print("\n".join(table))
    for name in a.sets.split(","):
        path = os.path.join(DATA, f"{name}.train.parquet")
        base, auto = [], []
        for _ in range(a.turns):  # in turns: the machine's load falls on both sides alike
            t, enc0 = fit_seconds(path, SETS[name], 2, a.row_bytes, out)
            base.append(t)
            t, enc = fit_seconds(path, SETS[name], "auto", a.row_bytes, out)
            auto.append(t)
        bc = enc.fit_report["bits_choice"]
        best = next(c for c in bc["candidates"] if c["bits"] == bc["bits"])
        tb, ta = statistics.median(base), statistics.median(auto)
        turns = ", ".join(f"{x:.1f}/{y:.1f}" for x, y in zip(base, auto, strict=True))
        print(f"  {name} turns (search / + auto): {turns}", file=sys.stderr)
        import pyarrow.parquet as pq

        rows = pq.ParquetFile(path).metadata.num_rows
        table.append(f"| {name} | {rows:,} | {tb:.2f} s | {ta:.2f} s | {ta / tb:.2f}x | "
                     f"({bc['features']}, {bc['bits']}) | {bc['metric']} {best['score']:.4g} |")  # fmt: skip
        print(table[-1], flush=True)
    if a.doc:
        write_section(table, a, load0, os.getloadavg()[0], t_design)
    return 0


def write_section(table, a, load0, load1, t_design: float) -> None:
    """The section "Bits for a budget" of docs/benchmarks.md, replaced or put before
    "Against the targets" (make bench rewrites the file without it: run this again)."""
    title = "## Bits for a budget: -b auto against --gamma search alone"
    sec = [title, "",
           f"`python bench/bits_auto.py --turns {a.turns} --row-bytes {a.row_bytes} --doc` (not "
           "part of `make bench`): the encoder fit (pass 1, the search, the map) of "
           f"`--standardize --gamma search --row-bytes {a.row_bytes}` with `-b 2` (the search "
           "alone, m = 4N) and with `-b auto` (the search, then the choice of b among 1, 2, 3, "
           "4, 8; docs/methods.md, Bits for a budget), in turns in one process, the median of "
           f"the turns; one-minute load average {load0:.1f} before, {load1:.1f} after (2 "
           "cores: both sides slowed, not always alike). The Lloyd-Max designs are made "
           f"before the turns: a process pays them once ({t_design:.2f} s for all five, SciPy's "
           "first use included), and a "
           "CLI encode with -b auto pays them every time.", "",
           *table, ""]  # fmt: skip
    from doc_section import write_section as write

    write(title, sec[2:-1])


if __name__ == "__main__":
    sys.exit(main())
