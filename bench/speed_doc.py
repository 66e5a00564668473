"""docs/benchmarks.md sections for bench/speed.py's results (start-up, encode, KRR, model
selection) and the targets they are checked against."""

from __future__ import annotations


def _cpu(r) -> str:
    return f"{r['wall']:.2f} s ({r['cpu']:.2f} CPU-s)"


NUMPY = "python -c 'import numpy'"

#: the encode floor's steps that run per block of rows (the rest, reading and writing, are
#: I/O); bench/speed.py runs them on the threads at once
COMPUTE_STEPS = ("GEMM", "codes from the phase", "pack", "row norms")


def startup_doc(st) -> list[str]:
    base = st[NUMPY]
    L = ["## Start-up", "", "Fresh processes, best of 7.", "",
         "| command | seconds | / import numpy |", "|---|---|---|"]  # fmt: skip
    for name, secs in st.items():
        L.append(f"| `{name}` | {secs:.3f} | {secs / base:.2f}x |")
    return [*L, ""]


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


def _runs(walls: list[float]) -> str:
    return ", ".join(f"{w:.2f}" for w in walls)


def encode_doc(e, avx512_off: bool = False) -> list[str]:
    n, r, one = e["rows"], e["rfcli"], e["rfcli_threads1"]
    r32, r64, fl = e["rbf32"], e["rbf64"], e["floor"]
    for run, key in ((r, "walls"), (r32, "first_walls"), (r64, "first_walls")):
        run.setdefault(key, [run["wall" if key == "walls" else "first_wall"]])  # older runs
    cores = e["threads"]
    title = "## Encode: the CLI end to end against RBFSampler, and against the floor"
    L = [
        title + (" (AVX-512 off)" if avx512_off else ""),
        "",
        *(_avx512_off_text(e) if avx512_off else []),
        f"{n:,} x {fl['d']} float32 rows (synthetic Parquet), m = {e['m']}, b = {e['bits']}, "
        f"gamma = 0.01. rfcli: `rfcli encode IN -o OUT -m {e['m']} -b {e['bits']} --threads "
        f"{cores}` as a fresh process: start-up, Parquet read, GEMM, "
        f"codes from the phase (no cosine), crc32c and the store's files; the median of "
        f"{len(r['walls'])} runs. scikit-learn: "
        "`RBFSampler(n_components=m).fit(X).transform(X)` on the rows already in memory "
        "(no I/O, no quantization, BLAS on every core), in fresh processes: the first call "
        "(what a script pays; the output's pages are new), the median of "
        f"{len(r32['first_walls'])} processes, and the best of 3 repeated calls in one "
        "process.  The first call's time swings with the kernel's supply of fresh pages "
        "(every run is listed), so the ratios compare medians, and the two sides run in "
        "turns (rfcli first, then RBFSampler first, and so on: each side follows itself as "
        "often as the other)."
        + (
            f"  The ratio within each turn (RBFSampler's first call / rfcli's run) ranges "
            f"{min(e['pair_ratios']):.2f}-{max(e['pair_ratios']):.2f}x, median "
            f"{_median(e['pair_ratios']):.2f}x."
            if e.get("pair_ratios")
            else ""
        ),
        "",
        "| what | wall s | CPU s | rows/s | rfcli / it (rows/s) | every run, wall s |",
        "|---|---|---|---|---|---|",
        f"| rfcli encode, {cores} threads, as a process | {r['wall']:.2f} | {r['cpu']:.2f} | "
        f"{n / r['wall']:,.0f} | 1 | {_runs(r['walls'])} |",
        f"| rfcli encode, 1 thread, as a process | {one['wall']:.2f} | {one['cpu']:.2f} | "
        f"{n / one['wall']:,.0f} | {one['wall'] / r['wall']:.2f}x | |",
    ]
    for label, rb in (("float32", r32), ("float64 input (float64 output)", r64)):
        L.append(
            f"| RBFSampler {label}, first call | {rb['first_wall']:.2f} | {rb['first_cpu']:.2f} "
            f"| {n / rb['first_wall']:,.0f} | {rb['first_wall'] / r['wall']:.2f}x "
            f"| {_runs(rb['first_walls'])} |"
        )
        L.append(
            f"| RBFSampler {label}, repeated call | {rb['warm_wall']:.2f} | {rb['warm_cpu']:.2f} "
            f"| {n / rb['warm_wall']:,.0f} | {rb['warm_wall'] / r['wall']:.2f}x | |"
        )
    if "script_wall" in r32:
        L.append(
            f"| a script: Parquet read + RBFSampler float32, as a process | "
            f"{r32['script_wall']:.2f} | | {n / r32['script_wall']:,.0f} | "
            f"{r32['script_wall'] / r['wall']:.2f}x | {_runs(r32['script_walls'])} |"
        )
    L += [
        "",
        f"Store: {e['store_bytes'] / 1e6:.1f} MB; the float32 features would be "
        f"{n * e['m'] * 4 / 1e6:,.0f} MB.",
        "",
    ]
    L += floor_doc(e) if "sum_median" in fl else _floor_doc_best_only(e)
    L += [
        f"With 1 thread it uses {one['cpu'] / one['wall']:.2f} CPU-seconds per wall-second.",
        "",
    ]
    if e.get("in_process"):
        L += in_process_doc(e["in_process"])
    return L


def _avx512_off_text(e) -> list[str]:
    ip = e.get("in_process", {})
    left = ip.get("avx512_features")
    seen = (
        ""
        if left is None
        else " NumPy reported no AVX-512 feature in use."
        if not left
        else f" NumPy still reported {', '.join(left)} in use."
    )
    return [
        'Every process of this section ran with `NPY_DISABLE_CPU_FEATURES="AVX512F AVX512CD '
        'AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR X86_V4" '
        "OPENBLAS_CORETYPE=Haswell`: NumPy's SIMD loops and OpenBLAS's kernels as on a CPU "
        f"with AVX2 only (on a CPU without AVX-512 the two sections measure the same).{seen}",
        "",
    ]


def in_process_doc(ip) -> list[str]:
    """rfcli.encode on the in-memory array against RBFSampler in the same process."""
    md, w = ip["median"], ip["walls"]
    k = len(w["phase"])
    return [
        f"**In process, warm**: one Python process, {ip['rows']:,} x {ip['d']} float32 rows in "
        f"memory, m = {ip['m']}, b = {ip['bits']}; `rfcli.encode(X, store, threads="
        f"{ip['threads']})` into a new store, the same encode by the cosine path (the encode "
        "before the codes from the phase: `FourierMap.cosine_phase = False`), and "
        "`RBFSampler(n_components=m).fit(X).transform(X)` (float32), "
        f"{k} times each in turns after one warm-up call of each; medians.",
        "",
        "| what | median wall s | every run, wall s | RBFSampler / it |",
        "|---|---|---|---|",
        f"| rfcli.encode, codes from the phase | {md['phase']:.3f} | {_runs(w['phase'])} | "
        f"{md['rbf32'] / md['phase']:.2f}x |",
        f"| rfcli.encode, cosine path | {md['cosine']:.3f} | {_runs(w['cosine'])} | "
        f"{md['rbf32'] / md['cosine']:.2f}x |",
        f"| RBFSampler(float32) fit + transform | {md['rbf32']:.3f} | {_runs(w['rbf32'])} | 1 |",
        "",
    ]


def floor_fractions(e) -> dict[str, float]:
    """The encode's runs as fractions of the floor of a process, by one statistic on both
    sides: its best run against the floor's least times, its median run against the
    floor's medians; and (as reported before the floor kept its medians) its median run
    against the least times."""
    fl, r, cores = e["floor"], e.get("rfcli_alone", e["rfcli"]), e["threads"]
    best = e["interpreter"] + fl["sum"] / cores
    out = {"mixed": best / r["wall"]}
    if "sum_median" in fl:
        med = e["interpreter_median"] + fl["sum_median"] / cores
        out = {"best": best / min(r["walls"]), "median": med / r["wall"], **out}
    return out


FRACTION_TEXT = {
    "best": "{:.0%} of the floor of a process (best run against the floor's least times)",
    "median": "{:.0%} (median run against the floor's medians)",
    "mixed": "{:.0%} (median run against the least times, the measure reported before)",
}


def _fractions_text(f: dict[str, float]) -> str:
    if "best" not in f:
        return f"{f['mixed']:.0%} of the floor of a process"
    return ", ".join(FRACTION_TEXT[k].format(v) for k, v in f.items())


def floor_doc(e) -> list[str]:
    fl, r, cores = e["floor"], e.get("rfcli_alone", e["rfcli"]), e["threads"]
    k = fl["reps"]
    lo, mid = fl["sum"] / cores, fl["sum_median"] / cores
    py, py_mid = e["interpreter"], e["interpreter_median"]
    f = floor_fractions(e)
    L = [
        "**The floor**: each step the encode cannot avoid, alone on one core, on the same rows "
        f"({k} times: the least and the median time), their sum spread over the {cores} "
        "cores; for a process, the start of a Python interpreter that imports numpy and "
        "pyarrow comes first (it runs before any row can be read: `python -c 'import numpy, "
        f"pyarrow.parquet'`, {len(r['walls'])} times).  The bytes are written as a new "
        "store's are: new files in a new directory (removed between the repetitions: the "
        "next write gets the pages just freed).",
        "",
        f"| step | least of {k}, s (1 core) | median of {k}, s |",
        "|---|---|---|",
    ]
    L += [f"| {s} | {v:.3f} | {fl['steps_median'][s]:.3f} |" for s, v in fl["steps"].items()]
    L += [
        f"| sum | {fl['sum']:.3f} | {fl['sum_median']:.3f} |",
        f"| the steps on {cores} cores | {lo:.3f} | {mid:.3f} |",
        f"| interpreter start (numpy, pyarrow) | {py:.3f} | {py_mid:.3f} |",
        f"| floor of a process | {py + lo:.3f} | {py_mid + mid:.3f} |",
        f"| the encode's runs (least, median) | {min(r['walls']):.3f} | {r['wall']:.3f} |",
        f"| the encode at ... of the floor | {f['best']:.0%} | {f['median']:.0%} |",
    ]
    if "compute_at_once" in fl:
        at = fl["compute_at_once"]
        L.append(
            f"| (beside the floor) the compute steps ({', '.join(COMPUTE_STEPS)}) on {cores} "
            f"threads at once | {at['least']:.3f} | {at['median']:.3f} |"
        )
    L += [
        "",
        "Each statistic is compared with its own kind: the encode's best run with the floor's "
        "least times, its median run with the floor's medians.  The median run against the "
        f"least times, a mixed measure reported before, is {f['mixed']:.0%}; "
        f"against the steps alone (no interpreter start) {lo / r['wall']:.0%}.",
    ]
    if "compute_at_once" in fl:
        L[-1] += "  " + _at_once_text(e)
    if "cosine" in fl:
        L[-1] += (
            f"  The cosine and its comparisons, which the encode no longer computes (codes from "
            f"the phase), would take {fl['cosine']['least']:.3f} s (least) / "
            f"{fl['cosine']['median']:.3f} s (median) on one core in place of the codes from the "
            f"phase's {fl['steps']['codes from the phase']:.3f} / "
            f"{fl['steps_median']['codes from the phase']:.3f} s."
        )
    if "rfcli_alone" in e:
        t = e["rfcli"]
        L[-1] += (
            f"  The encode's runs here are {len(r['walls'])} in a row, as the floor's steps "
            f"are measured (every run, wall s: {_runs(r['walls'])}); against its runs in "
            f"turns with RBFSampler above (median {t['wall']:.2f} s) the median fraction is "
            f"{(py_mid + mid) / t['wall']:.0%}."
        )
        if "after" in t:
            L[-1] += (
                f"  Of those, the runs right after an RBFSampler process (which freed "
                f"1.6 GB) have the median {t['after']['rbf']:.2f} s, those after an encode "
                f"{t['after']['rfcli']:.2f} s."
            )
    return L


def _floor_doc_best_only(e) -> list[str]:
    """An older run's floor (least times only)."""
    fl, r, cores = e["floor"], e["rfcli"], e["threads"]
    floor_s = fl["sum"] / cores
    L = [
        "**The floor**: each step the encode cannot avoid, alone on one core (best of 3), "
        f"their sum spread over the {cores} cores, after the interpreter's start.",
        "",
        "| step | seconds (1 core) |",
        "|---|---|",
    ]
    L += [f"| {k} | {v:.3f} |" for k, v in fl["steps"].items()]
    L += [f"| sum | {fl['sum']:.3f} |", f"| the steps on {cores} cores | {floor_s:.3f} |", ""]
    py = e.get("interpreter", 0.0)
    L.append(f"The encode as a process runs at {(floor_s + py) / r['wall']:.0%} of the floor.")
    return L


def krr_doc(k) -> list[str]:
    o, s = k["rfcli"], k["ridge"]
    return [
        "## KRR from a 2-bit store against Ridge on float32 features in memory",
        "",
        f"{k['rows']:,} rows, m = {k['m']}, alpha = 1. rfcli: `rfcli train STORE --model krr "
        "--alpha 1` as a fresh process (start-up, store reads, decoding, the solve). "
        "scikit-learn: `Ridge(alpha=1, solver='cholesky').fit(F, y)` on the same decoded "
        "features as a float32 array (the fit alone is timed; its peak RSS includes the "
        "array, which it needs).",
        "",
        "| | wall s | CPU s | peak MiB | train MSE |",
        "|---|---|---|---|---|",
        f"| rfcli | {o['wall']:.2f} | {o['cpu']:.2f} | {o['peak_mib']:.0f} | {o['train_mse']:.6g} |",
        f"| Ridge (float32) | {s['wall']:.2f} | {s['cpu']:.2f} | {s['peak_mib']:.0f} | "
        f"{s['train_mse']:.6g} |",
        "",
        f"rfcli: {s['wall'] / o['wall']:.2f}x Ridge's speed at "
        f"1/{s['peak_mib'] / o['peak_mib']:.1f} of its peak memory.",
        "",
    ]


def select_doc(rows) -> list[str]:
    L = [
        "## Model selection: rfcli's default against GridSearchCV(cv=5)",
        "",
        "rfcli: `rfcli train STORE --model svm|krr` with its defaults (5-fold cross-"
        "validation over its grid, then a refit on all rows), as a fresh process. "
        "scikit-learn: `GridSearchCV(LinearSVC(dual=True), {'C': [0.01, 0.1, 1, 10, 100]}, "
        "cv=5)` or `GridSearchCV(Ridge(solver='cholesky'), {'alpha': rfcli's grid}, cv=5)` "
        "(refit) on the same decoded float32 features in memory, fit alone. Test scores on "
        "the test split.",
        "",
        "| data | model | m | rfcli s (CPU) | scikit-learn s (CPU) | speed-up | rfcli test | "
        "scikit-learn test | rfcli choice | scikit-learn choice | rfcli passes |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        o, s = r["rfcli"], r["sklearn"]
        rep = o["report"]
        choice = rep.get("C", rep.get("alpha"))
        fmt = "{:.4f}" if r["model"] == "svm" else "{:.5g}"
        L.append(
            f"| {r['set']} | {r['model']} | {r['m']} | {_cpu(o)} | {_cpu(s)} | "
            f"{s['wall'] / o['wall']:.1f}x | {fmt.format(o['score'])} | "
            f"{fmt.format(s['score'])} | {choice:.4g} | {s.get('best')} | "
            f"{rep.get('passes', '')} |"
        )
    return [*L, ""]


def speed_doc(res) -> list[str]:
    L = []
    if res.get("startup"):
        L += startup_doc(res["startup"])
    if res.get("encode"):
        L += encode_doc(res["encode"])
    if res.get("encode_noavx512"):
        L += encode_doc(res["encode_noavx512"], avx512_off=True)
    if res.get("krr"):
        L += krr_doc(res["krr"])
    if res.get("select"):
        L += select_doc(res["select"])
    return L


def _encode_targets(res) -> list[str]:
    """The in-process and script ratios, with AVX-512 on and off, and the floor without the
    cosine."""
    out = []
    for key, what, goal_ip in (
        ("encode", "AVX-512 on", 1.2),
        ("encode_noavx512", "AVX-512 off", 1.5),
    ):
        e = res.get(key)
        if not e:
            continue
        ip, r32 = e.get("in_process"), e["rbf32"]
        if ip:
            md = ip["median"]
            out.append(
                f"* {what}, in process ({ip['rows']:,} rows): rfcli.encode "
                f"{md['rbf32'] / md['phase']:.2f}x repeated RBFSampler(float32) fit+transform "
                f"(cosine path {md['rbf32'] / md['cosine']:.2f}x) (target: at least {goal_ip}x)."
            )
        if "script_wall" in r32:
            goal = " (target: at least 3x)" if key == "encode_noavx512" else ""
            out.append(
                f"* {what}, the CLI as a process: {r32['script_wall'] / e['rfcli']['wall']:.2f}x a "
                f"script that reads the Parquet and runs RBFSampler(float32){goal}."
            )
        if key == "encode_noavx512":
            f = floor_fractions(e)
            out.append(f"* {what}: the encode at {_fractions_text(f)} (target: at least 80%).")
    return out


def targets_doc(res) -> list[str]:
    """Each target of the speed work, checked against this run's numbers."""
    out = ["## Against the targets", ""]
    e = res.get("encode")
    if e:
        r, fl = e["rfcli"], e["floor"]
        out.append(
            f"* Encode as a process, {e['rows']:,} x {fl['d']} float32, m = {e['m']}, b = "
            f"{e['bits']}, {e['threads']} threads: {e['rbf32']['first_wall'] / r['wall']:.2f}x "
            "the rows/s of RBFSampler(float32).fit(X).transform(X) on the in-memory array "
            f"(first call, medians; {e['rbf32']['warm_wall'] / r['wall']:.2f}x a repeated call"
            + (
                f"; median of the turns' ratios {_median(e['pair_ratios']):.2f}x"
                if e.get("pair_ratios")
                else ""
            )  # fmt: skip
            + ") (target: at least 1.5x)"
            + f", at {_fractions_text(floor_fractions(e))} (target: at least 70% of the floor)."
        )
        out += _encode_targets(res)
        one = e["rfcli_threads1"]
        out.append(
            f"* Encode with --threads 1: {one['cpu'] / one['wall']:.2f} CPU-seconds per "
            "wall-second (target: at most 1.3)."
        )
    st = res.get("startup")
    if st:
        out.append(
            f"* `rfcli --version`: {st['rfcli --version'] / st[NUMPY]:.2f}x "
            "`python -c 'import numpy'` (target: at most 2x)."
        )
    k = res.get("krr")
    if k:
        out.append(
            f"* KRR from a 2-bit store, {k['rows']:,} rows, m = {k['m']}: "
            f"{k['ridge']['wall'] / k['rfcli']['wall']:.2f}x the speed of Ridge(cholesky) on "
            f"float32 features in memory (fit alone), at 1/"
            f"{k['ridge']['peak_mib'] / k['rfcli']['peak_mib']:.1f} of its peak memory "
            "(targets: at least as fast, at most 1/8 of the memory)."
        )
    for r in res.get("select", []):
        o, s = r["rfcli"], r["sklearn"]
        unit = "pt" if r["model"] == "svm" else "x MSE"
        gap = (
            f"{100 * (o['score'] - s['score']):+.2f} pt accuracy"
            if r["model"] == "svm"
            else f"{o['score'] / s['score']:.3f}x its MSE"
        )
        out.append(
            f"* {r['set']} ({r['model']}, m = {r['m']}): default selection "
            f"{s['wall'] / o['wall']:.1f}x faster than GridSearchCV(cv=5), {gap} "
            f"(target{'' if unit == 'pt' else ' for svm'}: at least 2x, at most 0.5 pt below)."
        )
    sc = res.get("scale", [])
    if len(sc) >= 2:
        parts = []
        for a, b in zip(sc, sc[1:], strict=False):
            g = [
                100 * (b[key] / a[key] - 1)
                for key in ("encode_peak_mib", "krr_peak_mib", "svm10_peak_mib")
            ]
            parts.append(
                f"{a['rows']:,} -> {b['rows']:,} rows: encode {g[0]:+.1f}%, KRR {g[1]:+.1f}%, "
                f"SVM {g[2]:+.1f}%"
            )
        out.append("* Peak RSS growth per 10x rows (target: below 10%): " + "; ".join(parts) + ".")
    return [*out, ""]


def _at_once_text(e) -> str:
    """The compute steps chained and on the cores at once (bench/speed.py, at_once): what
    the floor's sum / cores assumes of the cores against what they deliver, and the encode
    against a floor with the measured time in its place (a separate measure, not the
    target's floor)."""
    fl, r, cores = e["floor"], e.get("rfcli_alone", e["rfcli"]), e["threads"]
    at, one = fl["compute_at_once"], sum(fl["steps"][k] for k in COMPUTE_STEPS)
    io = {  # reading and writing
        s: sum(v for k, v in fl[key].items() if k not in COMPUTE_STEPS)
        for s, key in (("least", "steps"), ("median", "steps_median"))
    }
    within = {
        "best": (e["interpreter"] + at["least"] + io["least"] / cores) / min(r["walls"]),
        "median": (e["interpreter_median"] + at["median"] + io["median"] / cores) / r["wall"],
    }
    text = f"The sum spread over the {cores} cores assumes that each core adds a whole core's work."
    base, what = one, "one core (the steps' separately timed sum)"
    if "compute_chained" in fl:
        ch = fl["compute_chained"]
        text += (
            f"  Chained block after block on one thread (the encode's worker without its "
            f"reading, writing and hand-offs), the per-block steps ({', '.join(COMPUTE_STEPS)}) "
            f"took {ch['least']:.3f} s (least) / {ch['median']:.3f} s (median) against "
            f"{one:.3f} s, their sum timed step by step (each step alone reuses one block's "
            f"inputs, in cache): chaining them costs {ch['least'] / one - 1:.0%}."
        )
        base, what = ch["least"], "one thread (the steps chained)"
    text += (
        f"  On {cores} threads at once (each its own arrays, taking the next block as it "
        f"frees) they took {at['least']:.3f} s (least) / {at['median']:.3f} s (median): the "
        f"cores delivered {base / at['least']:.2f}x {what}, where the floor counts {cores}x"
        + (
            f", so the floor's steps on {cores} cores are out of reach on this machine"
            if base / at["least"] < 0.95 * cores
            else ""
        )
        + ".  Against a "
        f"floor measured so (the compute at once in place of its sum / {cores}, the reading "
        f"and writing still spread over the {cores} cores; a measure beside the floor, not "
        f"the floor the target names, and no lower bound: it is rfcli's own per-block code, "
        f"and on another CPU the encode ran faster than it) the encode's best run is at "
        f"{within['best']:.0%} and its median at {within['median']:.0%}."
    )
    return text
