"""rfcli: large-scale kernel learning with compressed random features.

>>> import rfcli
>>> q = rfcli.make_quantizer("lm", 1)
>>> [round(v, 4) for v in q.levels]
[-0.6366, 0.6366]
"""

from rfcli._version import __version__
from rfcli.encoder import EncodedChunk, Encoder
from rfcli.errors import RfcliError
from rfcli.io.store import FeatureStore, StoreWriter
from rfcli.maps import KERNELS, ArcCosineMap, FeatureMap, FourierMap, Preprocessor, make_map
from rfcli.pipeline import EncodeSettings, ReadSettings, decode, encode
from rfcli.quantize import Quantizer, make_quantizer, pack_codes, unpack_codes

__all__ = [
    "KERNELS",
    "ArcCosineMap",
    "EncodeSettings",
    "EncodedChunk",
    "Encoder",
    "FeatureMap",
    "FeatureStore",
    "FourierMap",
    "Preprocessor",
    "Quantizer",
    "ReadSettings",
    "RfcliError",
    "StoreWriter",
    "__version__",
    "decode",
    "encode",
    "make_map",
    "make_quantizer",
    "pack_codes",
    "unpack_codes",
]
