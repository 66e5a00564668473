"""Every example in README.md and docs/*.md runs as written.

The fenced ```` ```sh ```` and ```` ```python ```` blocks of each document run in order in a
fresh directory, as a new user runs them from a clone: bash for the shell blocks (each its
own ``bash -e -o pipefail``), one Python namespace for all the document's Python blocks.
The directory has what a clone has that the examples use: ``sample_data/`` (the
repository's files, each cut to its first rows so that the whole run takes seconds: the
examples' commands and file names are checked, not their accuracy) and ``.venv`` (this
interpreter's environment).  ``rfcli`` in the shell blocks is a shell function that runs
the command through rfcli's entry point in one warm process (tests/docs_server.py), not a
Python start per command.

A block that cannot run here (an install, a cluster, the Makefile's long targets) is
preceded by ``<!-- docs-test: skip (why) -->``; a Python block whose every line shows an
error, by ``<!-- docs-test: each line raises -->``: each line must raise, and where its
comment says ``# Class: message`` the error must be that class (a builtin's subclass) with
that message (``...`` standing for any text).  Blocks in other languages (``json``,
unmarked output) are shown output, not run.  Outputs of the examples are ignored by git
(.gitignore)."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN = {"sh", "python"}
MARK = re.compile(r"^<!-- docs-test: (?:skip \((?P<why>[^)]+)\)|(?P<raises>each line raises)) -->$")
EXPECTED = re.compile(r"#\s*(?P<cls>[A-Z]\w+): (?P<message>.+)$")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")
# rows kept of each sample_data file (letter: 26 classes, 5-fold cross-validation)
SAMPLE_ROWS = 200


def blocks(path: pathlib.Path) -> list[tuple[int, str, str, str | None]]:
    """(line of the fence, language, code, mark) of each fenced block; the mark: the reason
    to skip it, ``"raises"``, or None."""
    out, lines, i = [], path.read_text().splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i + 1, m["lang"]
        mark = MARK.match(lines[i - 1]) if i > 0 else None
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        assert j < len(lines), f"{path.name}:{start}: the block is not closed"
        how = mark and (mark["why"] or "raises")
        out.append((start, lang, "\n".join(lines[i + 1 : j]) + "\n", how))
        i = j + 1
    return out


def test_every_runnable_block_runs_or_says_why_not():
    """Blocks are runnable languages or output; a mark sits right above a block."""
    for path in DOCUMENTS:
        lines = path.read_text().splitlines()
        for n, line in enumerate(lines):
            if line.startswith("<!-- docs-test"):
                assert MARK.match(line), f"{path.name}:{n + 1}: not a docs-test mark: {line}"
                assert n + 1 < len(lines) and FENCE.match(lines[n + 1]), (
                    f"{path.name}:{n + 1}: a docs-test mark must sit right above a fenced block"
                )
        for start, lang, _, how in blocks(path):
            assert lang in RUN | {"", "json", "text"}, f"{path.name}:{start}: language {lang!r}"
            assert how is None or lang in RUN, f"{path.name}:{start}: a mark on output"
            assert how != "raises" or lang == "python", f"{path.name}:{start}: raises in {lang}"


def _small_clone(tmp: pathlib.Path) -> None:
    (tmp / "sample_data").mkdir()
    for src in sorted((ROOT / "sample_data").glob("*.parquet")):
        table = pq.read_table(src)
        pq.write_table(table.slice(0, SAMPLE_ROWS), tmp / "sample_data" / src.name)
    (tmp / ".venv").symlink_to(sys.prefix, target_is_directory=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The warm process that runs the shell examples' rfcli commands."""
    directory = tmp_path_factory.mktemp("docs-server")
    os.mkfifo(directory / "requests")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RFCLI_")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen([sys.executable, "-m", "tests.docs_server", str(directory)],
                            cwd=ROOT, env=env)  # fmt: skip
    yield directory
    with open(directory / "requests", "w") as f:
        f.write("quit\n")
    proc.wait(timeout=30)


def _run_shell(code: str, cwd: pathlib.Path, server: pathlib.Path, where: str) -> None:
    from tests.docs_server import SHELL_FUNCTION

    env = {k: v for k, v in os.environ.items() if not k.startswith(("RFCLI_", "VIRTUAL_ENV"))}
    env["PATH"] = f"{pathlib.Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["RFDOC"] = str(server)
    script = f"{SHELL_FUNCTION}\nset -e -o pipefail\n{code}"
    proc = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, (
        f"{where}: the shell block failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    )


def _each_line_raises(code: str, namespace: dict, where: str) -> None:
    import builtins

    for k, line in enumerate(code.splitlines()):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        expected = EXPECTED.search(line)
        try:
            exec(compile(line, f"{where}+{k + 1}", "exec"), namespace)  # noqa: S102
        except Exception as e:  # noqa: BLE001
            if expected:
                cls = getattr(builtins, expected["cls"])
                assert isinstance(e, cls), f"{where}+{k + 1}: {type(e).__name__}, not {cls}"
                pattern = ".*".join(map(re.escape, expected["message"].split("...")))
                assert re.fullmatch(pattern, str(e)), f"{where}+{k + 1}: the message is {e}"
        else:
            raise AssertionError(f"{where}+{k + 1}: {line.strip()} raised nothing")


RUNNABLE = [
    p
    for p in DOCUMENTS
    if any(lang in RUN and how in (None, "raises") for _, lang, _, how in blocks(p))
]


@pytest.mark.parametrize("path", RUNNABLE, ids=[p.name for p in RUNNABLE])
def test_examples_run(path, server, tmp_path, monkeypatch):
    _small_clone(tmp_path)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    times = []
    for start, lang, code, how in blocks(path):
        if how not in (None, "raises") or lang not in RUN:
            continue
        where = f"{path.relative_to(ROOT)}:{start}"
        t0 = time.perf_counter()
        if how == "raises":
            _each_line_raises(code, namespace, where)
        elif lang == "sh":
            _run_shell(code, tmp_path, server, where)
        else:
            exec(compile(code, where, "exec"), namespace)  # noqa: S102
        times.append((time.perf_counter() - t0, where))
    print(" ".join(f"{w}: {t:.1f}s" for t, w in times))
    _outputs_are_ignored(tmp_path)


def _outputs_are_ignored(tmp: pathlib.Path) -> None:
    """What the examples wrote, where a clone's root would hold it, is ignored by git."""
    if not (ROOT / ".git").exists():
        return
    inputs = {f"sample_data/{p.name}" for p in (ROOT / "sample_data").iterdir()}
    written = [p.relative_to(tmp).as_posix() + ("/" if p.is_dir() else "")
               for p in [*tmp.iterdir(), *(tmp / "sample_data").iterdir()]
               if p.name != "sample_data" and p.name != ".venv"
               and p.relative_to(tmp).as_posix() not in inputs]  # fmt: skip
    if not written:
        return
    proc = subprocess.run(["git", "check-ignore", "--no-index", "--verbose", "--non-matching",
                           *written], cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    kept = [line.split("\t", 1)[1] for line in proc.stdout.splitlines() if line.startswith("::")]
    assert not kept, f"outputs of the examples that git does not ignore (.gitignore): {kept}"
