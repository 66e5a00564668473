"""Input messages that say what to do (issue 28): cut lists with counts, the line and text of
a bad CSV cell, delimiters, an unquoted CSV header, what a resume continues, the rows a
partial store keeps, and inputs closed on every path."""

import numpy as np
import pytest

import rfcli
from rfcli.errors import InputError, UsageError
from rfcli.io.columns import candidates, missing_columns, name_list
from rfcli.io.readers import ReadSettings, iter_chunks, open_source, select_columns
from rfcli.io.sources import CsvSource
from rfcli.io.writers import TableWriter
from tests.helpers import tree_digest


def _csv(path, rows=400, cols=4, cell=None, sep=","):
    """``rows`` rows of ``cols`` numeric columns a0.. and a label; ``cell``: (row, col, text)."""
    rng = np.random.default_rng(1)
    names = [f"a{j}" for j in range(cols)] + ["target"]
    body = [[f"{v:.4f}" for v in r] + [str(int(r[0] > 0))] for r in rng.normal(size=(rows, cols))]
    if cell is not None:
        body[cell[0]][cell[1]] = cell[2]
    path.write_text("\n".join(sep.join(r) for r in [names, *body]) + "\n")
    return str(path)


def test_name_list_counts_the_names_it_leaves_out_and_keeps_the_candidates():
    names = [f"p{j}" for j in range(64)] + ["target"]
    text = name_list(names, keep=["target"])
    shown = text.split(", ")
    n_more = int(text.split("... (")[1].split(" more")[0])
    assert shown[-1] == "target" and len(shown) - 1 + n_more == len(names)  # less "... (n)"
    assert name_list(names[:5]) == "p0, p1, p2, p3, p4"
    assert candidates("label", names, label=True) == ["target"]
    many = missing_columns(names[:64], "of the store s.zarr", "x.csv")
    assert many == "64 columns of the store s.zarr are missing from x.csv: " + name_list(names[:64])
    assert missing_columns(["p3"], "of the store s.zarr", "x.csv") == (
        "column 'p3' of the store s.zarr is missing from x.csv"
    )


def test_a_text_cell_in_a_column_of_numbers_is_an_error_naming_line_and_text(tmp_path):
    path = _csv(tmp_path / "t.csv", cell=(300, 2, "abc"))  # data row 300: line 302
    with open_source(path) as src:
        with pytest.raises(InputError, match=r"line 302: column 'a2' holds 'abc'"):
            select_columns(src, label="target")


def test_a_text_cell_after_the_first_block_is_named_by_its_line(tmp_path):
    path = _csv(tmp_path / "t.csv", rows=3000, cell=(2500, 1, "x1"))
    src = CsvSource(path, block_size=4096)  # types from the first 4 KiB only
    sel = select_columns(src, label="target")
    assert "a1" in sel.features
    with pytest.raises(InputError, match=r"line 2502: column 'a1' holds 'x1'"):
        for _ in iter_chunks(src, sel, 256):
            pass


def test_a_column_of_text_is_still_left_out(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("name,a,b\n" + "".join(f"n{i},{i},{2 * i}\n" for i in range(50)))
    with open_source(str(p)) as src:
        sel = select_columns(src)
    assert sel.features == ["a", "b"] and sel.skipped == ["name"]


def test_missing_values_of_csv_are_named_by_line(tmp_path):
    path = _csv(tmp_path / "t.csv", cell=(10, 0, "n/a"))
    with open_source(path) as src:
        with pytest.raises(InputError, match=r"line 12: column 'a0' is missing"):
            list(iter_chunks(src, select_columns(src, label="target"), 64))


@pytest.mark.parametrize("name", ["t.tsv", "t.tab"])
def test_tab_separated_names_are_read_with_tabs(tmp_path, name):
    path = _csv(tmp_path / name, sep="\t")
    with open_source(path) as src:
        assert src.names == ["a0", "a1", "a2", "a3", "target"]


def test_the_delimiter_setting(tmp_path):
    path = _csv(tmp_path / "t.txt", sep=";")
    with open_source(path) as src:
        assert len(src.names) == 1 and "semicolon" in src.delimiter_hint()
    with open_source(path, delimiter=";") as src:
        assert src.names[-1] == "target"
    assert ReadSettings(delimiter="tab").validate().delimiter == "tab"
    with pytest.raises(ValueError, match="delimiter"):
        open_source(path, delimiter=";;")


def test_csv_header_is_not_quoted(tmp_path):
    out = tmp_path / "p.csv"
    w = TableWriter(str(out), 0, 0)
    w.write(None, {"id": np.array(["a", "b,c"], dtype=object), "prediction": np.array([1, 2])})
    w.close()
    assert out.read_text().splitlines() == ["id,prediction", '"a",1', '"b,c",2']
    import pyarrow.csv as pacsv

    assert pacsv.read_csv(out).column("id").to_pylist() == ["a", "b,c"]


class _StopAfter:
    """A progress that interrupts the encode once ``rows`` rows are counted (Ctrl-C)."""

    def __init__(self, rows):
        self.rows, self.seen = rows, 0

    def task(self, description, total, unit="rows"):
        from contextlib import nullcontext

        outer = self

        class Task:
            def advance(self, n):
                if description.startswith("encoding"):
                    outer.seen += n
                    if outer.seen >= outer.rows:
                        raise KeyboardInterrupt

            def update(self, total=None, **values):
                pass

        return nullcontext(Task())


def test_resume_says_what_it_continues_and_names_a_setting_that_differs(tmp_path):
    from rfcli.io.store import FeatureStore
    from rfcli.jobs.encode import EncodeSettings, ResumeMismatch
    from rfcli.jobs.inspect import store_summary

    src = _csv(tmp_path / "in.csv", rows=3000)
    settings = EncodeSettings(n_features=32, store_chunk_rows=256)
    read = ReadSettings(label="target", chunk_rows=128)
    ref = tmp_path / "ref.zarr"
    rfcli.encode(src, str(ref), settings, read, threads=1)
    out = str(tmp_path / "s.zarr")
    notes = []
    res = rfcli.encode(src, out, settings, read, threads=1, resume=True, note=notes.append)
    assert "no partial store" in notes[0] and "from the first row" in notes[0]
    assert res.notes == notes
    with pytest.raises(rfcli.errors.Interrupted) as e:
        rfcli.encode(src, out, settings, read, threads=1, overwrite=True,
                     progress=_StopAfter(1500))  # fmt: skip
    kept = e.value.rows_kept
    assert 0 < kept < 3000
    assert store_summary(FeatureStore(e.value.partial, require_complete=False))["rows"] == kept
    other = EncodeSettings(n_features=64, store_chunk_rows=256)
    with pytest.raises(ResumeMismatch, match="n_features was 32, now 64") as mism:
        rfcli.encode(src, out, other, read, threads=1, resume=True, overwrite=True)
    assert [d[0] for d in mism.value.differences] == ["n_features"]
    res = rfcli.encode(src, out, settings, read, threads=1, resume=True, overwrite=True)
    assert res.notes == [f"resuming {out}.partial: {kept:,} rows kept, encoding from row {kept:,}"]
    assert res.resumed_rows == kept
    assert tree_digest(out) == tree_digest(ref)


def test_predict_and_evaluate_close_their_input_on_every_path(tmp_path, monkeypatch):
    from rfcli.jobs.encode import EncodeSettings

    train = _csv(tmp_path / "train.csv", rows=300)
    store = str(tmp_path / "s.zarr")
    rfcli.encode(train, store, EncodeSettings(n_features=16), ReadSettings(label="target"))
    model = str(tmp_path / "m.npz")
    rfcli.train(store, model, rfcli.TrainSettings(model="krr", alpha=1.0))
    opened, closed = [], []
    init, close = CsvSource.__init__, CsvSource.close
    monkeypatch.setattr(
        CsvSource,
        "__init__",
        lambda self, *a, **k: (opened.append(id(self)), init(self, *a, **k))[1],
    )
    monkeypatch.setattr(CsvSource, "close", lambda self: (closed.append(id(self)), close(self)))

    def all_closed():
        done = sorted(opened) == sorted(closed)
        opened.clear(), closed.clear()
        return done

    rfcli.predict(model, train, str(tmp_path / "p.csv"))
    assert all_closed()
    rfcli.evaluate(model, train)
    assert all_closed()
    bad = _csv(tmp_path / "bad.csv", rows=300, cell=(200, 1, "nan"))  # fails mid-pass
    with pytest.raises(InputError, match="line 202"):
        rfcli.predict(model, bad, str(tmp_path / "q.csv"))
    assert all_closed()
    with pytest.raises(InputError, match="line 202"):
        rfcli.evaluate(model, bad)
    assert all_closed()
    few = tmp_path / "few.csv"
    few.write_text("a0,target\n1,0\n")  # refused when opened
    with pytest.raises(InputError, match="missing"):
        rfcli.predict(model, str(few), str(tmp_path / "r.csv"))
    assert all_closed()


def test_gamma_refusal_lists_every_accepted_value():
    from rfcli.sklearn import RandomFeatureSVC

    X = np.random.default_rng(0).normal(size=(40, 3))
    with pytest.raises(UsageError) as e:
        RandomFeatureSVC(gamma="scale").fit(X, (X[:, 0] > 0).astype(int))
    assert all(w in str(e.value) for w in ("auto", "search", "> 0"))
