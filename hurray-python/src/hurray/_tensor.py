"""Tensors: a descriptor plus the buffers it describes, over memory the library or numpy owns."""

from __future__ import annotations

import ctypes
import threading
from ctypes import byref, c_size_t, c_uint64, c_void_p
from typing import Any, Iterator, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np

from . import _dtypes
from ._dtypes import DType
from ._lib import (
    BlockQuant,
    BufferSpec,
    CompositeMembership,
    DescriptorFields,
    DescriptorSpec,
    ERR_LIMIT_EXCEEDED,
    HurrayError,
    IoSlice,
    MetadataView,
    Paging,
    Sparse,
    bytes_at,
    check,
    error,
    lib,
)

# The largest array densify() and dequantize() make of a tensor whose stored bytes do not
# bound its dense form (sparse, paged; strided for densify) unless their max_bytes says
# otherwise, as Java's Tensor.DEFAULT_MAX_DENSE_BYTES: a sparse, paged or zero-strided tensor
# of a few hundred bytes can describe terabytes.
DEFAULT_MAX_DENSE_BYTES = 1 << 30


def _dense_bytes(what: str, dt: DType, shape: Sequence[int], max_bytes: int, capped: bool) -> None:
    """Refuses (``LIMIT_EXCEEDED``), when ``capped``, a result of ``shape`` and ``dt`` over
    ``max_bytes``, before anything is allocated."""
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool):
        raise TypeError(f"max_bytes must be an int, not {type(max_bytes).__name__}")
    if max_bytes < 0:
        raise ValueError(f"max_bytes {max_bytes} < 0")
    if not capped:
        return
    count = 1
    for n in shape:
        count *= n
    need = (count * dt.bits + 7) // 8
    if need > max_bytes:
        raise HurrayError(
            ERR_LIMIT_EXCEEDED,
            f"{what}: the result, {dt.name}{list(shape)}, needs {need} bytes, over the limit of "
            f"{max_bytes} bytes; pass {what}(max_bytes=...) a larger limit if this is intended",
        )


LAYOUTS = ("row-major", "column-major", "strided", "coo", "csr", "csc", "bsr", "paged")
_LAYOUT_CODE = {n: i for i, n in enumerate(LAYOUTS)}
QUANT_KINDS = {
    0: None,
    1: "per-tensor-affine",
    2: "per-channel-affine",
    3: "cast",
    4: "nf4",
    5: "mx",
    6: "nvfp4",
    7: "group-affine",
    8: "gguf-q8_0",
    9: "gguf-q4_0",
}
_KIND_CODE = {v: k for k, v in QUANT_KINDS.items() if v}

MetadataArg = Optional[Mapping[str, Union[str, bytes]]]


class QuantizationInfo(NamedTuple):
    """A tensor's quantization, as its descriptor declares it (docs/spec/descriptor.md).
    ``kind`` is a name from ``QUANT_KINDS``; ``scale``/``bias`` are set for the affine kinds
    1–3, ``block``/``block2``/``scale_type`` for the block kinds 4–9."""

    kind: str
    dequantized_type: DType
    axis: int
    scale: float
    bias: float
    block: int
    block2: int
    scale_type: Optional[DType]


class SparseInfo(NamedTuple):
    """The sparse block of a COO/CSR/CSC/BSR tensor."""

    index_type: DType
    canonical: bool
    block_rows: int
    block_cols: int
    nnz: int


class PagingInfo(NamedTuple):
    """The paging block of a block-paged tensor."""

    index_type: DType
    page_size: int
    block_count: int
    page_count: int


class Membership(NamedTuple):
    """Where a tensor sits in a composite: ``depth`` (0 for a root head), ``index`` in its
    parent, ``member_count`` (≥ 1 for a head, 0 for a member) and a head's member ``roles``."""

    depth: int
    index: int
    member_count: int
    roles: tuple[str, ...]


def _encode_meta(metadata: MetadataArg) -> list[tuple[bytes, bytes]]:
    out = []
    for k, v in (metadata or {}).items():
        out.append((k.encode("utf-8"), v.encode("utf-8") if isinstance(v, str) else bytes(v)))
    return out


def _views(entries: list[tuple[bytes, bytes]]) -> Any:
    arr = (MetadataView * max(len(entries), 1))()
    for i, (k, v) in enumerate(entries):
        arr[i].key = ctypes.cast(ctypes.c_char_p(k), c_void_p)
        arr[i].key_len = len(k)
        arr[i].value = ctypes.cast(ctypes.c_char_p(v), c_void_p)
        arr[i].value_len = len(v)
    return arr


class _Memory:
    """An ``__array_interface__`` over borrowed memory that keeps its owner alive: numpy arrays
    made from it hold it as their base, so the memory lives while any view does."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, ptr: int, size: int, owner: object, readonly: bool):
        self.__array_interface__ = {
            "data": (ptr or 0, readonly),
            "shape": (size,),
            "typestr": "|u1",
            "version": 3,
        }
        self.owner = owner


def raw_view(ptr: int, size: int, owner: object, readonly: bool = False) -> np.ndarray:
    """``size`` bytes at ``ptr`` as a ``uint8`` array that keeps ``owner`` alive."""
    if size == 0:
        return np.empty(0, np.uint8)
    return np.asarray(_Memory(ptr, size, owner, readonly))


# What close() leaves in a tensor's buffer list: a reader that finds it knows a close began
# before it took the owners (see Tensor._pinned).
_CLOSED: tuple = ()


class _Handle:
    """Owns a ``HurrayTensor*``: destroyed when the last holder (the tensor, a numpy view, a
    composite) lets go, so ``Tensor.close`` never frees memory a view still uses."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int):
        self.ptr = ptr

    def __del__(self) -> None:
        p, self.ptr = self.ptr, 0
        if p:
            try:
                lib.hurray_tensor_destroy(byref(c_void_p(p)))
            except Exception:
                pass


class _Descriptor:
    """Owns a ``HurrayDescriptor*`` a tensor made (``from_numpy``, ``quantize``, …): destroyed
    with its tensor. A separate object so that tensors that own none (received ones, or
    ``from_numpy`` ones not yet asked for a descriptor) have no finalizer to run."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int):
        self.ptr = ptr

    def __del__(self) -> None:
        p, self.ptr = self.ptr, 0
        if p:
            try:
                lib.hurray_descriptor_destroy(p)
            except Exception:
                pass


class Tensor:
    """A Hurray tensor: element type, shape, layout, quantization, name and metadata, plus the
    buffers they describe.

    Shapes are tuples of ints, outermost first (``()`` for a scalar). Tensors come from
    ``from_numpy``/``from_dlpack``/``quantize``/``csr``/``coo`` (their memory is the source's:
    nothing is copied, and the source must not be resized while the tensor is used), from a
    ``StreamReader`` or from a ``File`` (memory the library allocated, or the file's mapping).

    Ownership: the memory lives while the tensor or anything made from it lives: numpy views
    from ``numpy()``/``buffers()`` and DLPack capsules keep it, and ``close()`` (or dropping
    the last reference) only releases the tensor's own reference. Threads: a tensor may be
    read from any thread; the library calls it makes are thread-safe on a live tensor. A close
    on another thread meanwhile makes ``numpy()``, ``buffers()``, ``dequantize()``,
    ``densify()`` and DLPack exports either raise ``ValueError`` or finish on memory they keep
    alive until they return, and ``StreamWriter.write`` writes it whole or raises.
    """

    # Fields a tensor fills lazily start as these class-level defaults, so making one (once
    # per received or sent tensor) sets only what it has.
    _type: Optional[DType] = None
    _layout: Optional[str] = None
    _shape: Optional[tuple[int, ...]] = None
    _name: Any = False
    _fields: Optional[DescriptorFields] = None
    _metadata: Optional[dict[str, bytes]] = None
    _tpl = 0
    _nb: Optional[bytes] = None
    _owner: Optional[_Descriptor] = None  # set when the tensor owns its descriptor

    def __init__(self) -> None:
        raise TypeError("make tensors with hurray.from_numpy, from_dlpack, quantize, csr or coo")

    def __copy__(self) -> "Tensor":
        # A second reference to the same tensor: it shares the objects that own the native
        # handle and descriptor, so each is still destroyed once, when the last one goes.
        new = self.__class__.__new__(self.__class__)
        new.__dict__.update(self.__dict__)
        return new

    def __deepcopy__(self, memo: Any) -> "Tensor":
        raise TypeError("a hurray.Tensor owns native memory and cannot be deep-copied: copy its data "
                        "(hurray.from_numpy(numpy.array(t.numpy()), name=t.name)) or share it with copy.copy")

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError("a hurray.Tensor owns native memory and cannot be pickled: send it through a "
                        "StreamWriter or a FileWriter, or pickle its numpy() copy")

    @classmethod
    def _make(
        cls,
        desc: int,
        owns_desc: bool,
        handle: Optional[_Handle],
        bufs: list[tuple[int, int]],
        keep: object = None,
        readonly: bool = False,
    ) -> "Tensor":
        t = object.__new__(cls)
        t._d = desc
        if owns_desc and desc:
            t._owner = _Descriptor(desc)
        t._handle = handle
        t._bufs = bufs
        t._keep = keep
        t._readonly = readonly
        return t

    @classmethod
    def _from_handle(cls, handle: int, keep: object = None, readonly: bool = False) -> "Tensor":
        """Wraps an owned ``HurrayTensor*``."""
        d = c_void_p()
        lst = c_void_p()
        check(lib.hurray_tensor_descriptor(handle, byref(d)))
        check(lib.hurray_tensor_buffers(handle, byref(lst)))
        f = DescriptorFields()
        check(lib.hurray_descriptor_fields(d, byref(f)))
        n = f.buffer_count
        ptrs = (c_void_p * max(n, 1))()
        got = c_size_t()
        check(lib.hurray_buffer_list_data_ptrs(lst, ptrs, n, byref(got)))
        bufs = []
        spec = BufferSpec()
        for i in range(n):
            check(lib.hurray_descriptor_buffer_spec(d, i, byref(spec)))
            bufs.append((ptrs[i] or 0, spec.byte_size))
        t = cls._make(d.value, False, _Handle(handle), bufs, keep, readonly)
        t._fields = f
        return t

    @property
    def _desc(self) -> Optional[int]:
        """The ``HurrayDescriptor*`` (``None`` once closed). A read tensor's, borrowed from its
        handle, is looked up on first use: a stream of tensors whose fields come with the
        decode result never asks."""
        d = self._d
        if d == 0 and self._tpl:
            # A from_numpy tensor of a known shape: its descriptor is made when first needed
            # (a writer encodes it straight from the template and the name).
            out = c_void_p()
            nb = self._nb
            if nb is None:
                check(lib.hurray_descriptor_clone(self._tpl, byref(out)))
            else:
                check(lib.hurray_descriptor_with_name(self._tpl, nb, len(nb), byref(out)))
            d = self._d = out.value
            self._owner = _Descriptor(d)
            self._tpl = 0
        elif d == 0:
            h = self._handle
            if h is None:
                return None
            out = c_void_p()
            check(lib.hurray_tensor_descriptor(h.ptr, byref(out)))
            d = self._d = out.value
        return d

    @_desc.setter
    def _desc(self, value: Optional[int]) -> None:
        self._d = value

    def _f(self) -> DescriptorFields:
        f = self._fields
        if f is None:
            self._alive()
            f = DescriptorFields()
            check(lib.hurray_descriptor_fields(self._desc, byref(f)))
            self._fields = f
        return f

    def _alive(self) -> None:
        if self._desc is None:
            raise ValueError("tensor is closed")

    def _pinned(self) -> tuple[int, Any, tuple]:
        """The descriptor, the buffers and the objects that keep both alive, for a call that
        reads them while another thread may close the tensor. The owners are taken before the
        buffers, and close() empties the buffers (``_CLOSED``) before it drops the owners: so
        either the close began first and this raises ``ValueError``, or the descriptor and
        memory live until the caller drops the returned owners."""
        desc = self._desc
        owner = (self._handle, self._owner, self._keep)
        bufs = self._bufs
        if desc is None or bufs is _CLOSED:
            raise ValueError("tensor is closed")
        return desc, bufs, owner

    # -- descriptor fields -------------------------------------------------------------------

    @property
    def dtype(self) -> DType:
        """The element type (``hurray.DType``; ``str()`` gives its name, e.g. ``"float32"``)."""
        if self._type is None:
            self._type = _dtypes.BY_CODE[self._f().element_type]
        return self._type

    @property
    def shape(self) -> tuple[int, ...]:
        """The logical shape, outermost first."""
        if self._shape is None:
            f = self._f()
            self._shape = tuple(f.dims[i] for i in range(f.rank))
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """The element count."""
        return int(self._f().element_count)

    @property
    def layout(self) -> str:
        """``"row-major"``, ``"column-major"``, ``"strided"``, ``"coo"``, ``"csr"``, ``"csc"``,
        ``"bsr"`` or ``"paged"``."""
        if self._layout is None:
            self._layout = LAYOUTS[self._f().layout]
        return self._layout

    @property
    def strides(self) -> Optional[tuple[int, ...]]:
        """Strides in elements for a strided layout, else ``None``."""
        f = self._f()
        if f.layout != 2:
            return None
        return tuple(f.strides[i] for i in range(f.rank))

    @property
    def byte_offset(self) -> int:
        return int(self._f().byte_offset)

    @property
    def name(self) -> Optional[str]:
        """The name, or ``None``."""
        if self._name is False and self._tpl:
            self._name = None if self._nb is None else self._nb.decode("utf-8")
        if self._name is False:
            f = self._f()
            self._name = bytes_at(f.name, f.name_len).decode("utf-8") if f.name else None
        return self._name  # type: ignore[return-value]

    @property
    def metadata(self) -> dict[str, bytes]:
        """The descriptor's key/value metadata (values are bytes; a copy)."""
        if self._metadata is None:
            self._alive()
            out = {}
            k, v = c_void_p(), c_void_p()
            kl, vl = c_size_t(), c_size_t()
            for i in range(self._f().metadata_count):
                check(lib.hurray_descriptor_metadata_get(self._desc, i, byref(k), byref(kl), byref(v), byref(vl)))
                out[bytes_at(k.value, kl.value).decode("utf-8")] = bytes_at(v.value, vl.value)
            self._metadata = out
        return dict(self._metadata)

    @property
    def quantization(self) -> Optional[QuantizationInfo]:
        """The quantization block, or ``None``."""
        q = self._f().quantization
        if q.kind == 0:
            return None
        b = BlockQuant()
        check(lib.hurray_descriptor_block_quant(self._desc, byref(b)))
        return QuantizationInfo(
            QUANT_KINDS.get(q.kind, str(q.kind)),
            _dtypes.BY_CODE[q.dequantized_type],
            q.axis,
            q.scale,
            q.bias,
            b.block,
            b.block2,
            _dtypes.BY_CODE[b.scale_type] if b.kind else None,
        )

    @property
    def sparse(self) -> Optional[SparseInfo]:
        """The sparse block (COO/CSR/CSC/BSR), or ``None``."""
        if self._f().layout not in (3, 4, 5, 6):
            return None
        s = Sparse()
        check(lib.hurray_descriptor_sparse(self._desc, byref(s)))
        return SparseInfo(_dtypes.BY_CODE[s.index_type], bool(s.canonical), s.block_rows, s.block_cols, s.nnz)

    @property
    def paging(self) -> Optional[PagingInfo]:
        """The paging block of a block-paged tensor, or ``None``."""
        if self._f().layout != 7:
            return None
        p = Paging()
        check(lib.hurray_descriptor_paging(self._desc, byref(p)))
        return PagingInfo(_dtypes.BY_CODE[p.index_type], p.page_size, p.block_count, p.page_count)

    @property
    def composite(self) -> Optional[Membership]:
        """Composite membership (a head or a member), or ``None`` outside composites."""
        self._alive()
        c = CompositeMembership()
        check(lib.hurray_descriptor_composite(self._desc, byref(c)))
        if not c.present:
            return None
        roles = []
        p, n = c_void_p(), c_size_t()
        for i in range(c.member_count):
            check(lib.hurray_descriptor_composite_role(self._desc, i, byref(p), byref(n)))
            roles.append(bytes_at(p.value, n.value).decode("utf-8"))
        return Membership(c.depth, c.index, c.member_count, tuple(roles))

    @property
    def nbytes(self) -> int:
        """Bytes in all buffers together."""
        return sum(n for _, n in self._bufs)

    # -- data ----------------------------------------------------------------------------------

    def buffers(self) -> list[np.ndarray]:
        """Every buffer of the buffer table as a zero-copy ``uint8`` array, in table order
        (values, indices, scales, … as docs/spec/descriptor.md orders them)."""
        _, bufs, owner = self._pinned()
        return [raw_view(p, n, owner, self._readonly) for p, n in bufs]

    def numpy(self) -> np.ndarray:
        """A zero-copy numpy view of a dense or strided tensor, shaped and strided as declared,
        in the dtype ``hurray.numpy_dtype(t.dtype)`` gives (``ml_dtypes`` types for bfloat16,
        fp8 and e8m0 when installed, raw unsigned integers otherwise). Packed sub-byte types
        (int4, uint4, fp4, fp6) have no zero-copy numpy form: the view is their packed bytes
        (``uint8``, 1-D); ``dequantize()`` gives their values. Quantized tensors give the stored
        codes. The view keeps the memory alive; it is read-only for tensors of a read-only
        mapping. Raises ``ValueError`` for sparse, paged and composite-head tensors (use
        ``densify()``)."""
        self._alive()
        f = self._f()
        # The owner before the buffers: close() (on another thread) empties the buffers before
        # it lets go of the owner, so a view is never made over memory nothing keeps.
        owner = (self._handle, self._keep)
        bufs = self._bufs
        if bufs is _CLOSED:
            raise ValueError("tensor is closed")
        if f.layout > 2 or not bufs:
            raise ValueError(f"a {self.layout} tensor has no dense view; use densify() or buffers()")
        ptr, size = bufs[0]
        raw = raw_view(ptr, size, owner, self._readonly)
        dt = self.dtype
        off = int(f.byte_offset)
        if dt.packed:
            return raw[off : off + (f.element_count * dt.bits + 7) // 8]
        nd = _dtypes.numpy_dtype(dt)
        shape = self.shape
        es = nd.itemsize
        if f.layout == 0:
            strides = None
        elif f.layout == 1:
            acc, s = es, []
            for n in shape:
                s.append(acc)
                acc *= max(n, 1)
            strides = tuple(s)
        else:
            strides = tuple(x * es for x in self.strides or ())
        if f.element_count == 0:
            return np.empty(shape, nd)
        return np.ndarray(shape, nd, buffer=raw, offset=off, strides=strides)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def _slices(self, bufs: Any = None) -> Any:
        """The buffers (``bufs``, or this tensor's) as ``HurrayIoSlice[]`` (borrowed for one call)."""
        if bufs is None:
            bufs = self._bufs
        arr = (IoSlice * max(len(bufs), 1))()
        for i, (p, n) in enumerate(bufs):
            arr[i].ptr = p or None
            arr[i].len = n
        return arr

    def dequantize(self, dtype: Any = None, *, max_bytes: int = DEFAULT_MAX_DENSE_BYTES) -> np.ndarray:
        """The values as a new row-major array of ``dtype`` (default: the quantization's
        dequantized type, float32 for plain tensors), computed by the core for every
        quantization kind and element type (docs/spec/descriptor.md §Dequantization). Shape:
        ``self.shape``. For a sparse or paged tensor, a result of more than ``max_bytes``
        (default ``DEFAULT_MAX_DENSE_BYTES``, 1 GiB) is refused before anything is allocated,
        as in Java: a few hundred bytes of it can describe terabytes. Errors: ``HurrayError``
        (``LIMIT_EXCEEDED`` over ``max_bytes``, ``UNSUPPORTED`` for strided layouts and
        complex types)."""
        self._alive()
        q = self.quantization
        target = _dtypes.lookup(dtype) if dtype is not None else (q.dequantized_type if q else _dtypes.BY_NAME["float32"])
        nd = _dtypes.numpy_dtype(target)
        _dense_bytes("dequantize", target, self.shape, max_bytes, self._f().layout > 2)
        out = np.empty(self.shape, nd)
        # Held until the call returns: a close on another thread cannot free them meanwhile.
        desc, bufs, owner = self._pinned()
        n = len(bufs)
        ptrs = (c_void_p * max(n, 1))(*[p or None for p, _ in bufs])
        lens = (c_size_t * max(n, 1))(*[s for _, s in bufs])
        check(lib.hurray_dequantize_to(desc, ptrs, lens, n, target.code, out.ctypes.data, out.nbytes))
        del owner
        return out

    def densify(self, *, max_bytes: int = DEFAULT_MAX_DENSE_BYTES) -> np.ndarray:
        """The dense row-major form of a sparse (COO/CSR/CSC/BSR) or block-paged tensor as a
        new array of the element type, computed by the core (every index checked first);
        dense tensors give a contiguous copy. For sparse, paged and strided tensors (whose
        strides may be 0), a result of more than ``max_bytes`` (default
        ``DEFAULT_MAX_DENSE_BYTES``, 1 GiB; shape × element size) is refused before anything
        is allocated. Errors: ``HurrayError`` (``LIMIT_EXCEEDED`` over
        ``max_bytes``, ``CORRUPT`` for a bad index, ``UNSUPPORTED``)."""
        self._alive()
        code = self._f().layout
        dt = self.dtype
        _dense_bytes("densify", dt, self.shape, max_bytes, code >= 2)
        if code <= 2:
            return np.ascontiguousarray(self.numpy())
        nd = _dtypes.numpy_dtype(dt)
        out = np.empty(self.shape, nd)
        fn = lib.hurray_paged_gather if code == 7 else lib.hurray_sparse_densify
        desc, bufs, owner = self._pinned()  # held until the call returns, as in dequantize
        check(fn(desc, self._slices(bufs), len(bufs), out.ctypes.data, out.nbytes))
        del owner
        return out

    # -- DLPack --------------------------------------------------------------------------------

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: Optional[tuple[int, int]] = None,
        dl_device: Optional[tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any:
        """A DLPack capsule of this tensor's memory (no copy), built by the core
        (``hurray_dlpack_export``): a versioned ``dltensor_versioned`` capsule, or a legacy
        ``dltensor`` one when the consumer asks for ``max_version < (1, 0)`` or passes none.
        The capsule holds its own reference to the memory: it outlives this tensor, and the
        struct's deleter runs exactly once (by the consumer, or by the capsule if it was never
        consumed). Dense and strided host tensors with one buffer only; ``copy=True`` is
        refused, as is any ``dl_device`` but the CPU. Memory that is not 64-byte aligned
        (a ``from_numpy`` source) is copied once into an aligned array first. The package
        holds each capsule until the next export or garbage collection, so that a consumer
        that refuses it (numpy has no float8, bfloat16 or int4 DLPack type) raises its own
        error: an unconsumed capsule's deleter runs then, not at once."""
        from . import _dlpack

        if copy:
            raise BufferError("hurray tensors export without copying (copy=True is not supported)")
        if dl_device is not None and tuple(dl_device) != (1, 0):
            raise BufferError(f"hurray tensors live on the CPU, not on device {dl_device}")
        self._alive()
        legacy = max_version is None or tuple(max_version) < (1, 0)
        return _dlpack.export(self, legacy)

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(1, 0)``: ``kDLCPU``, device 0 (host memory, IPC memory included)."""
        return (1, 0)

    # -- lifetime ------------------------------------------------------------------------------

    def close(self) -> None:
        """Releases this tensor's reference to its descriptor and memory now (views and
        capsules made from it keep theirs). Idempotent."""
        # The buffers first, the owners after: a call reading the owner, then the buffers, on
        # another thread meanwhile either holds the owner or finds no buffers.
        self._bufs = _CLOSED
        self._handle = None  # the handle goes with its last holder (see _Handle)
        self._d = None
        self._tpl = 0
        self._fields = None
        self._owner = None  # an owned descriptor is destroyed now (_Descriptor)
        self._keep = None

    def __enter__(self) -> "Tensor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._desc is None:
            return "Tensor(closed)"
        name = f" {self.name!r}" if self.name else ""
        q = self.quantization
        qs = f" {q.kind}" if q else ""
        return f"Tensor({self.dtype}{list(self.shape)} {self.layout}{qs}{name})"


def _descriptor_from_spec(
    dt: DType,
    shape: Sequence[int],
    layout: int,
    strides: Optional[Sequence[int]],
    byte_offset: int,
    buffer_size: Optional[int],
    name: Optional[str],
    metadata: MetadataArg,
) -> int:
    spec = DescriptorSpec()
    spec.element_type = dt.code
    spec.layout = layout
    rank = len(shape)
    dims = (c_uint64 * max(rank, 1))(*shape)
    spec.rank = rank
    spec.dims = ctypes.cast(dims, c_void_p)
    if strides is not None:
        st = (ctypes.c_int64 * max(rank, 1))(*strides)
        spec.strides = ctypes.cast(st, c_void_p)
        spec.stride_count = rank
    spec.byte_offset = byte_offset
    if buffer_size is not None:
        b = BufferSpec(buffer_size, 64, 0, 0, 0)
        spec.buffer_count = 1
        spec.buffers = ctypes.cast(ctypes.pointer(b), c_void_p)
    nb = name.encode("utf-8") if name is not None else None
    if nb is not None:
        spec.name = ctypes.cast(ctypes.c_char_p(nb), c_void_p)
        spec.name_len = len(nb)
    meta = _encode_meta(metadata)
    views = _views(meta)
    spec.metadata_count = len(meta)
    spec.metadata = ctypes.cast(views, c_void_p)
    out = c_void_p()
    check(lib.hurray_descriptor_new(byref(spec), byref(out)))
    return out.value  # type: ignore[return-value]


def _renamed(desc: int, name: Optional[str], metadata: MetadataArg) -> int:
    """A new owned copy of ``desc`` with ``name`` and, when given, ``metadata`` (replacing its
    own): ``hurray_descriptor_with_name`` for a name alone, else the builder."""
    out = c_void_p()
    nb = name.encode("utf-8") if name is not None else None
    if not metadata:
        check(lib.hurray_descriptor_with_name(desc, nb, len(nb) if nb else 0, byref(out)))
        return out.value  # type: ignore[return-value]
    f = DescriptorFields()
    check(lib.hurray_descriptor_fields(desc, byref(f)))
    if f.layout > 2:
        raise ValueError("metadata can be given to dense, strided and quantized tensors only")
    b = c_void_p()
    check(lib.hurray_descriptor_builder_new(f.element_type, f.dims, f.rank, byref(b)))
    try:
        check(lib.hurray_descriptor_builder_set_layout(b, f.layout, f.strides if f.layout == 2 else None,
                                                       f.rank if f.layout == 2 else 0))
        check(lib.hurray_descriptor_builder_set_byte_offset(b, f.byte_offset))
        spec = BufferSpec()
        for i in range(f.buffer_count):
            check(lib.hurray_descriptor_buffer_spec(desc, i, byref(spec)))
            check(lib.hurray_descriptor_builder_add_buffer(b, byref(spec)))
        bq = BlockQuant()
        check(lib.hurray_descriptor_block_quant(desc, byref(bq)))
        if bq.kind:
            check(lib.hurray_descriptor_builder_set_block_quant(b, byref(bq)))
        elif f.quantization.kind:
            check(lib.hurray_descriptor_builder_set_quantization(b, byref(f.quantization)))
        if nb is not None:
            check(lib.hurray_descriptor_builder_set_name(b, nb, len(nb)))
        for k, v in _encode_meta(metadata):
            check(lib.hurray_descriptor_builder_add_metadata(b, k, len(k), v, len(v)))
        check(lib.hurray_descriptor_builder_build(b, byref(out)))
    finally:
        lib.hurray_descriptor_builder_destroy(byref(b))
    return out.value  # type: ignore[return-value]


def from_numpy(a: Any, name: Optional[str] = None, metadata: MetadataArg = None) -> Tensor:
    """A tensor over a numpy array's memory, without copying.

    ``a``: any array whose dtype Hurray shares (bool, the integers, float16/32/64, complex,
    and the ``ml_dtypes`` bfloat16/fp8/e8m0 types). C-contiguous arrays become row-major,
    Fortran-contiguous ones column-major, others strided (strides in elements; negative ones
    allowed); strides that are not a multiple of the item size are copied to C order first.
    ``ml_dtypes``' one-byte fp4/fp6 arrays are packed by the core into a new buffer (a copy,
    as packing requires); int4/uint4 go through ``from_buffer`` with their packed bytes.
    ``name``: UTF-8, at most 4096 bytes; ``metadata``: ``str`` keys, ``str`` or ``bytes``
    values. The tensor keeps ``a`` alive; writing to ``a`` while a tensor is being sent is a
    data race. Errors: ``ValueError`` (no such element type), ``HurrayError`` (limits: names,
    metadata, rank ≤ 32)."""
    if type(a) is not np.ndarray:
        a = np.asarray(a)
    dt, geometry = a.dtype, (a.shape, a.strides)
    hit = _last_plan.get(geometry)
    if hit is not None and hit[0] is dt:
        plan = hit[1]  # the same dtype object as last time: no dtype hash (numpy computes it each time)
    else:
        plan = _plans.get((dt, geometry[0], geometry[1]))
        if plan is not None:
            _last_plan[geometry] = (dt, plan)
    if plan is None or metadata:
        return _from_numpy_planned(a, name, metadata)
    # A shape seen before: three attributes, no library call (see _Planned).
    t = _new(_Planned)
    t._keep = a
    t._plan = plan
    t._tpl = plan[0]
    if name is not None:
        nb = name.encode("utf-8")
        if len(nb) > 4096 or "\0" in name:  # checked now, as a made descriptor would be
            s = lib.hurray_name_check(nb, len(nb), 0)
            if s < 0:
                raise error(s)
        t._nb = nb
    return t


def _bytes_view(a: np.ndarray) -> bool:
    # Whether memoryview(a).cast("B") gives the array's bytes (the writer copies small C-order
    # payloads that way); numpy exports no buffer for some dtypes (ml_dtypes' among them).
    try:
        return memoryview(a).cast("B").nbytes == a.nbytes
    except (TypeError, ValueError, BufferError):
        return False


def _address(a: np.ndarray) -> int:
    # ctypes' from_buffer is several times cheaper than a.ctypes.data; it needs a writable,
    # contiguous, non-empty buffer, else the general way.
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    except (TypeError, ValueError, BufferError):
        return a.ctypes.data if a.size else 0


_new = object.__new__


class _Planned(Tensor):
    """A ``from_numpy`` tensor of a (dtype, shape, strides) seen before: its array, its plan
    and its encoded name. A writer queues it from these alone; its buffer address and
    read-only flag are read from the array, and its descriptor made from the template, only
    when something else asks (``_bufs``, ``_readonly``, ``_desc``)."""

    _d = 0
    _handle = None

    # Properties, not __getattr__: a class with __getattr__ makes every attribute lookup on
    # its instances slower (and unspecialized), and a writer reads these tensors' per tensor.
    def _get_bufs(self) -> list:
        d = self.__dict__
        v = d.get("_bufs")
        if v is None:
            _tpl, off, size, _contig, _spec = self._plan
            v = d["_bufs"] = [(_address(self._keep) - off, size)]
        return v

    def _set_bufs(self, v: list) -> None:
        self.__dict__["_bufs"] = v

    def _get_readonly(self) -> bool:
        d = self.__dict__
        v = d.get("_readonly")
        if v is None:
            keep = self._keep
            if keep is None:
                raise ValueError("tensor is closed")
            v = d["_readonly"] = not keep.flags.writeable
        return v

    def _set_readonly(self, v: bool) -> None:
        self.__dict__["_readonly"] = v

    _bufs = property(_get_bufs, _set_bufs)
    _readonly = property(_get_readonly, _set_readonly)


# (dtype, shape, strides) -> (unnamed template descriptor, byte offset of element 0, buffer
# size, C-contiguous, the template's HurrayDescriptorSpec bytes): a tensor of a shape seen
# before costs no library call until it is written (the writer encodes it from the spec
# bytes, or from the template and the name). Templates live as long as the process, so the
# spec bytes' pointers (dims, strides, buffer table) stay valid; at most _MAX_PLANS are kept.
_plans: "dict[tuple, tuple[int, int, int, bool, bytes]]" = {}
_template_buffers: list = []
# (shape, strides) -> (dtype, plan) of the last from_numpy of that geometry, found by
# identity of the dtype object; bounded like _plans (one entry per plan at most).
_last_plan: "dict[tuple, tuple[np.dtype, tuple]]" = {}


def _template_spec(tpl: int) -> bytes:
    """The ``HurrayDescriptorSpec`` of template descriptor ``tpl``, as bytes whose pointers
    borrow the template's fields (and a buffer table kept in ``_template_buffers``)."""
    f = DescriptorFields()
    check(lib.hurray_descriptor_fields(tpl, byref(f)))
    spec = DescriptorSpec()
    spec.element_type, spec.layout, spec.rank = f.element_type, f.layout, f.rank
    spec.dims = ctypes.cast(f.dims, c_void_p)
    if f.layout == 2:
        spec.strides = ctypes.cast(f.strides, c_void_p)
        spec.stride_count = f.rank
    spec.byte_offset = f.byte_offset
    bufs = (BufferSpec * max(f.buffer_count, 1))()
    for i in range(f.buffer_count):
        check(lib.hurray_descriptor_buffer_spec(tpl, i, byref(bufs[i])))
    spec.buffer_count = f.buffer_count
    spec.buffers = ctypes.cast(bufs, c_void_p)
    spec.quantization = f.quantization
    _template_buffers.append(bufs)
    return ctypes.string_at(ctypes.addressof(spec), ctypes.sizeof(DescriptorSpec))
_plans_lock = threading.Lock()
_MAX_PLANS = 256


def _from_numpy_planned(a: np.ndarray, name: Optional[str], metadata: MetadataArg) -> Tensor:
    dt = _dtypes.lookup(a.dtype)
    if a.dtype in _dtypes.UNPACKED:
        if dt.name in ("int4", "uint4"):
            raise ValueError(f"{dt.name} arrays are sent as packed bytes: hurray.from_buffer(packed, '{dt.name}', shape)")
        return quantize(a.astype(np.float32), dt, name=name, metadata=metadata)
    key: Optional[tuple] = (a.dtype, a.shape, a.strides)
    es = a.dtype.itemsize
    shape = a.shape
    if a.size == 0 or a.flags.c_contiguous:
        layout, strides, off, size = 0, None, 0, a.nbytes
    elif a.flags.f_contiguous:
        layout, strides, off, size = 1, None, 0, a.nbytes
    elif all(s % es == 0 for s in a.strides):
        el = [s // es for s in a.strides]
        lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, el))
        hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, el))
        layout, strides = 2, el
        off = -lo * es
        size = (hi - lo + 1) * es
    else:
        a = np.ascontiguousarray(a)
        key = None
        layout, strides, off, size = 0, None, 0, a.nbytes
    explicit = size if layout == 2 else None
    desc = _descriptor_from_spec(dt, shape, layout, strides, off, explicit, name, metadata)
    if key is not None and not metadata and len(_plans) < _MAX_PLANS:
        with _plans_lock:
            if key not in _plans:
                tpl = _descriptor_from_spec(dt, shape, layout, strides, off, explicit, None, None)
                contig = layout == 0 and a.flags.c_contiguous and _bytes_view(a)
                _plans[key] = (tpl, off, size, contig, _template_spec(tpl))
    base = (a.ctypes.data if a.size else 0) - off
    return Tensor._make(desc, True, None, [(base, size)], keep=a, readonly=not a.flags.writeable)


def from_buffer(
    data: Any, dtype: Any, shape: Sequence[int], name: Optional[str] = None, metadata: MetadataArg = None
) -> Tensor:
    """A row-major tensor of ``dtype`` and ``shape`` over the bytes of ``data`` (any buffer:
    ``bytes``, a numpy array, ``memoryview``), without copying: the way to send packed
    sub-byte types (int4, uint4, fp4, fp6) whose packed bytes you have, or raw storage
    whose numpy dtype is only a stand-in. ``data`` must hold exactly the bytes the shape
    needs (``HurrayError`` ``BUFFER_TOO_SMALL`` or ``INVALID_LAYOUT`` otherwise)."""
    raw = np.frombuffer(data, np.uint8) if not isinstance(data, np.ndarray) else data.reshape(-1).view(np.uint8)
    dt = _dtypes.lookup(dtype)
    desc = _descriptor_from_spec(dt, tuple(shape), 0, None, 0, raw.nbytes, name, metadata)
    return Tensor._make(desc, True, None, [(raw.ctypes.data, raw.nbytes)], keep=raw, readonly=not raw.flags.writeable)


def from_dlpack(x: Any, name: Optional[str] = None, metadata: MetadataArg = None) -> Tensor:
    """A tensor over the memory of any DLPack producer (a torch tensor, a numpy array, another
    hurray tensor), imported by the core (``hurray_dlpack_import``): no copy when the data is
    64-byte aligned (else an aligned copy, and the producer is released at once). The
    producer's deleter runs exactly once, when the last user of the memory lets go.
    ``x`` is asked for a versioned capsule (``max_version=(1, 1)``), falling back to a legacy
    one. Host memory only. ``name`` and ``metadata`` as for ``from_numpy``. Errors:
    ``HurrayError`` (``UNSUPPORTED`` device memory or types, ``VERSION_MISMATCH``), and
    ``TypeError`` when ``x`` speaks no DLPack."""
    from . import _dlpack

    t = _dlpack.import_(x)
    if name is not None or metadata:
        d = _renamed(t._desc, name, metadata)
        t._desc, t._owner, t._fields = d, _Descriptor(d), None
    return t


_QUANT_DEFAULTS = {
    # kind: (element type, scale type, block, axis)
    "nf4": ("uint4", "float32", 64, 0),
    "mx": ("float4_e2m1fn", "float8_e8m0fnu", 32, None),
    "nvfp4": ("float4_e2m1fn", "float8_e4m3fn", 16, None),
    "group-affine": ("int4", "float32", 128, None),
    "gguf-q8_0": ("int8", "float16", 32, None),
    "gguf-q4_0": ("uint4", "float16", 32, None),
}


def quantize(
    a: Any,
    dtype: Any = None,
    kind: Optional[str] = None,
    *,
    axis: Optional[int] = None,
    block: Optional[int] = None,
    block2: int = 0,
    scale_type: Any = None,
    dequantized_type: Any = "float32",
    name: Optional[str] = None,
    metadata: MetadataArg = None,
) -> Tensor:
    """A new tensor holding ``a`` (converted to float32) in a low-precision ``dtype``, packed
    and, with ``kind``, block-quantized by the core (``hurray_quantize``; rounding as
    docs/spec/descriptor.md says). ``kind``: ``"nf4"``, ``"mx"``, ``"nvfp4"``,
    ``"group-affine"``, ``"gguf-q8_0"``, ``"gguf-q4_0"`` or ``None`` for a plain cast to
    ``dtype`` (e.g. ``"float4_e2m1fn"``, ``"int4"``). Defaults per kind: NF4 uint4 blocks of 64
    with float32 absmax; MX fp4 blocks of 32 with e8m0 scales; NVFP4 blocks of 16 with e4m3
    scales; group-affine int4 groups of 128; GGUF blocks of 32 with float16 scales; ``axis``
    the last one (NF4: 0). The tensor owns new buffers; ``a`` is not kept."""
    x = np.ascontiguousarray(np.asarray(a, dtype=np.float32))
    q = None
    if kind is not None:
        if kind not in _QUANT_DEFAULTS:
            raise ValueError(f"unknown quantization kind {kind!r}; one of {sorted(_QUANT_DEFAULTS)}")
        et, st, bl, ax = _QUANT_DEFAULTS[kind]
        q = BlockQuant()
        q.kind = _KIND_CODE[kind]
        q.dequantized_type = _dtypes.lookup(dequantized_type).code
        q.scale_type = _dtypes.lookup(scale_type or st).code
        q.axis = axis if axis is not None else (ax if ax is not None else max(x.ndim - 1, 0))
        q.block = block or bl
        q.block2 = block2
        dtype = dtype or et
    if dtype is None:
        raise ValueError("quantize needs a dtype or a kind")
    dt = _dtypes.lookup(dtype)
    rank = x.ndim
    dims = (c_uint64 * max(rank, 1))(*x.shape)
    plan = c_void_p()
    check(lib.hurray_quantize_plan(dt.code, dims, rank, byref(q) if q is not None else None, byref(plan)))
    try:
        f = DescriptorFields()
        check(lib.hurray_descriptor_fields(plan, byref(f)))
        n = f.buffer_count
        spec = BufferSpec()
        arrays = []
        for i in range(n):
            check(lib.hurray_descriptor_buffer_spec(plan, i, byref(spec)))
            arrays.append(aligned_empty(spec.byte_size, max(spec.alignment, 64)))
        ptrs = (c_void_p * max(n, 1))(*[b.ctypes.data for b in arrays])
        lens = (c_size_t * max(n, 1))(*[b.nbytes for b in arrays])
        check(lib.hurray_quantize(plan, x.ctypes.data, x.size, ptrs, lens, n))
        desc = _renamed(plan, name, metadata) if (name is not None or metadata) else plan
    except BaseException:
        lib.hurray_descriptor_destroy(plan)
        raise
    if desc != plan:
        lib.hurray_descriptor_destroy(plan)
    return Tensor._make(desc, True, None, [(b.ctypes.data, b.nbytes) for b in arrays], keep=arrays)


def aligned_empty(nbytes: int, alignment: int = 64) -> np.ndarray:
    """A new ``uint8`` array of ``nbytes`` whose data is ``alignment``-byte aligned."""
    raw = np.empty(nbytes + alignment, np.uint8)
    start = (-raw.ctypes.data) % alignment
    return raw[start : start + nbytes]


def _sparse_tensor(
    layout: str,
    values: np.ndarray,
    index_arrays: list[np.ndarray],
    shape: Sequence[int],
    nnz: int,
    canonical: bool,
    name: Optional[str],
    metadata: MetadataArg,
    block: tuple[int, int] = (0, 0),
) -> Tensor:
    values = np.ascontiguousarray(values)
    dt = _dtypes.lookup(values.dtype)
    it = index_arrays[0].dtype
    if it not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise ValueError(f"sparse indices must be int32 or int64, not {it}")
    idx = [np.ascontiguousarray(i, dtype=it) for i in index_arrays]
    rank = len(shape)
    dims = (c_uint64 * max(rank, 1))(*shape)
    b = c_void_p()
    check(lib.hurray_descriptor_builder_new(dt.code, dims, rank, byref(b)))
    try:
        check(lib.hurray_descriptor_builder_set_layout(b, _LAYOUT_CODE[layout], None, 0))
        s = Sparse()
        s.index_type = 3 if it == np.dtype(np.int32) else 4
        s.canonical = 1 if canonical else 0
        s.block_rows, s.block_cols = block
        s.nnz = nnz
        check(lib.hurray_descriptor_builder_set_sparse(b, byref(s)))
        arrays = [values] + idx
        for arr in arrays:
            check(lib.hurray_descriptor_builder_add_buffer(b, byref(BufferSpec(arr.nbytes, 64, 0, 0, 0))))
        if name is not None:
            nb = name.encode("utf-8")
            check(lib.hurray_descriptor_builder_set_name(b, nb, len(nb)))
        for k, v in _encode_meta(metadata):
            check(lib.hurray_descriptor_builder_add_metadata(b, k, len(k), v, len(v)))
        d = c_void_p()
        check(lib.hurray_descriptor_builder_build(b, byref(d)))
    finally:
        lib.hurray_descriptor_builder_destroy(byref(b))
    return Tensor._make(d.value, True, None, [(x.ctypes.data, x.nbytes) for x in arrays], keep=arrays)


def csr(
    values: Any,
    indptr: Any,
    indices: Any,
    shape: tuple[int, int],
    *,
    canonical: bool = True,
    name: Optional[str] = None,
    metadata: MetadataArg = None,
) -> Tensor:
    """A CSR tensor of ``shape`` (rows, cols) over ``values`` (nnz), ``indptr`` (rows + 1) and
    column ``indices`` (nnz, int32 or int64), as scipy's ``csr_matrix`` holds them
    (``m.data, m.indptr, m.indices``). Validated by the core; ``densify()`` expands it."""
    values = np.asarray(values)
    indptr = np.asarray(indptr)
    return _sparse_tensor(
        "csr", values, [indptr, np.asarray(indices, dtype=indptr.dtype)], shape, values.shape[0], canonical, name, metadata
    )


def coo(
    values: Any,
    indices: Any,
    shape: Sequence[int],
    *,
    canonical: bool = False,
    name: Optional[str] = None,
    metadata: MetadataArg = None,
) -> Tensor:
    """A COO tensor over ``values`` (nnz) and ``indices`` shaped ``[rank, nnz]`` (int32 or
    int64, the form of ``torch.sparse_coo_tensor(...).indices()`` and scipy's ``row``/``col``
    stacked)."""
    values = np.asarray(values)
    indices = np.asarray(indices)
    return _sparse_tensor("coo", values, [indices], shape, values.shape[0], canonical, name, metadata)


class Composite:
    """A composite: a named head with members in order, each a role and a tensor or a nested
    composite (docs/spec/stream.md §Composites). Write it with ``StreamWriter.write`` or
    ``FileWriter.add``; read one whole with ``StreamReader.items()`` or ``File.composite``.

    ``members`` maps role → ``Tensor`` | ``Composite`` in order. A composite read from a stream
    or file owns its members' memory (they live while any of them, or their views, do)."""

    def __init__(self, name: Optional[str], members: Mapping[str, Union[Tensor, "Composite"]]):
        self.name = name
        self.members: dict[str, Union[Tensor, Composite]] = dict(members)
        self.metadata: dict[str, bytes] = {}

    def __getitem__(self, role: str) -> Union[Tensor, "Composite"]:
        return self.members[role]

    def __iter__(self) -> Iterator[str]:
        return iter(self.members)

    def __len__(self) -> int:
        return len(self.members)

    def __repr__(self) -> str:
        return f"Composite({self.name!r}, {list(self.members)})"

    def _builder(self, name: Optional[str] = None) -> int:
        """A ``HurrayCompositeBuilder*`` (owned by the caller) borrowing the members' memory."""
        nb = (name if name is not None else self.name or "").encode("utf-8") if (name or self.name) else None
        b = c_void_p()
        check(lib.hurray_composite_builder_new(nb, len(nb) if nb else 0, byref(b)))
        try:
            for role, m in self.members.items():
                rb = role.encode("utf-8")
                if isinstance(m, Composite):
                    child = c_void_p(m._builder(None))
                    check(lib.hurray_composite_builder_add_composite(b, rb, len(rb), byref(child)))
                else:
                    m._alive()
                    check(lib.hurray_composite_builder_add_tensor(b, rb, len(rb), m._desc, m._slices(), len(m._bufs)))
        except BaseException:
            lib.hurray_composite_builder_destroy(byref(b))
            raise
        return b.value  # type: ignore[return-value]

    @classmethod
    def _from_handle(cls, handle: int, keep: object = None, readonly: bool = False) -> "Composite":
        """Wraps an owned ``HurrayComposite*``: members borrow it; it is destroyed when the
        composite and every member are gone."""
        owner = _CompositeOwner(handle, keep)
        return cls._read(handle, owner, readonly)

    @classmethod
    def _read(cls, handle: int, owner: "_CompositeOwner", readonly: bool) -> "Composite":
        d = c_void_p()
        check(lib.hurray_composite_head(handle, byref(d)))
        head = Tensor._make(d.value, False, None, [], keep=owner)
        n = c_size_t()
        check(lib.hurray_composite_member_count(handle, byref(n)))
        members: dict[str, Union[Tensor, Composite]] = {}
        role, rl, t, c = c_void_p(), c_size_t(), c_void_p(), c_void_p()
        for i in range(n.value):
            check(lib.hurray_composite_member(handle, i, byref(role), byref(rl), byref(t), byref(c)))
            r = bytes_at(role.value, rl.value).decode("utf-8")
            if t.value:
                m = Tensor._from_handle(t.value, keep=owner, readonly=readonly)
                m._handle.ptr = 0  # borrowed from the composite: the owner destroys it
                m._handle = None
                members[r] = m
            else:
                members[r] = cls._read(c.value, owner, readonly)  # type: ignore[arg-type]
        out = object.__new__(cls)
        out.name = head.name
        out.members = members
        out.metadata = head.metadata
        out.head = head  # type: ignore[attr-defined]
        return out


class _CompositeOwner:
    __slots__ = ("handle", "keep")

    def __init__(self, handle: int, keep: object):
        self.handle = handle
        self.keep = keep

    def __del__(self) -> None:
        try:
            lib.hurray_composite_destroy(byref(c_void_p(self.handle)))
        except Exception:
            pass

