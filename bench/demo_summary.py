"""The last step of `make demo`: the 2-bit store against float32 features of the same m,
in size on disk and test accuracy, from the JSON of `rfcli inspect --json` and
`rfcli evaluate --json` (files in the demo directory)."""

import json
import sys


def main(demo: str) -> None:
    def load(name):
        with open(f"{demo}/{name}") as f:
            return json.load(f)

    s, f = load("train.json"), load("train.f32.json")
    a, b = load("eval.json"), load("eval.f32.json")
    q, m = s["bytes_on_disk"], f["bytes_on_disk"]
    print(f"m = {s['features']:,} features, {s['rows']:,} training rows, {a['rows']:,} test rows")
    print(f"  store size     2-bit {q / 1e6:6.1f} MB   float32 {m / 1e6:6.1f} MB   "
          f"({m / q:.1f}x smaller)")  # fmt: skip
    print(f"  test accuracy  2-bit {a['accuracy']:9.4f}   float32 {b['accuracy']:9.4f}   "
          f"({(a['accuracy'] - b['accuracy']) * 100:+.2f} points)")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build/demo")
