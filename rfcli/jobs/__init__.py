"""The jobs: what each command does, as library functions (one module each).

* :mod:`rfcli.jobs.encode` -- ``encode`` (input -> store; resuming an interrupted one:
  :mod:`rfcli.jobs.encode_resume`), :mod:`rfcli.jobs.decode`,
  :mod:`rfcli.jobs.fit_quantizer` (empirical quantizers);
* :mod:`rfcli.jobs.train` (svm, krr), :mod:`rfcli.jobs.train_gpr` (GP regression),
  :mod:`rfcli.jobs.predict`, :mod:`rfcli.jobs.evaluate`;
* :mod:`rfcli.jobs.sweep` (accuracy against bits), :mod:`rfcli.jobs.kernel_error`
  (kernel-approximation report), :mod:`rfcli.jobs.inspect` (store summaries).

Every job takes paths (or fsspec URLs), settings dataclasses, and the keywords ``engine``
(``"local"`` or ``"dask"``), ``dask`` (its settings) and ``progress``.
"""
