"""Model files: one ``.npz`` archive holding JSON metadata (as a unicode array, entry
``__meta__``) and NumPy arrays, read back with ``allow_pickle=False``.  The metadata
embeds the encoder (map, preprocessing, quantizer, with its arrays) and the fingerprint of
the store the model was trained on, so raw data can be encoded exactly the same way."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import numpy as np

from rfcli._version import __version__
from rfcli.encoder import Encoder
from rfcli.errors import ConfigError, InputError, OutputError
from rfcli.io import location
from rfcli.io.atomic import atomic_write
from rfcli.io.kinds import kind_of, not_a_model
from rfcli.learn.linear import LinearModel
from rfcli.registry import require

MODEL_FORMAT = "rfcli-model"
MODEL_FORMAT_VERSION = 1


def save_model(
    path: str,
    model: LinearModel,
    encoder: Encoder,
    extra: dict[str, Any] | None = None,
    overwrite=False,
):
    """Write a model file: the model's and the encoder's JSON configs and arrays in one
    ``.npz`` archive (no pickle), with the encoder's fingerprint, so that ``rfcli
    predict`` encodes raw data exactly as the model's store was encoded.  Written
    atomically (a local file appears whole or not at all).

    Parameters
    ----------
    path : str
        The model file (a path or an object-store URL).
    model : LinearModel
        The fitted model (svm, krr or gpr).
    encoder : Encoder
        The encoder its features come from.
    extra : dict or None, default=None
        More JSON metadata (``trained_on``, the estimator's parameters), merged into the
        file's metadata.
    overwrite : bool, default=False
        Replace an existing file.

    Raises
    ------
    OutputError
        ``path`` exists (without ``overwrite``).

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> import rfcli
    >>> X = np.random.default_rng(0).normal(size=(200, 3))
    >>> res = rfcli.train(X, None, rfcli.TrainSettings(model="krr"),
    ...                   encode=rfcli.EncodeSettings(n_features=64), y=X.sum(axis=1))
    >>> path = os.path.join(tempfile.mkdtemp(), "krr.npz")
    >>> rfcli.save_model(path, res.model, res.encoder)
    >>> model, encoder, meta = rfcli.load_model(path)
    >>> model.kind, encoder.fingerprint() == res.encoder.fingerprint()
    ('krr', True)
    """
    path = location.normalize(path)
    if location.exists(path) and not overwrite:
        raise OutputError(f"{path}: already exists (set overwrite to replace it)")
    mcfg, marrays = model.to_state()
    ecfg, earrays = encoder.to_state()
    meta = {
        "format": MODEL_FORMAT,
        "format_version": MODEL_FORMAT_VERSION,
        "rfcli_version": __version__,
        "model": mcfg,
        "encoder": ecfg,
        "fingerprint": encoder.fingerprint(),
        **(extra or {}),
    }
    arrays = {f"model/{k}": v for k, v in marrays.items()}
    arrays.update({f"encoder/{k}": v for k, v in earrays.items()})
    arrays["__meta__"] = np.array(json.dumps(meta))
    if location.is_url(path):  # one object, written whole
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        location.write_bytes(path, buf.getvalue())
    else:
        atomic_write(path, lambda f: np.savez(f, **arrays))


def load_model(path: str) -> tuple[LinearModel, Encoder, dict[str, Any]]:
    """Read a model file written by :func:`save_model` (``rfcli train``,
    ``TrainResult.save``, the estimators' ``save``), checking its format version, the
    model's width against the encoder's and the encoder against its recorded fingerprint.

    Parameters
    ----------
    path : str
        The model file (a path or an object-store URL).

    Returns
    -------
    model : LinearModel
        The fitted model.
    encoder : Encoder
        The encoder of its features.
    meta : dict
        The file's JSON metadata (``trained_on``, the training report under ``model``,
        the rfcli version that wrote it).

    Raises
    ------
    InputError
        No such file (or a store or data file given instead of a model).
    ConfigError
        Not an rfcli model file, another format version, or an inconsistent file.
    """
    path = location.normalize(path)
    if not location.isfile(path):
        raise InputError(not_a_model(path) or f"{path}: no such model file")
    src = io.BytesIO(location.read_bytes(path)) if location.is_url(path) else path
    if not zipfile.is_zipfile(src):
        known = not location.is_url(path) and kind_of(path) in ("parquet", "npy", "json")
        raise ConfigError(
            not_a_model(path) if known else f"{path}: not an rfcli model file (not a .npz archive)"
        )
    try:
        with np.load(src, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as e:
        raise ConfigError(f"{path}: not an rfcli model file ({e})") from None
    try:
        meta = json.loads(str(arrays.pop("__meta__")))
    except (KeyError, json.JSONDecodeError):
        raise ConfigError(f"{path}: not an rfcli model file (no metadata)") from None
    if not isinstance(meta, dict) or meta.get("format") != MODEL_FORMAT:
        raise ConfigError(f"{path}: not an rfcli model file")
    if meta.get("format_version") != MODEL_FORMAT_VERSION:
        raise ConfigError(
            f"{path}: model format version {meta.get('format_version')!r} is not supported"
        )

    def sub(prefix):
        return {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}

    try:
        encoder = Encoder.from_state(require(meta, "encoder", dict, path), sub("encoder/"))
        model = LinearModel.from_state(require(meta, "model", dict, path), sub("model/"))
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None
    if model.n_features != encoder.n_features:
        raise ConfigError(
            f"{path}: model has {model.n_features} weights for {encoder.n_features} features"
        )
    if meta.get("fingerprint") != encoder.fingerprint():
        raise ConfigError(
            f"{path}: the embedded encoder does not match its recorded fingerprint (corrupt file?)"
        )
    return model, encoder, meta
