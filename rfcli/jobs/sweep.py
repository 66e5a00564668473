"""The comparison of Li & Li, "Quantization Algorithms for Random Fourier Features" (ICML
2021, Section 5), in one call: for each (m, quantizer, b) encode train and test, train,
evaluate; rows of accuracy (or MSE) against bits per sample."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import replace
from typing import Any

from rfcli.constraints import settings_check
from rfcli.errors import UsageError
from rfcli.io.readers import ReadSettings, open_source, select_columns
from rfcli.jobs.encode import EncodeSettings, encode
from rfcli.jobs.evaluate import evaluate
from rfcli.jobs.resources import Resources
from rfcli.jobs.train import TrainSettings, train
from rfcli.progress import NullProgress, Progress


def parse_bits(values: list[str], name: str = "bits") -> list[int | str]:
    """``["1", "2", "none"]`` -> ``[1, 2, "none"]``; errors cite ``name`` (the CLI: its flag)."""
    out: list[int | str] = []
    for v in values:
        if v == "none":
            out.append("none")
        else:
            try:
                b = int(v)
            except ValueError:
                raise UsageError(f"{name}: {v!r} is neither an integer nor 'none'") from None
            if not 1 <= b <= 8:
                raise UsageError(f"{name}: {b} is outside 1..8")
            out.append(b)
    return out


def sweep(
    train_path: str,
    test_path: str,
    *,
    bits: list[int | str],
    features: list[int],
    quantizers: list[str],
    encode_settings: EncodeSettings,
    read: ReadSettings,
    train_settings: TrainSettings,
    workdir: str | None = None,
    keep: bool = False,
    on_result=None,
    threads: int | None = None,
    memory: int | None = None,
    engine: str = "local",
    dask=None,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Accuracy (or MSE) against bits per sample: for every number of features, bits and
    quantizer, encode the training and test sets, train, evaluate.

    Parameters
    ----------
    train_path, test_path : str
        Raw training and test data (paths), with the label column ``read.label``.
    bits : list of int or "none"
        Bits per feature (1..8), or ``"none"`` for float32 features.
    features : list of int
        Numbers of features m.
    quantizers : list of str
        Quantizer kinds tried at each bit width (``lm``, ``lm2``, ``stoc``, ...).
    encode_settings : EncodeSettings
        The rest of the encoding (kernel, gamma, preprocessing, seed); gamma is fitted
        once, on the first encode, and kept for every combination.
    read : ReadSettings
        How both inputs are read (the label).
    train_settings : TrainSettings
        The model trained on every store.
    workdir : str or None, default=None
        Where stores and models go (default: a temporary directory, removed).
    keep : bool, default=False
        Keep the stores and models in ``workdir``.
    on_result : callable or None, default=None
        Called with each result row as it is made.
    threads, memory, engine, dask
        The resources of each encode, train and evaluate (rfcli.jobs.resources).
    progress : Progress or None, default=None
        Progress reporting.

    Returns
    -------
    list of dict
        One row per combination: model, quantizer, bits, features, bits_per_sample, the
        metrics, C or alpha, gamma, encode and train seconds.

    Raises
    ------
    UsageError
        A bad setting or resource.
    InputError
        An unreadable input or a missing label, found before any work.
    """
    run = dict(threads=threads, memory=memory, engine=engine, dask=dask, progress=progress)
    Resources(threads=threads, memory=memory, engine=engine, dask=dask)  # checked first
    encode_settings = settings_check(encode_settings, EncodeSettings, "encode_settings")
    read = settings_check(read, ReadSettings, "read")
    train_settings = settings_check(train_settings, TrainSettings, "train_settings")
    progress = run["progress"] = progress or NullProgress()
    for path in (train_path, test_path):  # both readable, with the label: before any work
        source = open_source(path, read.fmt, delimiter=read.delimiter)
        try:
            select_columns(source, read.columns, read.label, read.ids)
        finally:
            source.close()
    own = workdir is None
    workdir = workdir or tempfile.mkdtemp(prefix="rfcli-sweep-")
    os.makedirs(workdir, exist_ok=True)
    combos: list[tuple[int, str, int]] = []
    for m in features:
        for b in bits:
            if b == "none":
                combos.append((m, "none", 32))
            else:
                combos.extend((m, q, b) for q in quantizers)
    combos = list(dict.fromkeys(combos))
    results = []
    gamma = encode_settings.gamma
    try:
        for m, q, b in combos:
            tag = f"m{m}.{q}{b}"
            tr, te = (
                os.path.join(workdir, f"train.{tag}.zarr"),
                os.path.join(workdir, f"test.{tag}.zarr"),
            )
            t0 = time.perf_counter()
            es = replace(encode_settings, n_features=m, quantizer=q, bits=b, gamma=gamma)
            res = encode(train_path, tr, es, read, overwrite=True, **run)
            gamma = (
                getattr(res.encoder.fmap, "gamma_", None) or gamma
            )  # same kernel for every combo
            encode(
                test_path,
                te,
                like=tr,
                read=replace(read, columns=None),
                overwrite=True,
                **run,
            )
            t1 = time.perf_counter()
            tres = train(
                tr,
                os.path.join(workdir, f"model.{tag}.npz"),
                train_settings,
                overwrite=True,
                **run,
            )
            t2 = time.perf_counter()
            ev = evaluate(os.path.join(workdir, f"model.{tag}.npz"), te, **run)
            row = {
                "model": train_settings.model,
                "quantizer": q,
                "bits": b,
                "features": m,
                "bits_per_sample": m * b,
                **{k: ev[k] for k in ("accuracy", "macro_f1", "mse", "rmse", "r2") if k in ev},
                "C": tres.report.get("C"),
                "alpha": tres.report.get("alpha"),
                "gamma": gamma,
                "encode_seconds": t1 - t0,
                "train_seconds": t2 - t1,
            }
            results.append(row)
            if on_result:
                on_result(row)
            if not keep:
                for p in (tr, te):
                    shutil.rmtree(p, ignore_errors=True)
    finally:
        if own and not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return results


def check_plot(path: str, overwrite: bool = False) -> None:
    """Before a sweep: the plot can be written (a .png path whose directory exists, not
    an existing file without ``overwrite``) and matplotlib is installed."""
    import importlib.util

    from rfcli.io.writers import check_output_path

    if not path.lower().endswith(".png"):
        raise UsageError(f"{path}: the plot is a PNG image: give a path ending in .png")
    check_output_path(path, overwrite)
    if importlib.util.find_spec("matplotlib") is None:
        raise UsageError("plotting needs matplotlib: pip install 'rfcli[plot]' (or drop the plot)")


def plot(results: list[dict[str, Any]], path: str, metric: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("plotting needs matplotlib: pip install 'rfcli[plot]'") from None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    lines: dict[tuple, list] = {}
    for r in results:
        lines.setdefault((r["quantizer"], r["bits"]), []).append(r)
    for (q, b), rows in sorted(lines.items(), key=lambda kv: (kv[0][0] != "none", str(kv[0]))):
        rows = sorted(rows, key=lambda r: r["features"])
        label = "full precision" if q == "none" else f"{q} {b}-bit"
        style = "k-" if q == "none" else ("-o" if q == "lm" else "--s")
        axes[0].plot([r["features"] for r in rows], [r[metric] for r in rows], style, label=label)
        axes[1].plot(
            [r["bits_per_sample"] for r in rows], [r[metric] for r in rows], style, label=label
        )
    for ax, xl in zip(axes, ("m (features)", "bits per sample (m x b)"), strict=True):
        ax.set_xscale("log", base=2)
        ax.set_xlabel(xl)
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
