"""Run the docs' ``rfcli`` commands in one warm process: ``python -m tests.docs_server DIR``.

tests/test_docs_examples.py runs the shell examples of README.md and docs/*.md in bash as
written, with ``rfcli`` defined as the shell function :data:`SHELL_FUNCTION`, which hands
each call to this process instead of starting Python (about a second of imports per
command): it writes the call's arguments (NUL-separated), its ``RFCLI_*`` environment and,
when it is piped, its standard input to files named by a fresh id in DIR, writes the id as
one line to the FIFO ``DIR/requests``, and waits on the FIFO ``DIR/<id>.rc`` for the exit
status.  This process runs the call through rfcli's click entry point in the caller's
directory (tests/cli/batch_cli.py's ``_run_one``: its environment, fds 0, 1 and 2 set for
the run), writes fd 1 to ``<id>.out`` and fd 2 to ``<id>.err`` (which the function then
prints to its own stdout and stderr) and the exit status to ``<id>.rc``.  A line ``quit``
ends it."""

from __future__ import annotations

import os
import sys

from tests.cli.batch_cli import _run_one

# the shell side; RFDOC is DIR; a pipe's reader that stops early (`| head`) is no failure
SHELL_FUNCTION = r"""
rfcli() {
    local id="$RFDOC/c$BASHPID.$RANDOM$RANDOM"
    printf '%s\0' "$@" > "$id.args"
    env -0 | { grep -z '^RFCLI_' || true; } > "$id.env"
    if [ -p /dev/stdin ] || [ -f /dev/stdin ]; then cat > "$id.in"; fi
    echo "$PWD" > "$id.cwd"
    mkfifo "$id.rc"
    echo "$id" > "$RFDOC/requests"
    local rc
    read -r rc < "$id.rc"
    cat "$id.out" 2>/dev/null || true
    cat "$id.err" >&2
    rm -f "$id".*
    return "$rc"
}
"""


def _split0(path: str) -> list[str]:
    with open(path, "rb") as f:
        data = f.read().decode()
    return data.split("\0")[:-1] if data else []


def serve(directory: str) -> None:
    requests = os.path.join(directory, "requests")
    if not os.path.exists(requests):
        os.mkfifo(requests)
    # read and write: the FIFO keeps a writer, so a caller's close is no end of file
    with open(os.open(requests, os.O_RDWR)) as lines:
        for line in lines:
            job_id = line.strip()
            if job_id == "quit":
                return
            env = dict(item.split("=", 1) for item in _split0(job_id + ".env"))
            with open(job_id + ".cwd") as f:
                cwd = f.read().rstrip("\n")
            stdin = job_id + ".in" if os.path.exists(job_id + ".in") else None
            result = _run_one(
                {"args": _split0(job_id + ".args"), "env": env, "stdin": stdin,
                 "cwd": cwd, "stdout": job_id + ".out"}
            )  # fmt: skip
            with open(job_id + ".err", "w") as f:
                f.write(result["stderr"])
            with open(job_id + ".rc", "w") as f:
                f.write(f"{result['code']}\n")


if __name__ == "__main__":
    serve(sys.argv[1])
