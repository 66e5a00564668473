"""``rfcli inspect``."""

from __future__ import annotations

import click

from rfcli.cli import cli
from rfcli.cli.options import json_option


@cli.command("inspect")
@click.argument("store_path", metavar="STORE|MODEL")
@click.option(
    "--verify",
    is_flag=True,
    help="Read every chunk: checksums, missing chunks, shapes, row counts, metadata and "
    "encoder consistency, stored norms against the codes.",
)
@json_option
@click.pass_obj
def inspect_cmd(ui, store_path, verify, as_json):
    """Show a store's shape, map, quantizer, size on disk and completeness, or a model
    file's kind, classes, map and quantizer and the report of its training.

    Exit status 2 when the store is incomplete, or with --verify when any check fails
    (each problem is listed on stderr).  --json prints the same fields as one JSON object
    (numbers as numbers, sizes in bytes).

    \b
    Examples:
      rfcli inspect train.rff.zarr
      rfcli inspect train.rff.zarr --json | jq .bits_per_sample
      rfcli inspect train.rff.zarr --verify
      rfcli inspect svm.npz
      rfcli inspect svm.npz --json | jq .report.C
    """
    from rfcli.errors import StoreError, UsageError
    from rfcli.io.kinds import kind_of

    if kind_of(store_path) == "model":
        if verify:
            raise UsageError("--verify checks stores; a model file is checked whenever it is read")
        from rfcli.jobs.inspect import model_summary

        info = model_summary(store_path)
        if as_json:
            ui.result_json(info)
        else:
            from rfcli.cli.render import show

            show(ui, model_sections(info))
        return
    if verify:
        from rfcli.io.store.verify import verify_store

        with ui.progress().task("verifying", None) as task:
            rep = verify_store(store_path, progress=task.advance)
        if as_json:
            ui.result_json(
                {
                    "path": store_path,
                    "ok": rep.ok,
                    "rows": rep.rows,
                    "chunks": rep.chunks,
                    "problems": rep.problems,
                }  # fmt: skip
            )
        for p in rep.problems:
            ui.info(f"problem: {p}")
        if not rep.ok:
            raise StoreError(f"{store_path}: verification failed ({len(rep.problems)} problem(s))")
        ui.info(f"{store_path}: ok ({rep.rows:,} rows, {rep.chunks} chunk(s) verified)")
        return
    from rfcli.io.store import FeatureStore
    from rfcli.jobs.inspect import store_summary

    store = FeatureStore(store_path, require_complete=False)
    info = store_summary(store)
    if as_json:
        ui.result_json(info)
    else:
        from rfcli.cli.render import show

        show(ui, store_sections(info))
    if not store.complete:
        why = "its encode did not finish"
        if store_path.rstrip("/").endswith(".partial"):
            why = (f"an interrupted encode keeps {info['rows']:,} rows here: run it again with "
                   "--resume to continue")  # fmt: skip
        ui.info(f"rfcli: error: {store_path}: incomplete store ({why})")
        raise click.exceptions.Exit(2)


def _search_text(gs: dict) -> str:
    """``0.1389 (validation accuracy 0.906) of 12 candidates 0.00217 .. 4.445, median
    heuristic 0.03473; 12,000 rows, 1,024 features`` (the whole table: --json)."""
    from rfcli.cli.render import number

    cands = gs.get("candidates") or []
    best = gs.get("gamma")
    score = next((s for c, s in zip(cands, gs.get("scores") or [], strict=False)
                  if best is not None and c == best), None)  # fmt: skip
    out = number(best)
    if score is not None:
        out += f" (validation {gs.get('metric', 'score')} {number(score)})"
    if cands:
        out += f" of {len(cands)} candidates {number(min(cands))} .. {number(max(cands))}"
    if gs.get("at_edge"):
        out += " (at the grid's edge)"
    if "median_heuristic" in gs:
        out += f", median heuristic {number(gs['median_heuristic'])}"
    if "sample_rows" in gs:
        out += f"; {number(gs['sample_rows'])} rows, {number(gs.get('features'))} features"
    return out


def _bits_choice_text(bc: dict) -> str:
    """``2 bits, m 4,096 for 1,024 bytes per row (validation accuracy 0.9612); b 1 m 8,192
    0.9598 (SE 0.0018), b 2 ...; left out (memory): ...; 12,000 rows, scored at 512, 256
    and 128 features`` (all: --json)."""
    from rfcli.cli.render import number

    metric = bc.get("metric", "score")
    cands = bc.get("candidates") or []
    best = next((c for c in cands if c.get("bits") == bc.get("bits")), None)
    out = (f"{number(bc.get('bits'))} bits, m {number(bc.get('features'))} for "
           f"{number(bc.get('row_bytes'))} bytes per row")  # fmt: skip
    if best is not None:
        out += f" (validation {metric} {number(best.get('score'))})"
    if cands:
        out += "; " + ", ".join(
            f"b {number(c.get('bits'))} m {number(c.get('features'))} {number(c.get('score'))}"
            + (f" (SE {number(c['se'], 2)})" if "se" in c else "")
            for c in cands
        )
    left = bc.get("left_out") or []
    if left:
        out += "; left out (memory): " + ", ".join(
            f"b {number(c.get('bits'))} m {number(c.get('features'))}" for c in left
        )
    if "sample_rows" in bc:
        sf = bc.get("search_features")
        out += f"; {number(bc['sample_rows'])} rows"
        if isinstance(sf, int):
            out += f", scored at {number(sf)}, {number(sf // 2)} and {number(sf // 4)} features"
    return out


def _map_rows(i: dict) -> list[tuple[str, str]]:
    """The encoder's rows: kernel and its parameters, preprocessing, quantizer."""
    from rfcli.cli.render import number, text

    mp = i["map"]
    skip = {"kind", "n_features", "seed"}
    params = [f"{k} {number(v) if isinstance(v, float) else text(v)}" for k, v in mp.items()
              if k not in skip and v is not None]  # fmt: skip
    pre = i["preprocess"]
    steps = [w for w, on in (("standardize", pre["standardize"]),
                             ("normalize rows", pre["normalize_rows"])) if on]  # fmt: skip
    bits = i["bits"]
    return [
        ("kernel", ", ".join([i["kernel"], *params])),
        ("features (m)", text(i["features"])),
        ("seed", text(mp.get("seed"))),
        ("preprocessing", ", ".join(steps) or "-"),
        ("inputs", f"{i['inputs']:,} columns ({_columns(i['columns'])})"),
        (
            "quantizer",
            f"{i['quantizer']}, {number(bits)} bit{'' if bits == 1 else 's'} per "
            f"feature, {number(i['bits_per_sample'])} per row",
        ),  # fmt: skip
    ]


def _columns(cols: list[str]) -> str:
    return ", ".join(cols) if len(cols) <= 6 else f"{', '.join(cols[:5])}, ... {cols[-1]}"


def store_sections(i: dict) -> list:
    """``inspect STORE`` in words: what the store holds, its map, its size."""
    from rfcli.cli.render import size, text

    ratio = i["compression_ratio"]
    label = i["label"]
    if label and i.get("label_kind"):
        label = f"{label} ({i['label_kind']})"
    fit = i.get("fit") or {}
    rows = [
        ("rows", text(i["rows"])),
        ("complete", text(i["complete"])),
        ("label", text(label)),
        ("ids", text(i["ids"])),
        *_map_rows(i),
    ]
    search = fit.get("gamma_search")
    if search:
        rows.append(("gamma search", _search_text(search)))
    choice = fit.get("bits_choice")
    if choice:
        rows.append(("bits choice", _bits_choice_text(choice)))
    rest = {k: v for k, v in fit.items()
            if k not in ("gamma_search", "bits_choice") and not isinstance(v, list)}  # fmt: skip
    if rest:
        rows.append(("fitted", text(rest)))
    rows += [
        ("size on disk", _size_text(i)),
        ("as float32", size(i["float32_bytes"])),
        ("compression", _ratio(ratio, i)),
        ("fingerprint", text(i["fingerprint"])),
        ("format", f"version {i['format_version']}, written by rfcli {i['rfcli_version']}"),
    ]
    return [(f"{i['path']}: feature store", rows)]


#: the parts of a store (``bytes_by_part``) in words
_PARTS = {"codes": "codes", "norms": "norms", "row_scale": "row scales", "label": "label",
          "ids": "ids", "encoder": "encoder arrays", "metadata": "metadata"}  # fmt: skip


def _overheads(i: dict) -> dict[str, int]:
    """The bytes on disk besides the codes themselves, by what takes them: the fill that
    pads the codes' last chunk to its full length, and every other part."""
    parts = dict(i["bytes_by_part"])
    out = {"fill": max(0, parts.pop("codes", 0) - i["codes_bytes"])}
    out.update((_PARTS.get(k, k), v) for k, v in parts.items())
    return {k: v for k, v in out.items() if v}


def _size_text(i: dict) -> str:
    """The size on disk and what takes it, largest part first; the codes' chunk files
    beyond the codes' own bytes (crc32c aside) are the fill of their last chunk."""
    from rfcli.cli.render import size

    words = []
    for k, v in i["bytes_by_part"].items():
        word = f"{_PARTS.get(k, k)} {size(v)}"
        if k == "codes" and v - i["codes_bytes"] > max(4096, v // 100):
            word += (f" ({size(i['codes_bytes'])} of codes, the rest the fill of a "
                     f"{i['chunk_rows']:,}-row chunk)")  # fmt: skip
        words.append(word)
    return f"{size(i['bytes_on_disk'])}: {', '.join(words)}"


def _ratio(r: float | None, i: dict) -> str:
    if r is None:
        return "-"
    if r >= 1:
        return f"{r:.1f}x smaller than float32"
    what, most = max(_overheads(i).items(), key=lambda kv: kv[1], default=("codes", 0))
    share = f"{100 * most / i['bytes_on_disk']:.0f}% of the bytes are"
    if what == "fill":  # chunks longer than the rows (a store of an earlier rfcli)
        why = f"{share} the fill of the codes' last chunk, {i['chunk_rows']:,} rows long"
    else:
        why = f"few rows: {share} the {what}"
    return f"{1 / r:.1f}x larger than float32 ({why})"


#: training-report entries shown first, in this order, with their labels
_REPORT_KEYS = {
    "C": "C",
    "alpha": "alpha",
    "loss": "loss",
    "iterations": "iterations",
    "passes": "data passes (fit)",
    "converged": "converged",
    "objective": "objective",
    "train_mse": "training MSE",
    "rows": "training rows",
    "seconds": "time",
}


def report_rows(rep: dict) -> list[tuple[str, str]]:
    """A training report (as stored in the model) in words: the chosen hyperparameters,
    the validation scores of each candidate, iterations, time; other entries generically."""
    from rfcli.cli.render import number, seconds, size, text

    out = []
    for k, label in _REPORT_KEYS.items():
        if k in rep and k != "seconds":
            v = rep[k]
            out.append((label, number(v) if isinstance(v, float) else text(v)))
    for k, v in rep.items():
        if k in _REPORT_KEYS or k in ("model", "task", "features", "bits", "message"):
            continue
        label = k.replace("_", " ")
        if k == "cv" and isinstance(v, dict) and "folds" in v:
            what = f"{v['folds']}-fold, {v.get('parameter', '')} by {v.get('metric', '')}"
            warning = f"; {v['warning']}" if v.get("warning") else ""
            out.append(("cross-validation", " ".join(what.split()) + warning))
        elif k == "cache" and isinstance(v, dict) and "kind" in v:
            out.append(("data in memory", f"{v['kind']}, {size(v.get('bytes'))}"
                        if v["kind"] != "none" else "none"))  # fmt: skip
        elif isinstance(v, dict) and v and all(isinstance(x, int | float) for x in v.values()):
            out.append((label, ", ".join(f"{_key(a)}: {number(x)}" for a, x in v.items())))
        elif isinstance(v, dict):
            flat = {a: x for a, x in v.items() if not isinstance(x, dict | list)}
            out.append((label, ", ".join(f"{a} {_num(x)}" for a, x in flat.items()) or "-"))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            out.append((label, f"{len(v)} (the entries: --json)"))
        elif isinstance(v, list) and len(v) > 8:
            out.append((label, f"{len(v)} values"))
        else:
            out.append((label, _num(v)))
    if "seconds" in rep:
        out.append(("time", seconds(rep["seconds"])))
    return out


def _key(k) -> str:
    """A report's dict key: a number (a candidate C or alpha) in short form."""
    from rfcli.cli.render import number

    try:
        return number(float(k), 3)
    except (TypeError, ValueError):
        return str(k)


def _num(v) -> str:
    from rfcli.cli.render import number, text

    if isinstance(v, float):
        return number(v)
    if isinstance(v, list) and all(isinstance(x, float) for x in v):
        return ", ".join(number(x) for x in v)
    return text(v)


def _features_used(i: dict) -> str:
    if i["normalized"]:
        return "normalized rows"
    if i["model"] == "gpr":  # unquantized: the map's values (GLF, RFF, the exact GP's kernel)
        return "the map's values"
    return "plain (sqrt(2/m) Q(z))"


def model_sections(i: dict) -> list:
    """``inspect MODEL`` in words: the model, its encoder, its training."""
    from rfcli.cli.render import size, text

    if i["task"] == "classification":
        classes = i["classes"]
        shown = ", ".join(map(str, classes[:12])) + (", ..." if len(classes) > 12 else "")
        what = ("classes", f"{i['n_classes']} ({shown})")
    else:
        what = ("target", "a number (regression)")
    trained = i.get("trained_on") or {}
    model = [
        ("model", f"{i['model']} ({i['task']})"),
        what,
        ("label", f"{text(i['label'])} ({i['label_type']})"),
        ("features used", _features_used(i)),
        ("trained on", text(trained.get("store") or trained.get("input"))),
        ("fingerprint", text(i["fingerprint"])),
        (
            "file",
            f"{size(i['bytes'])}, format version {i['format_version']}, rfcli {i['rfcli_version']}",
        ),  # fmt: skip
    ]
    sections = [(f"{i['path']}: model file", model), ("encoder", _map_rows(i))]
    if i.get("report"):
        sections.append(("training", report_rows(i["report"])))
    return sections
