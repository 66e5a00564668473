"""Property tests: random CSV/Parquet inputs and damaged store metadata give either a correct
result or a clean RfcliError (never another exception, never a silently wrong store)."""

import copy
import os
import shutil
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from rfcli import EncodeSettings, FeatureStore, ReadSettings, encode
from rfcli.errors import RfcliError
from rfcli.io.store.verify import verify_store
from tests.helpers import edit_meta

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


META_KEYS = ["format", "format_version", "rfcli_version", "encoder", "layout", "n_rows",
             "complete", "fingerprint", "label", "ids", "encoder_arrays", "source"]  # fmt: skip
NESTED_KEYS = ["layout.row_bytes", "layout.bits", "layout.chunk_rows", "layout.n_features",
               "layout.codes", "encoder.map", "encoder.quantizer", "encoder.columns",
               "encoder.map.seed", "encoder.map.gamma", "encoder.quantizer.levels",
               "label.name", "label.kind"]  # fmt: skip
JUNK = [None, 0, -1, 1.5, "x", [], {}, [1, 2], {"a": 1}, True]
DELETE = "__delete__"
#: well-typed but wrong values (the schema accepts them: only consistency checks can tell)
PLAUSIBLE = {
    "format_version": [2],
    "n_rows": [0, 49, 51],
    "complete": [False],
    "fingerprint": ["0123456789abcdef"],
    "ids": [["y"]],
    "encoder_arrays": [["map/W"], ["map/tau"], ["map/W", "map/tau", "map/x"]],
    "label": [{"name": "y", "kind": "category", "classes": ["a", "b"]}],  # codes 0..2
    "layout.row_bytes": [1, 3],
    "layout.bits": [1, 3, 1.6, 2.0],
    "layout.chunk_rows": [16, 64, 1024],  # the store is one chunk of its 50 rows
    "layout.n_features": [7, 16],
    "layout.codes": ["trits-base3"],
    "encoder.columns": [["b", "a"], ["a"]],
    "encoder.map.seed": [1],
    "encoder.map.gamma": [2.0],
    "encoder.quantizer.levels": [[-1.0, -0.3, 0.3, 1.0]],
}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A small labelled store (50 rows, 8 features, 2-bit LM) and what reading it gives."""
    d = tmp_path_factory.mktemp("fuzz-base")
    src = os.fspath(d / "in.parquet")
    rng = np.random.default_rng(0)
    pq.write_table(pa.table({"a": rng.normal(size=50), "b": rng.normal(size=50),
                             "y": rng.integers(0, 3, 50)}), src)  # fmt: skip
    path = os.fspath(d / "s.zarr")
    encode(src, path, EncodeSettings(n_features=8, gamma=1.0), ReadSettings(label="y"))
    ref = read_all(path)
    assert ref["n_rows"] == 50 and ref["labels"] is not None
    return path, ref


def read_all(path) -> dict:
    """Everything a reader gets from the store: codes, norms, both decodings, labels, ids."""
    store = FeatureStore(path)
    chunks = list(store.iter_encoded())
    return {
        "n_rows": store.n_rows,
        "codes": np.concatenate([c.packed for c in chunks]),
        "norms": np.concatenate([c.norms for c in chunks]),
        "features": np.concatenate([f for _, f in store.iter_features()]),
        "normalized": np.concatenate([f for _, f in store.iter_features(normalized=True)]),
        "label_info": store.label_info,
        "labels": store.labels(),
        "label_values": store.label_values(),
        "ids": store.ids(),
    }


def apply_edits(meta: dict, edits) -> None:
    """Set (or delete) dotted keys; an edit under a key an earlier edit replaced is skipped."""
    for key, val in edits:
        *parents, leaf = key.split(".")
        target = meta
        for p in parents:
            target = target.get(p) if isinstance(target, dict) else None
        if not isinstance(target, dict):
            continue
        if val == DELETE:
            target.pop(leaf, None)
        else:
            target[leaf] = copy.deepcopy(val)


def damaged_copy(base_path, d, edits) -> str:
    s = os.path.join(d, "s.zarr")
    shutil.copytree(base_path, s)
    edit_meta(s, lambda meta: apply_edits(meta, edits))
    return s


def check_reader_and_verify_agree(path, ref) -> str:
    """The promise: never a silently wrong store.  verify_store never raises; the reader
    (open + reading every codes/norms/features/labels/ids) either refuses with an RfcliError,
    and then verify reports a problem too, or accepts, and then verify reports the store ok
    and what the reader returned is exactly the undamaged store's data."""
    rep = verify_store(path)  # must not raise, whatever the damage
    try:
        got = read_all(path)
    except RfcliError as e:
        assert not rep.ok, f"the reader refuses the store ({e}) but verify reports it ok"
        return "refused"
    assert rep.ok, f"the reader accepts the store but verify reports {rep.problems}"
    assert rep.rows == got["n_rows"] == ref["n_rows"]
    for k in ("codes", "norms", "features", "normalized"):
        np.testing.assert_array_equal(got[k], ref[k], err_msg=k)
    assert got["ids"] == ref["ids"] == {}
    if got["label_info"] is None:
        # the label's metadata was removed: the store reads as an unlabelled one (learners
        # refuse it cleanly); the label values themselves are never served wrong
        assert got["labels"] is None and got["label_values"] is None
    else:
        np.testing.assert_array_equal(got["labels"], ref["labels"])
        np.testing.assert_array_equal(got["label_values"], ref["label_values"])
    return "accepted"


def edit_values(key):
    return st.one_of(st.sampled_from(JUNK), st.just(DELETE),
                     st.sampled_from(PLAUSIBLE.get(key, JUNK)))  # fmt: skip


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(
    edits=st.lists(
        st.sampled_from(META_KEYS + NESTED_KEYS).flatmap(
            lambda k: st.tuples(st.just(k), edit_values(k))
        ),
        min_size=1,
        max_size=3,
    )
)
def test_damaged_metadata_reader_and_verify_agree(base, edits):
    base_path, ref = base
    with tempfile.TemporaryDirectory() as d:
        event(check_reader_and_verify_agree(damaged_copy(base_path, d, edits), ref))


@pytest.mark.parametrize(
    "edits,outcome",
    [
        ([("rfcli_version", "x"), ("source", DELETE)], "accepted"),  # informational only
        ([("label.name", "x")], "accepted"),
        ([("label", None)], "accepted"),  # reads as unlabelled
        ([("layout.bits", 2.0)], "accepted"),  # the same number
        ([("n_rows", 49)], "refused"),
        ([("complete", False)], "refused"),
        ([("fingerprint", "0123456789abcdef")], "refused"),
        ([("encoder.map.seed", 1)], "refused"),  # another draw: the fingerprint differs
        ([("encoder.columns", ["b", "a"])], "refused"),
        ([("layout.bits", 1.6)], "refused"),
        ([("layout.chunk_rows", 64)], "refused"),  # one chunk either way, but inconsistent
        ([("ids", ["y"])], "refused"),
        ([("label", {"name": "y", "kind": "category", "classes": ["a", "b"]})], "refused"),
    ],
)
def test_damaged_metadata_cases(base, tmp_path, edits, outcome):
    """Pinned cases of the property above: both outcomes occur, as expected."""
    base_path, ref = base
    assert check_reader_and_verify_agree(damaged_copy(base_path, tmp_path, edits), ref) == outcome
