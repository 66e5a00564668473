"""rfcli: large-scale kernel learning with compressed random features.

The jobs (each also a command of the ``rfcli`` CLI) and their settings::

    import rfcli
    rfcli.encode("train.parquet", "train.rff.zarr",
                 rfcli.EncodeSettings(n_features=1024, bits=2), rfcli.ReadSettings(label="y"))
    res = rfcli.train("train.rff.zarr", "model.npz", rfcli.TrainSettings(model="krr"))
    metrics = rfcli.evaluate("model.npz", "test.parquet")

Wherever a job takes an input path it also takes in-memory data: a 2-D NumPy array, a
pandas DataFrame or a pyarrow Table (``rfcli.encode(df, "train.rff.zarr", ...)``,
``rfcli.predict("model.npz", df)`` returns the predictions); ``rfcli.train`` also trains
on raw data, encoded on the fly with ``encode=rfcli.EncodeSettings(...)`` (docs/python.md).

Names are imported when first used, so ``import rfcli`` stays cheap.

>>> import rfcli
>>> q = rfcli.make_quantizer("lm", 1)
>>> [round(float(v), 4) for v in q.levels]
[-0.6366, 0.6366]
"""

from __future__ import annotations

from importlib import import_module

from rfcli._version import __version__ as __version__

#: public name -> module that defines it
_EXPORTS = {
    # jobs and their settings and results
    "encode": "rfcli.jobs.encode",
    "EncodeResult": "rfcli.jobs.encode",
    "EncodeSettings": "rfcli.jobs.encode",
    "fit_encoder": "rfcli.jobs.encode",
    "ReadSettings": "rfcli.io.readers",
    "decode": "rfcli.jobs.decode",
    "train": "rfcli.jobs.train",
    "TrainSettings": "rfcli.jobs.train",
    "TrainResult": "rfcli.jobs.result",
    "train_gpr": "rfcli.jobs.train_gpr",
    "GPRSettings": "rfcli.jobs.train_gpr",
    "predict": "rfcli.jobs.predict",
    "evaluate": "rfcli.jobs.evaluate",
    "sweep": "rfcli.jobs.sweep",
    "load_model": "rfcli.learn.model_file",
    "save_model": "rfcli.learn.model_file",
    "DaskSettings": "rfcli.engines.dask",
    # building blocks
    "EncodedChunk": "rfcli.encoder",
    "Encoder": "rfcli.encoder",
    "FeatureStore": "rfcli.io.store",
    "StoreWriter": "rfcli.io.store",
    "KERNELS": "rfcli.maps",
    "ArcCosineMap": "rfcli.maps",
    "FeatureMap": "rfcli.maps",
    "FourierMap": "rfcli.maps",
    "Preprocessor": "rfcli.maps",
    "make_map": "rfcli.maps",
    "Quantizer": "rfcli.quantize",
    "make_quantizer": "rfcli.quantize",
    "pack_codes": "rfcli.quantize",
    "unpack_codes": "rfcli.quantize",
    "RfcliError": "rfcli.errors",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rfcli' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
