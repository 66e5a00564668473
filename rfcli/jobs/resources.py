"""The resources every job takes, as keywords: where it runs and with how much.

The jobs (:func:`rfcli.encode`, :func:`rfcli.fit_encoder`, :func:`rfcli.train`,
:func:`rfcli.train_gpr`, :func:`rfcli.predict`, :func:`rfcli.evaluate`,
:func:`rfcli.decode`, :func:`rfcli.sweep`, and ``rfcli fit-quantizer``'s
:func:`rfcli.jobs.fit_quantizer.fit_quantizer_on_input`) share one calling convention
(docs/python.md; decode and the quantizer fit run here, with ``threads``, and decode
``memory``, only):

* the data first (input, output: positional), then the modelling choices as a settings
  object (``EncodeSettings``, ``TrainSettings``, ``GPRSettings``; how the input is read:
  ``ReadSettings``), which never change with the machine;
* then, keyword-only, what the job does with its output (``overwrite``, ``resume``) and the
  resources: ``threads`` (the local engine's worker threads, each computing with one BLAS
  thread; results never depend on it), ``memory`` (a budget in bytes for the working
  arrays; ``None``: the machine's physical memory), ``engine`` (``"local"`` or
  ``"dask"``) and ``dask`` (a :class:`~rfcli.engines.dask.DaskSettings`), and
  ``progress``.

:class:`Resources` checks them once and opens the engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rfcli.errors import ParameterTypeError, UsageError, check_int
from rfcli.progress import Progress


@dataclass(frozen=True)
class Resources:
    """A job's resources (module docstring), checked.

    Parameters
    ----------
    threads : int or None
        Worker threads of the local engine (``None``: every available core, at most 8).
    memory : int or None
        Budget in bytes for the job's working arrays (``None``: physical memory).
    engine : {"local", "dask"}
        Where the job runs.
    dask : DaskSettings or None
        The cluster of ``engine="dask"`` (``None``: a local cluster).
    """

    threads: int | None = None
    memory: int | None = None
    engine: str = "local"
    dask: Any = None

    def __post_init__(self):
        from rfcli.engines import ENGINES

        if self.threads is not None:
            check_int(self.threads, "threads", 1)
        if self.memory is not None:
            check_int(self.memory, "memory", 1)
        if not isinstance(self.engine, str):
            raise ParameterTypeError(f"engine must be 'local' or 'dask', got {self.engine!r}")
        if self.engine not in ENGINES:
            raise UsageError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.dask is not None:
            from rfcli.constraints import settings_check
            from rfcli.engines.dask import DaskSettings

            settings_check(self.dask, DaskSettings, "dask")

    @property
    def budget(self) -> int:
        """``memory``, else the machine's physical memory."""
        from rfcli.memory import physical_memory

        return self.memory if self.memory is not None else physical_memory()

    def batch_rows(self, encoder) -> int | None:
        """Rows per batch of a streaming pass of ``encoder``'s features under ``memory``
        (:func:`rfcli.memory.batch_rows`); None without a budget (the data's own)."""
        if self.memory is None:
            return None
        from rfcli.memory import batch_rows
        from rfcli.threads import default_threads

        threads = self.threads or (default_threads() if self.engine == "local" else 1)
        return batch_rows(self.memory, len(encoder.columns), encoder.n_features, threads)

    def open(self, progress: Progress | None = None):
        """The engine (a context manager: it closes a cluster it started)."""
        from rfcli.engines import open_engine

        eng = open_engine(self.engine, self.dask, progress, self.threads)
        eng.memory = self.memory
        return eng
