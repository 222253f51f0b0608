"""Streams over the sans-I/O decoder and encoder (docs/spec/c-abi.md §Decoders and encoders).

No Python code runs inside a library call: the decoder says where the next bytes go and the
encoder which bytes are pending, and this module does the I/O. An exception from a socket or
file therefore never crosses the C boundary; it comes back from the call that did the I/O, as
the ``__cause__`` of a ``HurrayError``.
"""

from __future__ import annotations

import ctypes
from array import array
import os
import socket
import threading
from collections import deque
from ctypes import byref, c_size_t, c_void_p
from typing import Any, Iterator, Optional, Union

import numpy as np

from ._lib import (
    DECODE_END_OF_INPUT,
    END_OF_STREAM,
    ERR_SINK_CLOSED,
    ERR_TRANSPORT,
    FIELDS_SAME_EXCEPT_NAME,
    NEED_INPUT,
    DecodeResult,
    BufferSpec,
    DescriptorFields,
    DescriptorSpec,
    EncodeBatchResult,
    HurrayError,
    IoSlice,
    MEMORY,
    ReaderOptions,
    TensorSpec,
    WriterOptions,
    bytes_at,
    check,
    error,
    lib,
)
from . import _dtypes
from ._file import _check_limit, _handle_owner_copy, _handle_owner_deepcopy, _handle_owner_reduce
from ._threads import _busy_error, _guard, _one_thread
from ._tensor import _CLOSED, LAYOUTS, Composite, MetadataArg, Tensor, _encode_meta, _Handle, _Planned, _views

DEFAULT_BATCH_BYTES = 64 * 1024
DEFAULT_BUFFER_POOL_BYTES = 256 << 20
_FIELDS_OFFSET = DecodeResult.fields.offset
_PIECES = 16
_READ_AHEAD = 64 * 1024  # the decoder's read-ahead (docs/spec/c-abi.md §Decoders and encoders)
# Payloads up to this size are copied into the writer's batch area and staged together, one
# hurray_encoder_encode_batch call per batch; larger ones are staged at once, read in place.
_SMALL = 16 * 1024
_AREA_MAX = 1 << 20  # a batch_bytes above this stages (without sending) each MiB queued
_QUEUE = 256  # tensors per batch call at most
_SPEC = ctypes.sizeof(TensorSpec)
_DSPEC = ctypes.sizeof(DescriptorSpec)
# The queue's specs and then its payload slices lie in one buffer, written as u64 words: per
# slot, the word of its spec's name pointer (its length is the next) and of its slice's pointer
# (its length is the next).
_SLOT_WORDS = tuple(
    (i * (_SPEC // 8) + DescriptorSpec.name.offset // 8, (_QUEUE * _SPEC + i * ctypes.sizeof(IoSlice)) // 8)
    for i in range(_QUEUE)
)
_RESULTS = 64  # tensors per hurray_decoder_next_batch call at most
_RESULT_BYTES = ctypes.sizeof(DecodeResult)
# A batch's results are read as arrays of u64/u32 words (LP64 layout; test_abi checks the
# offsets): each result's tensor, buffer count and fields.flags, result 0's buffers pointer,
# and a HurrayDecodedBuffer's data pointer and byte_size (24 bytes: 3 words).
_RQ = _RESULT_BYTES // 8
_TENSOR_Q = DecodeResult.tensor.offset // 8
_INPUT_Q = DecodeResult.input.offset // 8  # the input region's pointer; its length is the next word
_COUNT_Q = (_FIELDS_OFFSET + DescriptorFields.buffer_count.offset) // 8
_BUFFERS_Q = DecodeResult.buffers.offset // 8
_RI = _RESULT_BYTES // 4
_FLAGS_I = (_FIELDS_OFFSET + DescriptorFields.flags.offset) // 4
_NAME_OFFSET = _FIELDS_OFFSET + DescriptorFields.name.offset  # name, then name_len
_NAME_Q = _NAME_OFFSET // 8  # the name pointer's word; its length is the next one
_LEDGER_MAX_PAYLOAD = 64 * 1024  # tensors this large are destroyed at once (their memory is pooled)
_memory = MEMORY
_handle_lock = threading.Lock()
_UNSET = object()
_new = object.__new__
_PP = ctypes.POINTER(c_void_p)
# Calls that touch at most this many bytes keep the GIL (lib.held, _lib._HELD); larger work
# (a checksum over a large payload, a large region's last bytes) releases it.
_HELD_MAX = 64 * 1024
held = lib.held


def _region(ptr: int, n: int) -> memoryview:
    return MEMORY[ptr : ptr + n]


def _gather(target: Any) -> Any:
    """A gathering write ``writev(views) -> int`` for sockets and fds (one system call for an
    item's pieces), or ``None``."""
    if isinstance(target, socket.socket):
        return target.sendmsg
    if isinstance(target, int):
        return lambda views: os.writev(target, views)
    return None


def _sink(target: Any) -> Any:
    """A function ``write(view) -> int`` (bytes accepted; 0 = closed) for a target."""
    if isinstance(target, socket.socket):
        return target.send
    if isinstance(target, int):
        return lambda mv: os.write(target, mv)
    if hasattr(target, "write"):
        w = target.write

        def write(mv: memoryview) -> int:
            n = w(mv)
            return len(mv) if n is None else n

        return write
    raise TypeError(f"cannot write a stream to {type(target).__name__}: give a socket, a file object or an fd")


class StreamWriter:
    """Writes a Hurray stream (docs/spec/stream.md): ``write`` tensors and composites, then
    ``finish`` (or leave a ``with`` block) to write the end marker.

    ``target``: ``None`` keeps the bytes in memory (``getvalue()``); a ``socket.socket``
    (``send``), a file object (``write``; raw files may accept fewer bytes, which is fine) or
    an ``int`` file descriptor (``os.write``). The writer never closes the target.
    ``metadata``: stream metadata (``str`` keys, ``str``/``bytes`` values), readable as
    ``StreamReader.metadata``. ``payload_checksums``: store a CRC32C per payload.
    ``batch_bytes``: small tensors are kept and sent together once this many bytes are pending
    (one system call per 64 KiB by default; ``flush()`` sends now). ``from_numpy`` tensors of a
    shape seen before with payloads up to 16 KiB are copied into a batch area and staged
    together, one library call per batch; payloads above 64 KiB are sent from the tensor's own
    memory without a copy, before ``write`` returns.

    Errors: ``HurrayError``. When the target raises, or accepts 0 bytes, the status is
    ``HURRAY_ERR_TRANSPORT`` (``__cause__`` is what it raised) or ``HURRAY_ERR_SINK_CLOSED``.
    If no byte of the failing item had been sent, the item is taken back (write it again
    later); otherwise the stream on the wire ends inside an item and the writer is poisoned:
    every later call raises ``HURRAY_ERR_POISONED`` (the four transport rules, stream.md
    §Transport rules). Threads: one thread at a time; a call while another thread is inside
    ``write``, ``flush``, ``finish`` or ``close`` raises ``RuntimeError`` (the writer is
    unchanged).
    """

    # It owns a native encoder or decoder: a copy would be a second owner of it.
    __copy__ = _handle_owner_copy
    __deepcopy__ = _handle_owner_deepcopy
    __reduce_ex__ = _handle_owner_reduce

    def __init__(
        self,
        target: Any = None,
        *,
        metadata: MetadataArg = None,
        payload_checksums: bool = False,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
    ):
        self._busy = _guard()
        self._memory: Optional[bytearray] = bytearray() if target is None else None
        if self._memory is not None:
            mem = self._memory

            def write_memory(mv: memoryview) -> int:
                mem.extend(mv)
                return len(mv)

            self._write = write_memory
            self._writev = None
        else:
            self._write = _sink(target)
            self._writev = _gather(target)
        opts = WriterOptions()
        check(lib.hurray_writer_options_init(byref(opts)))
        opts.flags = 1 if payload_checksums else 0
        e = c_void_p()
        check(lib.hurray_encoder_new(byref(opts), byref(e)))
        self._enc: Optional[int] = e.value
        self._sums = bool(payload_checksums)
        self._bres = EncodeBatchResult()
        self._bres_ref = byref(self._bres)
        # The state every encoder call reports into is the batch result's own (shared memory).
        self._state = self._bres.state
        self._state_ref = byref(self._state)
        # The queue of small tensors: their specs, payload slices, and an area holding their
        # payloads and names, so that write() may return before they are staged.
        self._qbuf = (ctypes.c_uint64 * (_QUEUE * (_SPEC + ctypes.sizeof(IoSlice)) // 8))()
        self._qspecs = (TensorSpec * _QUEUE).from_buffer(self._qbuf)
        self._qslices = (IoSlice * _QUEUE).from_buffer(self._qbuf, _QUEUE * _SPEC)
        for i in range(_QUEUE):
            self._qspecs[i].payloads = ctypes.addressof(self._qslices[i])
            self._qspecs[i].payload_count = 1
        self._qaddr = ctypes.addressof(self._qspecs)
        self._qspec_mv = memoryview(self._qbuf).cast("B")
        self._qwords = self._qspec_mv.cast("Q")
        # The plan whose descriptor spec each slot holds: a slot keeps it from batch to batch,
        # so a tensor of the plan its slot had last time writes only its name and payload.
        self._qplans: list = [None] * _QUEUE
        self._qn = 0
        self._area_cap = min(max(batch_bytes, 0), _AREA_MAX) + _SMALL + 4096
        self._area = (ctypes.c_char * self._area_cap)()
        self._area_mv = memoryview(self._area).cast("B")
        self._area_addr = ctypes.addressof(self._area)
        self._used = 0
        self._one = (IoSlice * 1)()
        self._scratch = ctypes.create_string_buffer(4096)
        self._scratch_len = c_size_t()
        self._pieces = (IoSlice * _PIECES)()
        self._count = c_size_t()
        self._batch = batch_bytes
        # batch_bytes less the bytes pending in the encoder, as of the last encoder call that
        # changed them: a small tensor queued past it stages and sends the batch.
        self._room = batch_bytes
        self._finished = False
        self._failed = False
        # Whether write() may queue a small tensor: the encoder is there, the stream is not
        # finished and no send failed (each write then goes to the encoder at once, which
        # refuses a poisoned stream with POISONED, or stages normally after a take-back).
        self._queue_ok = True
        if metadata:
            entries = _encode_meta(metadata)
            self._check(lib.hurray_encoder_set_metadata(self._enc, _views(entries), len(entries)))

    def _check(self, status: int) -> int:
        if status < 0:
            raise error(status)
        return status

    def _live(self) -> int:
        if self._enc is None:
            raise ValueError("writer is closed")
        return self._enc

    def write(self, item: Union[Tensor, Composite]) -> None:
        """Writes one tensor (its descriptor and buffers) or a whole composite. The tensor's
        memory is read before this returns or, for payloads up to 64 KiB, copied: the tensor
        may be changed or dropped afterwards."""
        busy = self._busy
        try:
            busy.pop()
        except IndexError:
            raise _busy_error(self, "write") from None
        try:
            if type(item) is _Planned and item._tpl and self._queue_ok:
                plan = item._plan
                size = plan[2]
                if size <= _SMALL:
                    # Queued (inline: once per small tensor): its descriptor spec (unless its
                    # slot holds it already), its payload and name copied to the area; no
                    # library call, no ctypes object.
                    nb = item._nb
                    nl = 0 if nb is None else len(nb)
                    i, used = self._qn, self._used
                    if i == _QUEUE or used + size + nl > self._area_cap:
                        self._stage()
                        i = used = 0
                    if self._qplans[i] is not plan:
                        self._slot(i, plan)
                    q = self._qwords
                    nk, pk = _SLOT_WORDS[i]
                    base = self._area_addr
                    q[pk] = base + used  # its length, the plan's size, came with the slot's plan
                    # The owner before the buffers (a close on another thread empties the
                    # buffers before it lets go of the owner), held while the bytes are copied.
                    keep = item._keep
                    if keep is None:
                        raise ValueError("tensor is closed")
                    if plan[3]:
                        self._area_mv[used : used + size] = keep.tobytes()  # cheaper than a buffer export
                    elif size:
                        bufs = item._bufs
                        if not bufs:
                            raise ValueError("tensor is closed")
                        ctypes.memmove(base + used, bufs[0][0], size)
                    used += size
                    if nb is None:
                        q[nk] = q[nk + 1] = 0
                    else:
                        self._area_mv[used : used + nl] = nb
                        q[nk] = base + used
                        q[nk + 1] = nl
                        used += nl
                    self._qn = i + 1
                    self._used = used
                    if used >= self._room:
                        self._stage()
                        self._send(take_back=True, listed=True)
                    return
            enc = self._enc
            if enc is None:
                raise ValueError("writer is closed")
            st = self._state
            if self._qn:
                self._stage()
            if isinstance(item, Composite):
                b = c_void_p(item._builder())
                try:
                    self._check(lib.hurray_encoder_encode_composite(enc, b, byref(st)))
                finally:
                    lib.hurray_composite_builder_destroy(byref(b))
            else:
                # The owners before the buffers, held until this call returns: a close on
                # another thread meanwhile (which empties the buffers before it lets go of the
                # owners) then cannot free memory the encoder copies or a borrowed payload's
                # send reads; the write either sends the tensor whole or finds it closed.
                owner = (item._handle, item._keep)
                tpl = item._tpl
                bufs = item._bufs
                if tpl and item._d == 0 and len(bufs) == 1:
                    s = self._encode_template(enc, item, tpl, bufs[0])
                elif len(bufs) == 1:
                    d = item._desc
                    if d is None:
                        raise ValueError("tensor is closed")
                    one = self._one[0]
                    one.ptr, one.len = bufs[0]
                    f = lib if self._sums and bufs[0][1] > _HELD_MAX else held
                    s = f.hurray_encoder_encode(enc, d, self._one, 1, self._state_ref)
                else:
                    d = item._desc
                    if d is None:
                        raise ValueError("tensor is closed")
                    f = lib if self._sums and sum(b[1] for b in bufs) > _HELD_MAX else held
                    s = f.hurray_encoder_encode(enc, d, item._slices(), len(bufs), self._state_ref)
                if s < 0:
                    raise error(s)
            if st.borrows_payloads or st.pending_bytes >= self._batch:
                self._send(take_back=True)
            else:
                self._room = self._batch - st.pending_bytes
        finally:
            busy.append(True)

    def _slot(self, i: int, plan: tuple) -> None:
        """Queue slot ``i`` takes ``plan``'s descriptor spec and payload size (it keeps them
        for the next tensors of that plan it holds)."""
        self._qspec_mv[i * _SPEC : i * _SPEC + _DSPEC] = plan[4]
        self._qwords[_SLOT_WORDS[i][1] + 1] = plan[2]
        self._qplans[i] = plan

    def _stage(self) -> None:
        """Stages every queued tensor with one hurray_encoder_encode_batch call (more only if
        the encoder stops early) and lists the pending output in ``_pieces``. The queue is
        empty afterwards, whatever happens: its tensors are staged, or the error says which
        one was refused (that one and the ones after it are dropped)."""
        n, self._qn, self._used = self._qn, 0, 0
        enc = self._live()
        r = self._bres
        done = 0
        while done < n:
            s = lib.hurray_encoder_encode_batch(enc, 0, self._qaddr + done * _SPEC, n - done, 0,
                                                self._pieces, _PIECES, self._bres_ref)
            if s < 0:
                raise error(s)
            done += r.encoded
            if done < n:  # the encoder stopped after an item that borrows: send it first
                self._count.value = r.piece_count
                self._send(take_back=True, listed=True)
        self._count.value = r.piece_count
        self._room = self._batch - r.state.pending_bytes

    def _encode_template(self, enc: int, item: Tensor, tpl: int, buf: tuple) -> int:
        """Encodes a ``from_numpy`` tensor of a known shape from its template descriptor
        ``tpl`` and name, its buffer ``buf`` read by the caller: two library calls and no
        descriptor made (docs/spec/c-abi.md, ``hurray_descriptor_encode_with_name``)."""
        one = self._one[0]
        one.ptr, one.len = buf
        f = lib if self._sums and one.len > _HELD_MAX else held
        nb = item._nb
        if nb is None:
            return f.hurray_encoder_encode(enc, tpl, self._one, 1, self._state_ref)
        scratch, n = self._scratch, self._scratch_len
        s = held.hurray_descriptor_encode_with_name(tpl, nb, len(nb), scratch, len(scratch), byref(n))
        if s == -5:  # BUFFER_TOO_SMALL: n is the size needed
            self._scratch = scratch = ctypes.create_string_buffer(n.value)
            s = held.hurray_descriptor_encode_with_name(tpl, nb, len(nb), scratch, len(scratch), byref(n))
        if s < 0:
            return s
        return f.hurray_encoder_encode_encoded(enc, scratch, n.value, self._one, 1, self._state_ref)

    @_one_thread
    def flush(self) -> None:
        """Sends every pending byte now (tensors queued by ``write`` included)."""
        if self._qn:
            self._stage()
            self._send(take_back=False, listed=True)
        else:
            self._send(take_back=False)

    def _send(self, take_back: bool, listed: bool = False) -> None:
        """Sends the pending output. ``listed``: ``_pieces``/``_count`` already list it."""
        enc = self._live()
        st = self._state
        pieces, count, write = self._pieces, self._count, self._write
        writev = self._writev
        while st.pending_bytes:
            if listed:
                listed = False
            else:
                self._check(held.hurray_encoder_output(enc, pieces, _PIECES, byref(count)))
            if writev is not None and count.value > 1:
                views = [_region(pieces[i].ptr, pieces[i].len) for i in range(count.value)]
                try:
                    n = writev(views)
                except BaseException as e:  # rule 3: report, then poison or take back
                    self._fail(ERR_TRANSPORT, f"the sink raised {type(e).__name__}: {e}", take_back, e)
                if not n:
                    self._fail(ERR_SINK_CLOSED, "the sink accepted 0 bytes (closed)", take_back, None)
                self._check(held.hurray_encoder_consume(enc, n, byref(st)))
                continue
            for i in range(count.value):
                p = pieces[i]
                view = _region(p.ptr, p.len)
                sent = 0
                while sent < p.len:
                    try:
                        n = write(view[sent:])
                    except BaseException as e:  # rule 3: report, then poison or take back
                        self._fail(ERR_TRANSPORT, f"the sink raised {type(e).__name__}: {e}", take_back, e)
                    if not n:
                        self._fail(ERR_SINK_CLOSED, "the sink accepted 0 bytes (closed)", take_back, None)
                    sent += n
                    self._check(held.hurray_encoder_consume(enc, n, byref(st)))
        self._failed = False  # everything pending went out
        self._queue_ok = not self._finished
        self._room = self._batch

    def _fail(self, status: int, message: str, take_back: bool, cause: Optional[BaseException]) -> None:
        self._failed = True
        self._queue_ok = False
        s = lib.hurray_encoder_abort(self._enc, 1 if take_back else 0, byref(self._state))
        if s < 0:
            message += "; the stream ends inside an item and the writer is poisoned"
        elif take_back:
            message += "; nothing of this item was sent (write it again)"
        err = HurrayError(status, message)
        if cause is not None:
            raise err from cause
        raise err

    def _finish(self) -> None:
        """Writes the end-of-stream marker and sends everything pending. Idempotent. After a
        failed send it may be called again (a writer that took its item back still works)."""
        if self._finished:
            return
        enc = self._live()
        if self._qn:
            self._stage()
        self._check(lib.hurray_encoder_finish(enc, byref(self._state)))
        self._send(take_back=True)
        self._finished = True
        self._queue_ok = False  # a write now goes to the encoder, which refuses it

    finish = _one_thread(_finish, "finish")

    def getvalue(self) -> bytes:
        """The bytes written so far (an in-memory writer only)."""
        if self._memory is None:
            raise ValueError("getvalue() is for a writer made without a target")
        return bytes(self._memory)

    @_one_thread
    def close(self) -> None:
        """Ends the stream (``finish``) unless it is finished or a send failed, then destroys
        the encoder. Raises what ``finish`` raises (the encoder is destroyed either way).
        Idempotent; the target stays open."""
        try:
            if self._enc is not None and not self._finished and not self._failed:
                self._finish()
        finally:
            self._destroy()

    def _destroy(self) -> None:
        self._queue_ok = False
        e, self._enc = self._enc, None
        if e:
            lib.hurray_encoder_destroy(byref(c_void_p(e)))

    def __enter__(self) -> "StreamWriter":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self._destroy()  # the block failed: do not end the stream as if it were complete

    def __del__(self) -> None:
        # No I/O from the garbage collector: an unfinished stream stays unfinished (its reader
        # sees TRUNCATED), as after a failure.
        try:
            self._destroy()
        except Exception:
            pass


class _Ledger:
    """Read tensors of small payloads whose last holder let go, destroyed together by one
    ``hurray_tensor_destroy_many`` call: the reader drains it before its next batch call (so
    their memory is back in the buffer pool before the next tensors are made), and whatever
    is left goes when the reader is closed or the ledger itself goes."""

    __slots__ = ("pending", "open")

    def __init__(self) -> None:
        self.pending: list[int] = []
        self.open = True

    def drain(self) -> None:
        p = self.pending
        k = len(p)
        if k:
            # Other threads may append while this runs: only the first k entries are taken.
            arr = array("Q", p[:k])
            del p[:k]
            held.hurray_tensor_destroy_many(ctypes.cast(arr.buffer_info()[0], _PP), k)

    def close(self) -> None:
        self.open = False
        self.drain()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class _LedgerHandle(_Handle):
    """A read tensor's handle that hands its tensor to the reader's ledger instead of
    destroying it with a call of its own (destroyed at once once the reader is closed)."""

    __slots__ = ("ledger",)

    def __init__(self, ptr: int, ledger: _Ledger):
        self.ptr = ptr
        self.ledger = ledger

    def __del__(self) -> None:
        p, self.ptr = self.ptr, 0
        if p:
            try:
                led = self.ledger
                if led.open:
                    led.pending.append(p)
                else:
                    lib.hurray_tensor_destroy(byref(c_void_p(p)))
            except Exception:
                pass


def _give_back(p: int, ledger: _Ledger) -> None:
    """Destroys read tensor ``p`` through ``ledger`` (at its next drain) or, once the reader
    is closed, at once."""
    if ledger.open:
        ledger.pending.append(p)
    else:
        lib.hurray_tensor_destroy(byref(c_void_p(p)))


class _Batch:
    """The tensors one ``hurray_decoder_next_batch`` call returned, owned together. Each of
    them holds the batch and its index in it; the batch holds their ``HurrayTensor*``s
    (``ptrs``) and gives back, when the last of its tensors is gone, every one still there,
    through the reader's ledger (one ``hurray_tensor_destroy_many`` per drain): no finalizer
    runs per tensor. A pointer leaves ``ptrs`` (0 in its place) when its tensor is closed, or
    needs a handle object of its own (a view, a capsule, a descriptor call; and the batch's
    last tensor when its payload is large, so that its memory goes back to the pool with it
    alone), which then owns it. The results and buffer table are copied once (``raw``,
    ``table``: the library reuses its arrays at the next call); the lists a tensor's
    buffers, name or fields need are made from them when first asked for."""

    __slots__ = ("ptrs", "led", "raw", "table", "counts", "_data", "_sizes", "_starts", "_names", "_fams",
                 "tail", "prev")

    def __del__(self) -> None:
        try:
            live = [p for p in self.ptrs if p]
            if live:
                led = self.led
                if led.open:
                    led.pending.extend(live)
                else:
                    arr = array("Q", live)
                    held.hurray_tensor_destroy_many(ctypes.cast(arr.buffer_info()[0], _PP), len(live))
        except Exception:
            pass

    def buffers(self, i: int) -> "list[tuple[int, int]]":
        """Tensor ``i``'s buffer table as ``(address, byte size)`` pairs."""
        data = self._data
        if data is None:
            # _data last: another thread that finds it set finds the others set too.
            words = memoryview(self.table).cast("Q")
            counts = self.counts
            if counts.count(1) == len(counts):
                self._starts = None  # one buffer each
            else:
                at, starts = 0, []
                for k in counts:
                    starts.append(at)
                    at += k
                self._starts = starts
            self._sizes = words[1::3].tolist()
            data = self._data = words[0::3].tolist()
        sizes, starts = self._sizes, self._starts
        if starts is None:
            return [(data[i], sizes[i])]
        at = starts[i]
        k = self.counts[i]
        return list(zip(data[at : at + k], sizes[at : at + k]))

    def names(self) -> "tuple[list[int], list[int]]":
        """Each tensor's name address (0: none) and length."""
        n = self._names
        if n is None:
            q = memoryview(self.raw).cast("Q")
            n = self._names = (q[_NAME_Q::_RQ].tolist(), q[_NAME_Q + 1::_RQ].tolist())
        return n

    def families(self) -> list:
        """Each tensor's ``[dtype, shape, layout]`` cache, one list shared by a run of tensors
        the decoder flagged as alike (``FIELDS_SAME_EXCEPT_NAME``), the run continuing from
        the batch before when that one's families were made first."""
        fams = self._fams
        if fams is None:
            flags = memoryview(self.raw).cast("I")[_FLAGS_I::_RI].tolist()
            prev = self.prev
            fam = prev[0] if prev is not None else None
            same = FIELDS_SAME_EXCEPT_NAME
            fams = []
            for fl in flags:
                if fam is None or not fl & same:
                    fam = [None, None, None]
                fams.append(fam)
            self.tail[0] = fam
            self._fams = fams
        return fams


class _Received(Tensor):
    """A tensor of a ``StreamReader`` batch: its batch (``_b``, which owns its
    ``HurrayTensor*`` until something needs a handle object) and its index there (``_i``),
    and nothing else until asked. Its fields come from the batch's copy of the decode
    results, its buffers and name from the batch's lists, its dtype, shape and layout from a
    cache shared by a run of alike tensors (``_fam``)."""

    _d = 0  # the descriptor is looked up through the handle if something needs it
    _keep = None
    _readonly = False

    # Properties, not __getattr__: a class with __getattr__ makes every attribute lookup on
    # its instances slower (and unspecialized), and a tensor's attributes are read per tensor.
    def _get_handle(self) -> Optional[_Handle]:
        # Moves the pointer out of the batch into a handle object on first use, which views
        # and capsules then hold. Locked: two threads must not both take the pointer.
        d = self.__dict__
        h = d.get("_handle", _UNSET)
        if h is _UNSET:
            with _handle_lock:
                h = d.get("_handle", _UNSET)
                if h is _UNSET:
                    b, i = self._b, self._i
                    p = b.ptrs[i]
                    b.ptrs[i] = 0
                    h = d["_handle"] = _LedgerHandle(p, b.led) if p else None
        return h

    def _set_handle(self, h: Optional[_Handle]) -> None:
        self.__dict__["_handle"] = h

    _handle = property(_get_handle, _set_handle)

    @property
    def _hp(self) -> int:
        """The ``HurrayTensor*`` while the batch still owns it, else 0."""
        return self._b.ptrs[self._i]

    def _get_bufs(self) -> list:
        d = self.__dict__
        v = d.get("_bufs")
        if v is None:
            v = d["_bufs"] = self._b.buffers(self._i)
        return v

    def _set_bufs(self, v: list) -> None:
        self.__dict__["_bufs"] = v

    _bufs = property(_get_bufs, _set_bufs)

    @property
    def _fam(self) -> list:
        b = self._b
        fams = b._fams
        if fams is None:
            fams = b.families()
        return fams[self._i]

    def __copy__(self) -> "Tensor":
        # The copy shares the handle object, never the batch's pointer (which would then be
        # given back twice).
        self._handle
        return super().__copy__()

    def close(self) -> None:
        d = self.__dict__
        d["_bufs"] = _CLOSED  # before the pointer is given back (see Tensor.close)
        with _handle_lock:
            p = 0
            if "_handle" not in d:
                b, i = self._b, self._i
                p = b.ptrs[i]
                b.ptrs[i] = 0
                d["_handle"] = None
        if p:
            _give_back(p, self._b.led)
        super().close()

    def _alive(self) -> None:
        if self._d is None:
            raise ValueError("tensor is closed")

    def _f(self) -> DescriptorFields:
        f = self._fields
        if f is None:
            self._alive()
            f = self._fields = DescriptorFields.from_buffer_copy(self._b.raw, self._i * _RESULT_BYTES + _FIELDS_OFFSET)
        return f

    @property
    def name(self) -> Optional[str]:
        """The name, or ``None``."""
        if self._d is None:
            raise ValueError("tensor is closed")
        b, i = self._b, self._i
        n = b._names
        if n is None:
            n = b.names()
        p = n[0][i]
        return str(_memory[p : p + n[1][i]], "utf-8") if p else None

    @property
    def dtype(self) -> _dtypes.DType:
        """The element type."""
        fam = self._fam
        v = fam[0]
        if v is None:
            v = fam[0] = _dtypes.BY_CODE[self._f().element_type]
        return v

    @property
    def shape(self) -> tuple[int, ...]:
        """The logical shape, outermost first."""
        fam = self._fam
        v = fam[1]
        if v is None:
            f = self._f()
            v = fam[1] = tuple(f.dims[i] for i in range(f.rank))
        return v

    @property
    def layout(self) -> str:
        """The layout's name (``"row-major"``, …)."""
        fam = self._fam
        v = fam[2]
        if v is None:
            v = fam[2] = LAYOUTS[self._f().layout]
        return v


def _scatter(src: Any) -> Any:
    """A scatter read ``readv(views) -> int`` (one system call filling the views in order) for
    sockets and fds, or ``None``."""
    if isinstance(src, socket.socket) and hasattr(src, "recvmsg_into"):
        recvmsg_into = src.recvmsg_into
        return lambda views: recvmsg_into(views)[0]
    if isinstance(src, int) and hasattr(os, "readv"):
        return lambda views: os.readv(src, views)
    return None


def _bad_count(method: str, n: Any, room: int) -> int:
    """An ``int`` subclass count within ``room``, else raises: a count the source's method
    cannot have read (negative, past the region, not an integer) would put the stream out of
    step, or past 2**64 wrap to a small one."""
    if isinstance(n, int) and not isinstance(n, bool):
        if 0 <= n <= room:
            return int(n)
        raise ValueError(f"the source's {method} returned {n} for a region of {room} bytes (a count 0..{room})")
    raise TypeError(f"the source's {method} returned {type(n).__name__} {n!r:.40}, not a byte count (an int 0..{room})")


def _source(src: Any) -> Any:
    """A function ``read(view) -> int`` (0 = end of input), or ``None`` for in-memory bytes."""
    if isinstance(src, socket.socket):
        return src.recv_into
    if isinstance(src, int):
        return lambda mv: os.readv(src, [mv])
    if hasattr(src, "readinto"):
        r = src.readinto

        def readinto(mv: memoryview) -> int:
            n = r(mv)
            if type(n) is int and 0 <= n <= len(mv):
                return n
            if n is None:
                raise BlockingIOError("the source has no bytes ready (non-blocking)")
            return _bad_count("readinto", n, len(mv))

        return readinto
    if hasattr(src, "read"):
        rd = src.read

        def read(mv: memoryview) -> int:
            b = rd(len(mv))
            if b is None:
                raise BlockingIOError("the source has no bytes ready (non-blocking)")
            if len(b) > len(mv):
                _bad_count("read", len(b), len(mv))
            mv[: len(b)] = b
            return len(b)

        return read
    raise TypeError(f"cannot read a stream from {type(src).__name__}: give bytes, a socket, a file object or an fd")


class StreamReader:
    """Reads a Hurray stream: iterate it for each tensor as its bytes arrive (composites come
    flat: the head, a tensor without buffers, then each member), or call ``items()`` for
    whole composites.

    ``source``: ``bytes``/``bytearray``/``memoryview`` (read in place), a ``socket.socket``
    (large payloads are read straight into the tensors' memory, each with the next frame
    header and descriptor in one ``recvmsg_into``), a binary file object
    (``readinto``, else ``read``) or an ``int`` file descriptor.
    ``max_tensor_bytes``/``max_descriptor_bytes``/``max_rank``: limits a hostile stream cannot
    pass (defaults as docs/spec/c-abi.md says: 64 GiB, 1 MiB, 32). ``require_checksums``:
    refuse payloads without CRC32C. ``buffer_pool_bytes``: memory of tensors that are gone
    (with every view and capsule of them) is reused for the next ones, up to this many bytes.

    Errors: ``HurrayError`` with the library's status (``TRUNCATED``, ``CORRUPT``, …; sticky),
    or ``HURRAY_ERR_TRANSPORT`` when the source raised (``__cause__``): then the reader is
    unchanged and the next call resumes where the stream stopped, mid-tensor included. A
    source's ``readinto`` returning anything but an ``int`` from 0 to the size of the view it
    was given (or ``read`` more bytes than asked for) is such an error, its cause a
    ``ValueError`` or ``TypeError`` naming the method and the count.
    Ownership: each tensor is the caller's and outlives the reader. Threads: one thread at a
    time; a call that needs the decoder while another thread is inside one raises
    ``RuntimeError`` (the reader is unchanged). Tensors may go to any thread.
    """

    # It owns a native encoder or decoder: a copy would be a second owner of it.
    __copy__ = _handle_owner_copy
    __deepcopy__ = _handle_owner_deepcopy
    __reduce_ex__ = _handle_owner_reduce

    def __init__(
        self,
        source: Any,
        *,
        max_tensor_bytes: Optional[int] = None,
        max_descriptor_bytes: Optional[int] = None,
        max_rank: Optional[int] = None,
        require_checksums: bool = False,
        buffer_pool_bytes: int = DEFAULT_BUFFER_POOL_BYTES,
    ):
        self._busy = _guard()
        if isinstance(source, (bytes, bytearray, memoryview)):
            self._data: Optional[memoryview] = memoryview(source).cast("B")
            # ctypes cannot take the address of a read-only buffer (bytes); numpy can.
            self._array = np.frombuffer(self._data, np.uint8)
            self._base = self._array.ctypes.data
            self._pos = 0
            self._read = None
            self._readv = None
        else:
            self._data = None
            self._read = _source(source)
            self._readv = _scatter(source)
        # ctypes would wrap an out-of-range integer silently (2**64 to 0, -1 to "unlimited").
        _check_limit("max_tensor_bytes", max_tensor_bytes, 64)
        _check_limit("max_descriptor_bytes", max_descriptor_bytes, 64)
        _check_limit("max_rank", max_rank, 32)
        _check_limit("buffer_pool_bytes", buffer_pool_bytes, 64)
        opts = ReaderOptions()
        check(lib.hurray_reader_options_init(byref(opts)))
        if max_tensor_bytes is not None:
            opts.max_tensor_bytes = max_tensor_bytes
        if max_descriptor_bytes is not None:
            opts.max_descriptor_bytes = max_descriptor_bytes
        if max_rank is not None:
            opts.max_rank = max_rank
        if require_checksums:
            opts.flags |= 1
        d = c_void_p()
        check(lib.hurray_decoder_new(byref(opts), buffer_pool_bytes, byref(d)))
        self._dec: Optional[int] = d.value
        self._result = DecodeResult()
        self._result_ref = byref(self._result)
        self._results = (DecodeResult * _RESULTS)()
        self._results_mv = memoryview(self._results).cast("B")
        self._results_q = self._results_mv.cast("Q")  # result 0's input region: words 1 and 2
        self._ledger = _Ledger()
        self._count = c_size_t()
        self._count_ref = byref(self._count)
        self._after = c_void_p()
        self._after_len = c_size_t()
        self._after_refs = (byref(self._after), byref(self._after_len))
        # Tensors a batch returned beyond the first, and the input region the decoder offered
        # after it (filled by the next read that needs bytes, so no read blocks while tensors
        # are ready).
        self._ready: "deque[Tensor]" = deque()
        self._region: Optional[tuple[int, int]] = None
        self._error: Optional[HurrayError] = None
        self._flags = 0
        self._metadata: Optional[dict[str, bytes]] = None
        self._done = False
        self._prev: Optional[Tensor] = None  # the last tensor items() made
        # The last batch's cell for its last tensor's dtype/shape/layout cache (_Batch.families).
        self._tail: Optional[list] = None

    def _fill(self, ptr: int, n: int) -> int:
        """Reads into the decoder's region; returns the count (0 = end of input)."""
        data = self._data
        if data is not None:
            k = min(n, len(data) - self._pos)
            if k:
                ctypes.memmove(ptr, self._base + self._pos, k)
                self._pos += k
            return k
        err, self._error = self._error, None
        if err is not None:
            raise err
        read = self._read
        view = _region(ptr, n)
        got = 0
        try:
            if n > _READ_AHEAD:
                # A region larger than the read-ahead is the rest of one payload, all of which
                # the decoder needs: fill it here instead of one decoder call per chunk. A
                # socket or fd fills it and then the region after it (the next frame header
                # and descriptor, hurray_decoder_input_after) with scatter reads, so a stream
                # of large tensors takes one read per tensor.
                readv = self._readv
                if readv is not None:
                    s = held.hurray_decoder_input_after(self._dec, *self._after_refs)
                    if s < 0:
                        raise error(s)
                    k = self._after_len.value
                    if k:
                        after = _region(self._after.value, k)  # type: ignore[arg-type]
                        while got < n:
                            k = readv([view[got:], after])
                            if not k:
                                break
                            got += k
                        return got
                got = read(view)  # type: ignore[misc]
                while 0 < got < n:
                    k = read(view[got:])  # type: ignore[misc]
                    if not k:
                        break
                    got += k
            else:
                got = read(view)  # type: ignore[misc]
        except HurrayError:
            raise
        except BaseException as e:
            failure = HurrayError(ERR_TRANSPORT, f"the source raised {type(e).__name__}: {e}; call again to resume")
            failure.__cause__ = e
            if not got:
                raise failure from e
            self._error = failure  # report the bytes that did arrive first; raise on the next read
        return got

    def _drive(self, fn: Any, *extra: Any) -> int:
        dec = self._dec
        if dec is None:
            raise ValueError("reader is closed")
        r = self._result
        ref = self._result_ref
        filled = 0
        while True:
            s = fn(dec, filled, self._flags, ref, *extra)
            if s != NEED_INPUT:
                if s < 0:
                    raise error(s)
                return s
            filled = self._fill(r.input, r.input_len)
            if filled == 0:
                self._flags = DECODE_END_OF_INPUT

    _drive_guarded = _one_thread(_drive, "items")

    @property
    def metadata(self) -> dict[str, bytes]:
        """The stream's metadata (``{}`` when it has none); reads the header if needed."""
        if self._metadata is None:
            self._header_guarded()
        return dict(self._metadata or {})

    def _header(self) -> None:
        self._drive(lib.hurray_decoder_next_header)
        r = self._result
        meta = {}
        for i in range(r.fields.metadata_count):
            m = r.metadata[i]
            meta[bytes_at(m.key, m.key_len).decode("utf-8")] = bytes_at(m.value, m.value_len)
        self._metadata = meta

    _header_guarded = _one_thread(_header, "metadata")

    @_one_thread
    def read(self) -> Optional[Tensor]:
        """The next tensor, or ``None`` at the end of the stream."""
        ready = self._ready
        if ready:
            return ready.popleft()
        if self._done:
            return None
        if self._metadata is None:
            self._header()
        dec = self._dec
        if dec is None:
            raise ValueError("reader is closed")
        results, count, rq = self._results, self._count, self._results_q
        if self._ledger.pending:
            self._ledger.drain()
        filled = 0
        region, self._region = self._region, None
        if region is not None:
            filled = self._fill(*region)
            if filled == 0:
                self._flags = DECODE_END_OF_INPUT
        while True:
            # It releases the GIL: a batch decodes up to _RESULTS tensors (and may checksum a
            # large payload), long enough for a sender thread's Python to run beside it.
            s = lib.hurray_decoder_next_batch(dec, filled, self._flags, results, _RESULTS, self._count_ref)
            if s != NEED_INPUT:
                break
            filled = self._fill(rq[_INPUT_Q], rq[_INPUT_Q + 1])
            if filled == 0:
                self._flags = DECODE_END_OF_INPUT
        if s < 0:
            raise error(s)
        if s == END_OF_STREAM:
            self._done = True
            return None
        ready.extend(self._take(count.value))
        if rq[_INPUT_Q]:
            self._region = (rq[_INPUT_Q], rq[_INPUT_Q + 1])
        return ready.popleft()

    def _take(self, n: int) -> "list[_Received]":
        """The ``n`` tensors of the last batch call: one ``_Batch`` holding a copy of the
        results and the buffer table, and per tensor one object holding the batch and its
        index (no ctypes objects, no library call, no finalizer)."""
        raw = self._results_mv[: n * _RESULT_BYTES].tobytes()
        q = memoryview(raw).cast("Q")
        b = _new(_Batch)
        b.ptrs = ptrs = q[_TENSOR_Q::_RQ].tolist()
        b.led = self._ledger
        b.raw = raw
        b.counts = counts = q[_COUNT_Q::_RQ].tolist()
        total = sum(counts)
        # Every result's buffers lie in one array, in order (docs/spec/c-abi.md, "Batches").
        b0 = q[_BUFFERS_Q]
        b.table = table = _memory[b0 : b0 + 24 * total].tobytes() if total else b""
        b._data = b._names = b._fams = None
        b.prev = self._tail
        b.tail = self._tail = [None]
        new, R = _new, _Received
        out = []
        append = out.append
        for i in range(n):
            t = new(R)
            t._b = b
            t._i = i
            append(t)
        # Only the last tensor of a batch can be large: it owns its pointer at once, so that
        # its memory goes back to the pool as soon as it goes, whatever its batch does.
        k = counts[-1]
        if k and sum(memoryview(table).cast("Q")[(total - k) * 3 + 1 :: 3]) >= _LEDGER_MAX_PAYLOAD:
            t.__dict__["_handle"] = _Handle(ptrs[-1])
            ptrs[-1] = 0
        self._prev = None
        return out

    def _tensor(self, r: DecodeResult) -> Tensor:
        f = DescriptorFields.from_buffer_copy(r, _FIELDS_OFFSET)
        n = f.buffer_count
        b = r.buffers
        if n == 1:
            b0 = b[0]
            bufs = [(b0.data or 0, b0.spec.byte_size)]
        else:
            bufs = [(b[i].data or 0, b[i].spec.byte_size) for i in range(n)]
        # The descriptor pointer is looked up only if a property needs it (Tensor._desc).
        t = Tensor._make(0, False, _Handle(r.tensor), bufs)
        t._fields = f
        prev = self._prev
        if prev is not None and f.flags & FIELDS_SAME_EXCEPT_NAME:
            # Same descriptor but the name: reuse the parsed fields instead of reading them.
            t._type, t._shape, t._layout = prev._type, prev._shape, prev._layout
        self._prev = t
        self._tail = None  # the next batch's first tensor was compared with this one
        return t

    def __iter__(self) -> Iterator[Tensor]:
        return self

    def __next__(self) -> Tensor:
        ready = self._ready
        if ready:
            return ready.popleft()
        t = self.read()
        if t is None:
            raise StopIteration
        return t

    def items(self) -> Iterator[Union[Tensor, Composite]]:
        """Each item whole: a ``Tensor``, or a ``Composite`` with its members (nested ones
        included). Do not mix with plain iteration inside one composite."""
        if self._metadata is None:
            self._header_guarded()
        ready = self._ready
        while ready:  # tensors a batch read ahead (a batch stops before a composite)
            yield ready.popleft()
        self._region = None  # an offered region left unfilled: next_item asks again
        comp = c_void_p()
        while not self._done:
            if self._drive_guarded(lib.hurray_decoder_next_item, byref(comp)) == END_OF_STREAM:
                self._done = True
                return
            if comp.value:
                c = Composite._from_handle(comp.value)
                comp.value = None
                yield c
            else:
                yield self._tensor(self._result)

    @_one_thread
    def close(self) -> None:
        """Destroys the decoder (tensors already read stay valid). Idempotent."""
        d, self._dec = self._dec, None
        self._prev = None
        self._region = None
        self._ready.clear()
        self._ledger.close()
        if d:
            lib.hurray_decoder_destroy(byref(c_void_p(d)))

    def __enter__(self) -> "StreamReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


__all__ = ["StreamReader", "StreamWriter"]
