"""Kind registries: every stateful component (map, quantizer, model) round-trips through
a JSON config with a ``kind`` field; a registry maps kinds to classes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from rfcli.errors import ConfigError

T = TypeVar("T")


class Registry:
    """Kinds -> classes.  A kind may be declared :meth:`lazy`: its module is imported the
    first time the kind is asked for, so a command imports only the components it uses."""

    def __init__(self, what: str):
        self.what = what
        self._kinds: dict[str, type] = {}
        self._lazy: dict[str, str] = {}

    def lazy(self, module: str, *kinds: str) -> None:
        """``kinds`` are registered by importing ``module``."""
        for k in kinds:
            self._lazy[k] = module

    def register(self, *kinds: str) -> Callable[[type[T]], type[T]]:
        def deco(cls: type[T]) -> type[T]:
            for k in kinds:
                self._kinds[k] = cls
            return cls

        return deco

    def get(self, kind: Any) -> type:
        if isinstance(kind, str) and kind not in self._kinds and kind in self._lazy:
            import importlib

            importlib.import_module(self._lazy[kind])
        try:
            return self._kinds[kind]
        except (KeyError, TypeError):
            raise ConfigError(
                f"unknown {self.what} kind {kind!r} (known: {', '.join(self.kinds())})"
            ) from None

    def kinds(self) -> list[str]:
        return sorted({*self._kinds, *self._lazy})


def require(config: dict, key: str, types: type | tuple[type, ...], what: str) -> Any:
    """Fetch ``config[key]`` and check its type, with a clear ConfigError."""
    if not isinstance(config, dict):
        raise ConfigError(f"{what}: expected a JSON object, got {type(config).__name__}")
    if key not in config:
        raise ConfigError(f"{what}: missing key {key!r}")
    val = config[key]
    if not isinstance(val, types) or isinstance(val, bool) and bool not in _as_tuple(types):
        raise ConfigError(f"{what}: key {key!r} has type {type(val).__name__}")
    return val


def _as_tuple(t):
    return t if isinstance(t, tuple) else (t,)
