"""HRRYFILE containers (docs/spec/hrryfile.md): reading by name or index, in place from a map,
and writing with an atomic finish."""

from __future__ import annotations

import ctypes
import mmap
import os
import tempfile
from ctypes import byref, c_uint64, c_void_p
from typing import Any, Iterator, Optional, Union

import numpy as np

from ._lib import (
    ERR_NOT_FOUND,
    ERR_TRANSPORT,
    WRITE_FN,
    FileReaderOptions,
    FileWriterOptions,
    Transport,
    bytes_at,
    check,
    error,
    lib,
)
from ._threads import _guard, _one_thread
from ._tensor import Composite, MetadataArg, Tensor, _encode_meta

PathLike = Union[str, "os.PathLike[str]"]


def _handle_owner_copy(self: Any) -> Any:
    raise TypeError(type(self).__name__ + " owns a native handle and cannot be copied: share the object itself")


def _handle_owner_deepcopy(self: Any, memo: Any) -> Any:
    raise TypeError(type(self).__name__ + " owns a native handle and cannot be deep-copied")


def _handle_owner_reduce(self: Any, protocol: Any) -> Any:
    raise TypeError(type(self).__name__ + " owns a native handle and cannot be pickled")


def _check_limit(name: str, value: Optional[int], bits: int) -> None:
    """Refuses a limit that is not an integer in 0..2**bits - 1 (ValueError, TypeError)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 0 <= value < (1 << bits):
        raise ValueError(f"{name} {value} is outside 0..{(1 << bits) - 1}")


def _options(max_descriptor_bytes: Optional[int]) -> FileReaderOptions:
    _check_limit("max_descriptor_bytes", max_descriptor_bytes, 64)
    opts = FileReaderOptions()
    check(lib.hurray_file_reader_options_init(byref(opts)))
    if max_descriptor_bytes is not None:
        opts.max_descriptor_bytes = max_descriptor_bytes
    return opts


class File:
    """An HRRYFILE opened for reading. Make one with ``File.open(path)`` (the library reads
    the file with ``pread``; each tensor gets its own memory) or ``File.map(path)`` (a
    read-only memory map; tensors point into it, zero copy, and their views are read-only).

    ``file["name"]`` reads a tensor (``KeyError`` if absent), ``in``, ``len`` and iteration
    (tensors in file order) work as on a mapping of names; ``names()`` lists them,
    ``metadata`` is the file's metadata, ``composite(name)`` reads a composite,
    ``verify()`` checks every checksum. Opening reads a fixed number of bytes whatever the
    tensor count; a lookup costs O(log n) reads. Errors: ``HurrayError`` (``TRUNCATED``,
    ``CORRUPT``, ``INVALID_MAGIC``, …; hostile files are refused before anything is
    allocated). Ownership: tensors outlive the file (a map stays mapped while any tensor or
    view of it lives). Threads: one thread at a time: a call while another thread is inside
    the file (a lookup, read, ``verify`` or ``close``) raises ``RuntimeError`` at once and
    leaves the file unchanged (its native reader is not for two threads at once; give each
    thread its own ``File``, or lock around its use). Tensors may go to any thread.
    """

    def __init__(self) -> None:
        raise TypeError("use hurray.File.open(path) or hurray.File.map(path)")

    @classmethod
    def _new(cls, reader: int, mapping: Any, path: bytes) -> "File":
        f = object.__new__(cls)
        f._busy = _guard()
        f._reader = reader
        f._map = mapping
        f._path = path
        return f

    # A File owns its native reader: a copy would be a second owner of it.
    __copy__ = _handle_owner_copy
    __deepcopy__ = _handle_owner_deepcopy
    __reduce_ex__ = _handle_owner_reduce

    @classmethod
    def open(
        cls, path: PathLike, *, verify_payloads: bool = True, max_descriptor_bytes: Optional[int] = None
    ) -> "File":
        """Opens ``path``; payload checksums are checked on every read unless
        ``verify_payloads`` is False. ``max_descriptor_bytes`` raises the largest accepted
        encoded descriptor (default 1 MiB; writers accept up to 16 MiB, so a file holding larger
        descriptors needs it); out of 0..2**64-1 it is a ``ValueError``."""
        opts = _options(max_descriptor_bytes)
        if not verify_payloads:
            opts.flags |= 2
        p = os.fsencode(os.path.abspath(os.fspath(path)))
        r = c_void_p()
        check(lib.hurray_file_reader_open_path(p, len(p), byref(opts), byref(r)))
        return cls._new(r.value, None, p)  # type: ignore[arg-type]

    @classmethod
    def map(
        cls, path: PathLike, *, verify_payloads: bool = False, max_descriptor_bytes: Optional[int] = None
    ) -> "File":
        """Maps ``path`` read-only and reads it in place (payload checksums checked only with
        ``verify_payloads``, as reading in place does not touch the bytes;
        ``max_descriptor_bytes`` as for :meth:`open`).

        Risk: the mapping shares the file. If another process shortens the file while tensors
        from it are in use, touching their bytes past the new end kills the process with
        SIGBUS (docs/spec/hrryfile.md); :meth:`open`, which reads with positional reads, reports
        such a file as ``TRUNCATED`` instead. Map only files nobody else may shorten."""
        with open(os.fspath(path), "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else None
        array = np.frombuffer(mm, np.uint8) if mm is not None else np.empty(0, np.uint8)
        opts = _options(max_descriptor_bytes)
        if verify_payloads:
            opts.flags |= 1
        r = c_void_p()
        check(lib.hurray_file_reader_open_span(array.ctypes.data if size else None, size, byref(opts), byref(r)))
        return cls._new(r.value, array, os.fsencode(os.path.abspath(os.fspath(path))))  # type: ignore[arg-type]

    def _live(self) -> int:
        if self._reader is None:
            raise ValueError("file is closed")
        return self._reader

    def _count(self) -> int:
        n = c_uint64()
        check(lib.hurray_file_reader_count(self._live(), byref(n)))
        return n.value

    def __len__(self) -> int:
        return self._count()

    def _read_entry(self, entry: c_void_p) -> Tensor:
        t = c_void_p()
        try:
            check(lib.hurray_file_reader_read_tensor(self._reader, entry, byref(t)))
        finally:
            lib.hurray_file_entry_destroy(byref(entry))
        return Tensor._from_handle(t.value, keep=self._map, readonly=self._map is not None)  # type: ignore[arg-type]

    def __getitem__(self, name: str) -> Tensor:
        nb = name.encode("utf-8")
        e = c_void_p()
        s = lib.hurray_file_reader_find(self._live(), nb, len(nb), byref(e))
        if s == ERR_NOT_FOUND:
            raise KeyError(name)
        check(s)
        return self._read_entry(e)

    def get(self, name: str) -> Optional[Tensor]:
        try:
            return self[name]
        except KeyError:
            return None

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        nb = name.encode("utf-8")
        e = c_void_p()
        s = lib.hurray_file_reader_find(self._live(), nb, len(nb), byref(e))
        if s == ERR_NOT_FOUND:
            return False
        check(s)
        lib.hurray_file_entry_destroy(byref(e))
        return True

    def tensor(self, index: int) -> Tensor:
        """The tensor at ``index`` in file order."""
        e = c_void_p()
        check(lib.hurray_file_reader_entry(self._live(), index, byref(e)))
        return self._read_entry(e)

    def __iter__(self) -> Iterator[Tensor]:
        for i in range(len(self)):
            yield self.tensor(i)

    def names(self) -> list[str]:
        """Every tensor's name, in file order."""
        out = []
        p, n = c_void_p(), c_uint64()
        for i in range(self._count()):
            e = c_void_p()
            check(lib.hurray_file_reader_entry(self._reader, i, byref(e)))
            try:
                check(lib.hurray_file_entry_name(e, byref(p), byref(n)))
                out.append(bytes_at(p.value, n.value).decode("utf-8"))
            finally:
                lib.hurray_file_entry_destroy(byref(e))
        return out

    def _metadata(self) -> dict[str, bytes]:
        """The file's metadata."""
        n = c_uint64()
        check(lib.hurray_file_reader_metadata_count(self._live(), byref(n)))
        out = {}
        k, v, kl, vl = c_void_p(), c_void_p(), c_uint64(), c_uint64()
        for i in range(n.value):
            check(lib.hurray_file_reader_metadata_get(self._reader, i, byref(k), byref(kl), byref(v), byref(vl)))
            out[bytes_at(k.value, kl.value).decode("utf-8")] = bytes_at(v.value, vl.value)
        return out

    def composite(self, name: str) -> Composite:
        """The composite stored under ``name`` (its members under ``name/role``)."""
        nb = name.encode("utf-8")
        c = c_void_p()
        s = lib.hurray_file_reader_read_composite(self._live(), nb, len(nb), byref(c))
        if s == ERR_NOT_FOUND:
            raise KeyError(name)
        check(s)
        return Composite._from_handle(c.value, keep=self._map, readonly=self._map is not None)  # type: ignore[arg-type]

    def verify(self) -> None:
        """Checks the structure and every checksum, payloads included, whatever this file's
        ``verify_payloads``: each payload's CRC32C is computed in windows of at most 1 MiB (a
        mapped file is checked in place), so a tensor of any size needs no more memory than
        that; sparse and paged tensors are then read and their indices checked. Raises
        ``HurrayError`` (``CORRUPT``, naming the tensor)."""
        check(lib.hurray_file_reader_verify(self._live()))
        check(lib.hurray_file_reader_verify_payloads(self._live()))

    # Each call on the native reader is made by one thread at a time; these do not call one
    # another (``get`` and iteration go through ``__getitem__``, ``__len__`` and ``tensor``).
    __len__ = _one_thread(__len__, keywords=True)
    __getitem__ = _one_thread(__getitem__, keywords=True)
    __contains__ = _one_thread(__contains__, keywords=True)
    tensor = _one_thread(tensor, keywords=True)
    names = _one_thread(names, keywords=True)
    metadata = property(_one_thread(_metadata, "metadata", keywords=True))
    composite = _one_thread(composite, keywords=True)
    verify = _one_thread(verify, keywords=True)

    def close(self) -> None:
        """Closes the reader (tensors already read stay valid). Idempotent."""
        r, self._reader = self._reader, None
        self._map = None
        if r:
            lib.hurray_file_reader_destroy(byref(c_void_p(r)))

    close = _one_thread(close, keywords=True)

    def __enter__(self) -> "File":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class FileWriter:
    """Writes an HRRYFILE at ``path`` atomically: the bytes go to a temporary file beside it,
    and ``finish()`` writes the index and trailer, syncs, and renames it over ``path``. A
    writer closed (or a ``with`` block left by an exception) without ``finish`` removes the
    temporary file and leaves ``path`` untouched.

    ``add(tensor, name=None)`` stores a tensor under its name (or ``name``; names are the
    container's keys: unique, 1–4096 UTF-8 bytes); ``add(composite)`` stores a composite's
    head under its name and each member under ``name/role``. ``metadata``: file metadata.
    ``min_payload_alignment``: 64 by default; 4096 gives page-aligned payloads.
    ``payload_checksums``: CRC32C per payload (default on). Errors: ``HurrayError``
    (``DUPLICATE_NAME``, ``INVALID_ARGUMENT``, ``TRANSPORT`` with ``__cause__`` when writing
    the file failed). Threads: one thread at a time: ``add``, ``finish`` or ``close`` while
    another thread is inside one of them raises ``RuntimeError`` at once (nothing is added).
    """

    # A FileWriter owns its native writer: a copy would be a second owner of it.
    __copy__ = _handle_owner_copy
    __deepcopy__ = _handle_owner_deepcopy
    __reduce_ex__ = _handle_owner_reduce

    def __init__(
        self,
        path: PathLike,
        *,
        metadata: MetadataArg = None,
        min_payload_alignment: int = 64,
        payload_checksums: bool = True,
    ):
        self._busy = _guard()
        self._path = os.path.abspath(os.fspath(path))
        d = os.path.dirname(self._path)
        fd, self._tmp = tempfile.mkstemp(prefix="." + os.path.basename(self._path) + ".", suffix=".tmp", dir=d)
        # mkstemp makes the file 0600; the finished file gets the mode a plain open() would
        # (0666 less the umask), as the Java writer and the CLI give it.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        self._fd: Optional[int] = fd
        self._error: Optional[BaseException] = None

        def write(_ctx: int, src: int, n: int, out: Any) -> int:
            try:
                k = os.write(fd, (ctypes.c_char * n).from_address(src))
                out[0] = k
                return 0
            except BaseException as e:  # never unwind into the library: report, move nothing
                self._error = e
                return ERR_TRANSPORT

        self._cb = WRITE_FN(write)  # kept alive as long as the writer
        t = Transport()
        t.write = self._cb
        opts = FileWriterOptions()
        check(lib.hurray_file_writer_options_init(byref(opts)))
        opts.min_payload_alignment = min_payload_alignment
        if not payload_checksums:
            opts.flags |= 1
        w = c_void_p()
        try:
            check(lib.hurray_file_writer_new(byref(t), byref(opts), byref(w)))
        except BaseException:
            self._discard()
            raise
        self._w: Optional[int] = w.value
        for k, v in _encode_meta(metadata):
            self._check(lib.hurray_file_writer_set_metadata(self._w, k, len(k), v, len(v)))

    def _check(self, status: int) -> None:
        if status < 0:
            cause, self._error = self._error, None
            err = error(status)
            if cause is not None:
                raise err from cause
            raise err

    def _live(self) -> int:
        if self._w is None:
            raise ValueError("file writer is closed or finished")
        return self._w

    def add(self, item: Union[Tensor, Composite], name: Optional[str] = None) -> None:
        """Adds a tensor (under ``name`` or its own) or a composite. The memory is read before
        this returns, or copied."""
        w = self._live()
        if isinstance(item, Composite):
            b = c_void_p(item._builder(name))
            try:
                self._check(lib.hurray_file_writer_add_composite(w, b))
            finally:
                lib.hurray_composite_builder_destroy(byref(b))
            return
        item._alive()
        desc, renamed = item._desc, None
        if name is not None and name != item.name:
            nb = name.encode("utf-8")
            r = c_void_p()
            check(lib.hurray_descriptor_with_name(desc, nb, len(nb), byref(r)))
            desc = renamed = r.value
        try:
            self._check(lib.hurray_file_writer_add_tensor(w, desc, item._slices(), len(item._bufs)))
        finally:
            if renamed:
                lib.hurray_descriptor_destroy(renamed)

    def finish(self) -> int:
        """Writes the index and trailer, syncs the file and renames it to ``path``; returns the
        file's size in bytes."""
        w = self._live()
        size = c_uint64()
        self._check(lib.hurray_file_writer_finish(w, byref(size)))
        self._destroy()
        fd, self._fd = self._fd, None
        try:
            os.fsync(fd)  # type: ignore[arg-type]
        finally:
            os.close(fd)  # type: ignore[arg-type]
        os.replace(self._tmp, self._path)
        try:
            dfd = os.open(os.path.dirname(self._path), os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            pass  # a directory that cannot be synced (some file systems): the rename stands
        return size.value

    def _destroy(self) -> None:
        w, self._w = self._w, None
        if w:
            lib.hurray_file_writer_destroy(byref(c_void_p(w)))

    def _discard(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass  # already unusable (the failure being reported); the file goes anyway
            try:
                os.unlink(self._tmp)
            except OSError:
                pass

    def close(self) -> None:
        """Abandons an unfinished file (the temporary file is removed). Idempotent."""
        self._destroy()
        self._discard()

    # One thread at a time on the native writer (and its transport's error slot).
    add = _one_thread(add, keywords=True)
    finish = _one_thread(finish, keywords=True)
    close = _one_thread(close, keywords=True)

    def __enter__(self) -> "FileWriter":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if exc_type is None and self._w is not None:
                self.finish()
        finally:
            self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
