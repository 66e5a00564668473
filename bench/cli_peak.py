"""Run the rfcli CLI in a fresh interpreter and report its own peak RSS (VmHWM, which exec
resets; ru_maxrss would include the forking parent's memory)."""

from __future__ import annotations

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


def run_cli(*args) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of ``rfcli -q ARGS``; raises SystemExit on failure."""
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-c", _PEAK, "-q", *map(str, args)], capture_output=True, text=True
    )
    secs = time.perf_counter() - t0
    if p.returncode:
        raise SystemExit(f"rfcli {' '.join(map(str, args))} failed:\n{p.stderr}")
    return secs, int(p.stderr.rsplit("PEAK_RSS_KIB", 1)[1].split()[0]) / 1024
