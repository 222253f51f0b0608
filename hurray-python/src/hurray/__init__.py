"""Hurray: tensors as a stream or an HRRYFILE, over the same C ABI (``libhurray``) as the
Java library, so both sides speak the same bytes.

    tensor = hurray.from_numpy(np.arange(64, dtype=np.uint8))
    writer = hurray.StreamWriter()          # nowhere to put it: the writer keeps the bytes
    writer.write(tensor)
    writer.finish()
    for received in hurray.StreamReader(writer.getvalue()):
        print(received.shape, np.from_dlpack(received))

Everything about the format (encoding, validation, quantization, densifying, DLPack structs)
is the library's; this package binds it with ``ctypes`` and does the I/O. See README.md.
"""

from ._dtypes import DType, numpy_dtype
from ._dtypes import lookup as dtype
from ._file import File, FileWriter
from ._lib import ABI_VERSION, HurrayError, status_name

HurrayError.__module__ = __name__  # shown (and pickled) as hurray.HurrayError, where users import it
from ._stream import StreamReader, StreamWriter
from ._tensor import (
    DEFAULT_MAX_DENSE_BYTES,
    Composite,
    Membership,
    PagingInfo,
    QuantizationInfo,
    SparseInfo,
    Tensor,
    coo,
    csr,
    from_buffer,
    from_dlpack,
    from_numpy,
    quantize,
)

__version__ = "0.1.0"

__all__ = [
    "ABI_VERSION",
    "Composite",
    "DEFAULT_MAX_DENSE_BYTES",
    "DType",
    "File",
    "FileWriter",
    "HurrayError",
    "Membership",
    "PagingInfo",
    "QuantizationInfo",
    "SparseInfo",
    "StreamReader",
    "StreamWriter",
    "Tensor",
    "coo",
    "csr",
    "dtype",
    "from_buffer",
    "from_dlpack",
    "from_numpy",
    "numpy_dtype",
    "quantize",
    "status_name",
]
