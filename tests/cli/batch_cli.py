"""Run many CLI invocations in one process: ``python -m tests.cli.batch_cli JOBS RESULTS``.

JOBS is a JSON list of ``{"args": [...], "env": {...} or null}``; each runs through rfcli's
click entry point (``rfcli.cli.cli.main``, what ``rfcli`` runs) in the current directory
(or the job's ``"cwd"``), with its environment variables set for the run, an empty standard
input (or the file ``"stdin"``), and file descriptors 1 and 2 sent to files, so that
whatever writes to them (click, rich, Python's streams) is captured; a job's ``"stdout"``
names a file that gets what it wrote to fd 1 (tests/docs_server.py runs the docs' shell
examples so).  RESULTS gets a JSON list of
``{"code": exit status, "stderr": text}``.  The error table runs its cases this way, a few
processes for all of them, instead of a Python start per case."""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
import traceback


def _run_one(job: dict) -> dict:
    from rfcli.cli import cli

    env = job.get("env") or {}
    saved_env = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    stdin = job.get("stdin") or os.devnull
    saved_cwd = os.getcwd()
    saved_fds = {fd: os.dup(fd) for fd in (0, 1, 2)}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        null = os.open(stdin, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        saved_stdin = sys.stdin
        sys.stdin = io.TextIOWrapper(open(stdin, "rb"))  # noqa: SIM115
        code = 0
        try:
            os.chdir(job.get("cwd") or saved_cwd)
            cli.main(args=list(job["args"]), prog_name="rfcli")
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:  # an internal error: what the real process would print
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            sys.stdin.close()
            sys.stdin = saved_stdin
            os.chdir(saved_cwd)
            for fd, saved in saved_fds.items():
                os.dup2(saved, fd)
                os.close(saved)
            for k, v in saved_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        if job.get("stdout"):
            out.seek(0)
            with open(job["stdout"], "wb") as f:
                f.write(out.read())
        err.seek(0)
        return {"code": code, "stderr": err.read().decode("utf-8", "replace")}


def main(jobs_path: str, results_path: str) -> None:
    with open(jobs_path) as f:
        jobs = json.load(f)
    results = [_run_one(job) for job in jobs]
    with open(results_path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(*sys.argv[1:3])
