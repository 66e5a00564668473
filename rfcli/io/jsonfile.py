"""Small JSON files (quantizers, model metadata): atomic writes, strict reads (no pickle,
no eval: plain JSON parsed into validated objects)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from rfcli.errors import ConfigError, InputError, OutputError
from rfcli.io.atomic import atomic_write


def write_json(path: str, obj: Any, overwrite: bool = False) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (temp sibling + rename); ``-`` is stdout."""
    text = json.dumps(obj, indent=2, sort_keys=False) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    if os.path.exists(path) and not overwrite:
        raise OutputError(f"{path}: already exists (set overwrite to replace it)")
    atomic_write(path, lambda f: f.write(text), binary=False)


def read_json(path: str, what: str = "JSON file") -> Any:
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: malformed {what} ({e})") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read {what} ({e.strerror})") from None
