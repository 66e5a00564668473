"""Run the rfcli CLI in a fresh interpreter and report its own peak RSS (VmHWM, which exec
resets; ru_maxrss would include the forking parent's memory)."""

from __future__ import annotations

import compileall
import importlib.util
import subprocess
import sys
import time

# an exit handler: rfcli's main() ends the process after the exit handlers have run
_PEAK = """
import atexit, sys
def peak():
    hwm = [ln for ln in open("/proc/self/status") if ln.startswith("VmHWM")][0].split()[1]
    sys.stderr.write("PEAK_RSS_KIB %s\\n" % hwm)
atexit.register(peak)
sys.argv = ["rfcli"] + sys.argv[1:]
from rfcli.cli import main
main()
"""


_compiled = False


def compile_rfcli() -> None:
    """rfcli's bytecode, as an installed package has it, once per benchmark process, before
    any timed rfcli process (:func:`run_cli`, and the benchmarks that start rfcli otherwise):
    pip compiles a package at install, but an editable install leaves it to the first
    imports, which write none where PYTHONDONTWRITEBYTECODE is set (as on the machines here),
    so a module edited since ``make install`` was compiled again at every start of the CLI,
    which no user's installation pays (the 11 GP modules one session edited: 31 ms; all 124
    of rfcli's modules: 215 ms)."""
    global _compiled
    if not _compiled:
        spec = importlib.util.find_spec("rfcli")
        for where in spec.submodule_search_locations:
            compileall.compile_dir(where, quiet=1)
        _compiled = True


def run_cli(*args) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of ``rfcli -q ARGS``, its bytecode compiled first
    (:func:`compile_rfcli`); raises SystemExit on failure."""
    compile_rfcli()
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-c", _PEAK, "-q", *map(str, args)], capture_output=True, text=True
    )
    secs = time.perf_counter() - t0
    if p.returncode:
        raise SystemExit(f"rfcli {' '.join(map(str, args))} failed:\n{p.stderr}")
    return secs, int(p.stderr.rsplit("PEAK_RSS_KIB", 1)[1].split()[0]) / 1024
