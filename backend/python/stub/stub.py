# The stub process of triton-go's Python backend: one per model instance.
#
# The server (backend/python) starts it with four inherited descriptors:
#   3  the command socket: the server's commands (init, execute, finalize)
#      arrive here, read by the main thread, which answers on it
#   4  the event socket: what the stub says on its own (responses of response
#      senders, BLS requests, log lines, metrics; any thread, under a lock),
#      and the server's replies to its calls, read by a daemon thread. An
#      answer on the command socket counts the events sent before it, so the
#      server handles those first.
#   5  the "down" shared-memory file: tensors the server writes (inputs,
#      BLS outputs); the stub only reads it and marks blocks released
#   6  the "up" shared-memory file: tensors the stub writes (outputs, BLS
#      inputs); the stub allocates in it, the server marks blocks released
# Messages are a 4-byte little-endian length and a dict in marshal format
# (version 2); tensor bytes never cross a socket (see wire.go for the
# message catalogue).
#
# The stub exits when the command socket closes (the server went away), when
# its parent process changes, or on the server's "finalize" command.

import asyncio
import contextvars
import ctypes
import gc
import importlib.util
import json
import marshal
import mmap
import os
import pickle
import queue
import struct
import sys
import threading
import traceback
import weakref

FD_CMD, FD_EVENTS, FD_DOWN, FD_UP, FD_ANSWERS = 3, 4, 5, 6, 7
_HEADER = 64  # bytes before every shared-memory block: the state word, padding
_LEN = struct.Struct("<I")
_MAX_MESSAGE = 64 << 20  # the most a message may carry (the server's maxMessage); tensors go by shared memory


class _Channel:
    """Length-prefixed marshal messages read from fd rfd and written to
    wfd (a socket both ways, or two pipes). A shared channel is written
    from any thread, one message at a time, and counts what it sent."""

    def __init__(self, rfd, wfd, shared):
        self.rfd, self.wfd = rfd, wfd
        self.wlock = threading.Lock() if shared else None
        self.buf = bytearray(1 << 16)
        self.view = memoryview(self.buf)
        self.start = self.end = 0  # unread bytes: buf[start:end]
        self.sent = 0  # messages sent on a shared channel (answers say how many came before them)

    def send(self, msg):
        data = marshal.dumps(msg, 2)  # version 2: no references (the server's reader)
        if len(data) > _MAX_MESSAGE and self.wlock is not None:
            # The server would take it for a broken stub; the model's call fails instead.
            raise TritonModelException("a message of %d bytes for the server, which takes at most %d"
                                       % (len(data), _MAX_MESSAGE))
        if self.wlock is None:
            self._write(_LEN.pack(len(data)), data)
            return
        with self.wlock:
            self._write(_LEN.pack(len(data)), data)
            self.sent += 1

    def _write(self, head, data):
        k = os.writev(self.wfd, (head, data))
        if k < 4 + len(data):  # a partial write (a large message): the rest
            rest = memoryview(head + data)[k:]
            while rest:
                rest = rest[os.write(self.wfd, rest):]

    def _fill(self, need):
        """Reads until buf[start:] holds need bytes (one recv, usually)."""
        if self.start + need > len(self.buf):  # move the rest to the front, grow if need be
            rest = self.buf[self.start:self.end]
            if need > len(self.buf):
                self.buf = bytearray(need)
                self.view = memoryview(self.buf)
            self.buf[:len(rest)] = rest
            self.start, self.end = 0, len(rest)
        while self.end - self.start < need:
            k = os.readv(self.rfd, (self.view[self.end:],))
            if k == 0:
                raise EOFError("the server closed the connection")
            self.end += k

    def recv(self):
        if self.end - self.start < 4:
            self._fill(4)  # reads what is there: the whole message, usually
        (n,) = _LEN.unpack_from(self.buf, self.start)
        if self.end - self.start < 4 + n:
            self._fill(4 + n)
        at = self.start + 4
        msg = marshal.loads(self.view[at:at + n])
        self.start = at + n
        if self.start == self.end:
            self.start = self.end = 0
        return msg


class _Region:
    """A shared-memory file, mapped as large as it is (remapped when the
    writer has grown it). Old mappings stay alive while views use them."""

    def __init__(self, fd):
        self.fd = fd
        self.mm = self.mv = None
        self.size = 0
        self.maps = {}  # id of each mapping still alive -> (weak reference to it, its address), for offset_of
        self._remap()

    def _remap(self):
        size = os.fstat(self.fd).st_size
        if size:
            self.mm = mmap.mmap(self.fd, size)
            self.mv = memoryview(self.mm)
            self.size = size
            c = ctypes.c_char.from_buffer(self.mm)
            key = id(self.mm)
            # An old mapping lives while views of it do, then leaves maps.
            self.maps[key] = (weakref.ref(self.mm, lambda _, k=key: self.maps.pop(k, None)), ctypes.addressof(c))
            del c  # an export left alive would keep the mapping from closing

    def offset_of(self, a):
        """The offset in the region of array a's data when a is C-contiguous
        and a view of a mapping of the region (an input, a slice of one),
        else None."""
        if not a.flags.c_contiguous:
            return None
        b = a.base
        while isinstance(b, np.ndarray):
            b = b.base
        if isinstance(b, _PickleBuffer):
            b = b.raw().obj
        if isinstance(b, memoryview):
            b = b.obj
        m = self.maps.get(id(b))  # numpy keeps the mapping itself as the base of a view of it
        if m is None or m[0]() is not b:
            return None
        off = a.__array_interface__["data"][0] - m[1]
        return off if 0 <= off and off + a.nbytes <= len(b) else None

    def view(self, off, n):
        if off + n > self.size:
            self._remap()
            if off + n > self.size:
                raise RuntimeError("shared memory block %d+%d lies outside the region" % (off, n))
        return self.mv[off:off + n]

    def release(self, off):
        """Gives the block whose data starts at off back to its writer: one
        store of the state word's low byte (the writer stores 1). Not
        struct.pack_into, which zero-fills its target before it writes the
        value: the writer could see the first zero, reuse the block, and
        have its new state word erased by the second write."""
        self.view(off - _HEADER, 1)[0] = 0


class _UpRegion(_Region):
    """The region the stub allocates in: first fit among the live blocks;
    the server releases a block by zeroing its state word. It grows in
    steps of `growth` bytes up to `limit`."""

    def __init__(self, fd, growth, limit):
        self.growth, self.limit = growth, limit
        self.lock = threading.Lock()
        self.live = []  # [offset of the header, size incl. header], by offset
        super().__init__(fd)

    def alloc(self, n):
        need = _HEADER + ((n + 63) & ~63)
        with self.lock:
            mm, live = self.mm, self.live
            while live and not mm[live[0][0]]:  # released first, the usual case: the cheap check
                del live[0]
            if live:  # drop the other blocks the server released (state word 0)
                live = self.live = [b for b in live if mm[b[0]]]
            off, at = 0, len(live)
            if live:
                for i, (start, size) in enumerate(live):
                    if start - off >= need:
                        at = i
                        break
                    off = start + size
            if off + need > self.size:
                if off + need > self.limit:
                    raise MemoryError(
                        "a block of %d bytes does not fit in the stub's shared memory (limit %d bytes, %d in use)"
                        % (n, self.limit, sum(b[1] for b in live)))
                want = max(off + need, self.size + self.growth, 2 * self.size)
                want = (want + self.growth - 1) // self.growth * self.growth
                os.ftruncate(self.fd, min(want, self.limit))
                self._remap()
                mm = self.mm
            mm[off] = 1  # the state word: in use
            live.insert(at, (off, need))
            return off + _HEADER, self.mv[off + _HEADER:off + _HEADER + n]


# Set by main (importing this file has no side effects: benchmarks and
# tests import it to run a model's execute directly).
cmd = events = down = None
up = None  # _UpRegion, made by the "init" command (it carries the limits)

# ---------------------------------------------------------------------------
# The module model.py imports.

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
try:
    import numpy as np
    import triton_python_backend_utils as pb_utils
except ImportError as e:  # reported by the answer to "init"
    np = pb_utils = None
    _numpy_error = "%s: %s" % (type(e).__name__, e)

_DTYPES = {  # Triton data type name → (numpy dtype, TRITONSERVER_DataType)
    "BOOL": ("bool", 1), "UINT8": ("uint8", 2), "UINT16": ("uint16", 3), "UINT32": ("uint32", 4),
    "UINT64": ("uint64", 5), "INT8": ("int8", 6), "INT16": ("int16", 7), "INT32": ("int32", 8),
    "INT64": ("int64", 9), "FP16": ("float16", 10), "FP32": ("float32", 11), "FP64": ("float64", 12),
    "BYTES": ("object", 13), "BF16": ("uint16", 14),
}
_TRITON_INT = {k: v[1] for k, v in _DTYPES.items()}
_NUMPY_NAME = {}  # numpy dtype → Triton name (filled once numpy is there)
_NUMPY_DTYPE = {}  # Triton name → numpy dtype (BF16: uint16)


def _numpy_names():
    for name, (dt, _) in _DTYPES.items():
        _NUMPY_DTYPE[name] = np.dtype(dt)
        if name not in ("BYTES", "BF16"):
            _NUMPY_NAME[np.dtype(dt)] = name


_state = {"in_execute": False, "answering": False, "finalizing": False, "auto_complete": False, "instance": "", "model": "", "path": ""}
# The id of the batch a BLS call belongs to: its id, not the batch, which an
# event loop made during an execute would keep in the context it copies
# (and _hold_inputs would count as kept).
_batch = contextvars.ContextVar("triton_batch", default=None)


class TritonModelException(Exception):
    """An error of the Python backend's own API, raised to model code."""


class TritonError:
    """An error of a response: a message and one of Triton's codes."""
    UNKNOWN, INTERNAL, NOT_FOUND, INVALID_ARG, UNAVAILABLE, UNSUPPORTED, ALREADY_EXISTS, CANCELLED = range(8)

    def __init__(self, message, code=1):
        self._message, self._code = str(message), int(code)

    def code(self):
        return self._code

    def message(self):
        return self._message

    def __repr__(self):
        return "TritonError(%r, %d)" % (self._message, self._code)


class Tensor:
    """A named tensor: a numpy array, or bytes in shared memory."""
    __slots__ = ("_name", "_array", "_dtype", "_shape", "_raw", "__weakref__")

    def __init__(self, name, array, _dtype=None):
        if not isinstance(name, str):
            raise TypeError("Tensor(): the name must be a str, not %s" % type(name).__name__)  # pybind's TypeError in Triton
        if name == "":
            raise TritonModelException("Tensor name cannot be an empty string.")
        self._name = name
        self._raw = None
        if _dtype is not None:  # raw BF16 from the server or DLPack
            self._array, self._dtype, self._shape = array, _dtype, list(array.shape)
            return
        if not isinstance(array, np.ndarray):
            array = np.asarray(array)
        if array.dtype.kind in "OSU":
            self._dtype = "BYTES"
            if array.dtype.kind == "U":
                array = array.astype(np.object_)
        else:
            self._dtype = _NUMPY_NAME.get(array.dtype)
            if self._dtype is None:
                raise TritonModelException("NumPy dtype is not supported.")
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        self._array, self._shape = array, list(array.shape)

    @staticmethod
    def _from_wire(name, dtype, shape, data):
        """A tensor over bytes the server wrote (a view where the layout allows)."""
        t = _new_tensor(Tensor)
        t._name, t._dtype, t._shape, t._raw, t._array = name, dtype, shape, data, None
        return t

    def name(self):
        return self._name

    def triton_dtype(self):
        return _TRITON_INT[self._dtype]

    def shape(self):
        return list(self._shape)

    def is_cpu(self):
        return True

    def as_numpy(self):
        if self._array is None:
            if self._dtype == "BYTES":
                self._array = _decode_bytes(self._raw).reshape(self._shape)
            else:
                self._array = np.ndarray(self._shape, _NUMPY_DTYPE[self._dtype], _PickleBuffer(self._raw))
        if self._dtype == "BF16":
            raise TritonModelException(
                "Tensor dtype is BF16 and cannot be converted to NumPy. Use to_dlpack() and from_dlpack() instead.")
        return self._array

    def _bytes(self):
        """The tensor's bytes as the server reads them."""
        if self._raw is not None:
            return self._raw
        if self._dtype == "BYTES":
            return _encode_bytes(self._array)
        return memoryview(self._array).cast("B") if self._array.size else b""

    def to_dlpack(self):
        if self._dtype == "BYTES":
            raise TritonModelException("DLPack does not have support for string tensors.")
        return self.__dlpack__()

    def __dlpack__(self, stream=None):
        if self._dtype == "BF16":
            # numpy has no bfloat16: export the bits as uint16, then name
            # them bfloat16 in the capsule before anyone consumes it.
            if self._array is None:
                self._array = np.ndarray(self._shape, np.uint16, _PickleBuffer(self._raw))
            capsule = _exportable(self._array).__dlpack__()
            _dl_set_dtype(capsule, _DL_BFLOAT)
            return capsule
        return _exportable(self.as_numpy()).__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU

    @staticmethod
    def from_dlpack(name, obj):
        if not (hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__")) and type(obj).__name__ != "PyCapsule":
            raise TritonModelException(
                "Provided tensor is not supported. Tensor must be a DLPack capsule or have "
                "`__dlpack__` and `__dlpack_device__` attributes")
        try:
            if type(obj).__name__ == "PyCapsule":
                capsule = obj
            else:
                if obj.__dlpack_device__()[0] != 1:  # kDLCPU
                    raise BufferError("Unsupported device in DLTensor.")
                capsule = obj.__dlpack__()
            # numpy has no bfloat16: take the bits as uint16.
            bf16 = _dl_dtype(capsule) == (_DL_BFLOAT, 16, 1)
            if bf16:
                _dl_set_dtype(capsule, _DL_UINT)
            array = np.from_dlpack(_Capsule(capsule))
        except BufferError as e:
            raise TritonModelException(str(e))
        if not array.flags.c_contiguous:
            raise TritonModelException(
                "DLPack tensor is not contiguous. Only contiguous DLPack tensors that are stored in C-Order are supported.")
        return Tensor(name, array, "BF16") if bf16 else Tensor(name, array)

    def __repr__(self):
        return "Tensor(%r, %s, %s)" % (self._name, self._dtype, self._shape)


_new_tensor = object.__new__
_EMPTY = memoryview(b"")
# An array over a view of shared memory is made over a PickleBuffer of it,
# which numpy keeps as the array's base and which holds the view: while the
# array (or any view of it) lives, so does the view, which is how the stub
# knows that the model still holds a batch's inputs (_hold_inputs). Over
# the view itself, numpy would keep only the mapping.
_PickleBuffer = pickle.PickleBuffer


def _exportable(a):
    """a, or a copy of it when it is read-only (an array the model made from
    another DLPack tensor, which numpy marks so): numpy exports only
    writable arrays through DLPack."""
    return a if a.flags.writeable else a.copy()


_DL_UINT, _DL_BFLOAT = 1, 4  # DLDataTypeCode kDLUInt, kDLBfloat
_DL_DTYPE_OFFSET = 20  # DLTensor: data (8 bytes), device (8), ndim (4), then dtype {code u8, bits u8, lanes u16}


def _dl_dtype_address(capsule):
    """The address of the dtype of the tensor in an unconsumed DLPack
    capsule ("dltensor")."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get(capsule, b"dltensor") + _DL_DTYPE_OFFSET  # raises ValueError for a consumed capsule


def _dl_dtype(capsule):
    """(code, bits, lanes) of the tensor of an unconsumed DLPack capsule."""
    return struct.unpack("<BBH", ctypes.string_at(_dl_dtype_address(capsule), 4))


def _dl_set_dtype(capsule, code):
    """Changes the type code of the tensor of an unconsumed DLPack capsule
    (its bits and lanes stay): bfloat16 and uint16 name the same bits."""
    ctypes.c_uint8.from_address(_dl_dtype_address(capsule)).value = code


class _Capsule:
    """Gives a bare DLPack capsule the protocol numpy.from_dlpack wants."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def _decode_bytes(buf):
    """BYTES elements as a 1-D object array of bytes (pb_utils' decoder),
    a malformed buffer as the error Triton's as_numpy raises."""
    try:
        return pb_utils.deserialize_bytes_tensor(buf)
    except ValueError as e:
        raise TritonModelException(str(e))


def _encode_bytes(array):
    out = pb_utils.serialize_byte_tensor(array)
    if out is None:
        raise TritonModelException("NumPy dtype is not supported.")
    return out


def _check_parameters(parameters):
    if parameters is None:
        return {}
    if isinstance(parameters, str):
        parameters = json.loads(parameters)
    if not isinstance(parameters, dict):
        raise TritonModelException("Parameters must be a dictionary.")
    for k, v in parameters.items():
        if not isinstance(k, str):
            raise TritonModelException("Expect parameters keys to have type str, found type %s" % type(k))
        if not isinstance(v, (bool, int, str)):
            raise TritonModelException("Expect parameters values to have type bool/int/str, found type %s" % type(v))
    return dict(parameters)


class InferenceResponse:
    """The response to one request: output tensors, or an error."""

    def __init__(self, output_tensors=None, error=None, parameters=None):
        output_tensors = list(output_tensors or [])
        for t in output_tensors:
            if t is None:
                raise TritonModelException("Output tensor for inference response should not be empty.")
        self._tensors, self._error = output_tensors, error
        self._parameters = _check_parameters(parameters)

    def output_tensors(self):
        return self._tensors

    def has_error(self):
        return self._error is not None

    def error(self):
        return self._error

    def parameters(self):
        return json.dumps(self._parameters)


def _response_parts(resp, wanted):
    """A response's output tensors the server wants (None: none), its error
    as (message, code) and its parameters (None: none)."""
    if not isinstance(resp, InferenceResponse):
        raise TritonModelException(
            "Expected an 'InferenceResponse' object in the execute function return list, found type '%s'." % type(resp))
    params = resp._parameters or None
    err = resp._error
    if err is not None:
        if isinstance(err, TritonError):
            return None, (err.message(), err.code()), params
        return None, (str(err), TritonError.INTERNAL), params
    tensors = resp._tensors
    if wanted is not None:
        for t in tensors:
            if t._name not in wanted:
                tensors = [t for t in tensors if t._name in wanted]
                break
    return tensors or None, None, params


def _wire_response(resp, wanted):
    """A response as the server reads it: (outputs, error, params), the
    outputs it wants written into one block of shared memory."""
    tensors, err, params = _response_parts(resp, wanted)
    return (_write_tensors(tensors)[0] if tensors else None), err, params  # a copy: send returns, the model goes on


_BY_REFERENCE = 1 << 16  # a tensor this large that is a view of an input goes by reference (_write_tensors)


def _write_tensors(tensors, by_reference=False):
    """Writes tensors into one block of the stub's region; their wire form
    and the block's offset (None when it holds nothing). With by_reference
    (execute's returned responses and its own BLS calls, which the server
    is done with before the execute's inputs go back, and whose data the
    model no longer touches), a large tensor that is a view of the
    server's region, an input passed on or a slice of one, is not copied:
    its wire form names that region."""
    parts, total, wire = [], 0, [None] * len(tensors)
    for i, t in enumerate(tensors):
        p = t._raw
        if p is None:
            a = t._array
            if t._dtype == "BYTES":
                p = _encode_bytes(a)
            elif a.nbytes <= 4096:
                p = a.tobytes()  # small: a copy costs less than a cast
            else:
                if by_reference and a.nbytes >= _BY_REFERENCE:
                    off = down.offset_of(a)
                    if off is not None:
                        wire[i] = (t._name, t._dtype, t._shape, off, a.nbytes, True)
                        continue
                p = memoryview(a).cast("B")
        elif by_reference and type(p) is memoryview and p.nbytes >= _BY_REFERENCE:
            off = down.offset_of(np.frombuffer(p, np.uint8))  # an input tensor passed on as it is
            if off is not None:
                wire[i] = (t._name, t._dtype, t._shape, off, p.nbytes, True)
                continue
        n = len(p) if type(p) is bytes else p.nbytes
        parts.append((i, p, n, total))
        total += (n + 63) & ~63
    if not parts:
        return wire, None
    base, block = up.alloc(total)
    for i, p, n, o in parts:
        if n:
            block[o:o + n] = p
        t = tensors[i]
        wire[i] = (t._name, t._dtype, t._shape, base + o, n)
    return wire, base


def _read_tensors(wire, copy):
    """Tensors the server wrote: views of shared memory, or copies when the
    block is released at once (BLS outputs)."""
    out = []
    for name, dtype, shape, off, n in wire:
        data = down.view(off, n) if n else memoryview(b"")
        if copy:
            data = memoryview(bytearray(data))  # writable, as the model's own arrays (to_dlpack needs it)
        out.append(Tensor._from_wire(name, dtype, shape, data))
    return out


class _Unanswered:
    """Held by a request that execute returned without answering (None in
    its list, no list, or any request of a decoupled model) and by its
    response sender, until a final response is sent. When both are freed
    before that, nothing can answer the request any more: the server is
    told ("dropped"), and fails it instead of waiting for ever."""
    __slots__ = ("batch", "index", "answered")

    def __init__(self, batch, index):
        self.batch, self.index, self.answered = batch, index, False

    def __del__(self):
        if not self.answered:
            _dropped.put(self)  # not events.send: the collector may run this where a lock is held


def _watch_unanswered(batch, requests, indices):
    """Gives the requests at indices, which execute left unanswered, an
    _Unanswered (rescheduled ones and those whose sender is closed excepted)."""
    for i in indices:
        if batch.resched and i in batch.resched:
            continue
        q, tok = requests[i], _Unanswered(batch.id, i)
        s = q._sender
        if s is not None:
            with s._lock:
                if s._closed:
                    continue
                s._unanswered = tok
        q._unanswered = tok


class _Batch:
    """One execute command: its id, where the server raises its requests'
    cancellation flags, and the block holding its responses' outputs. Its
    requests point to it, not it to them, so that a batch's objects are
    freed as soon as they are done with, not left to the cycle collector."""
    __slots__ = ("id", "flags_off", "block", "resched", "failed", "views", "__weakref__")

    def __init__(self, id, flags_off):
        self.id, self.flags_off, self.block, self.resched, self.failed = id, flags_off, None, None, False
        self.views = None  # the inputs' views of shared memory, until execute returns (_hold_inputs)

    def cancelled(self, i):
        return down.view(self.flags_off + 4 * i, 1)[0] != 0


def _requests(batch, wire):
    """The requests of an execute command, their inputs views of the shared
    memory the server wrote them to."""
    new, tensor, view, model = InferenceRequest.__new__, _new_tensor, down.view, _state["model"]
    reqs, views = [], []
    batch.views = views
    for i, (rid, corr, flags, timeout, params, outputs, wired) in enumerate(wire):
        q = new(InferenceRequest)
        q._batch, q._index, q._sender, q._model, q._version, q._trace = batch, i, None, model, -1, None
        q._id, q._corr, q._flags, q._timeout, q._parameters = rid, corr, flags, timeout, params or {}
        q._wanted = q._outputs = outputs
        q._inputs = inputs = []
        for name, dtype, shape, off, n in wired:
            t = tensor(Tensor)
            if n:
                v = view(off, n)
                views.append(v)
            else:
                v = _EMPTY
            t._name, t._dtype, t._shape, t._raw, t._array = name, dtype, shape, v, None
            inputs.append(t)
        reqs.append(q)
    return reqs


class InferenceResponseSender:
    """Sends the responses of one request (decoupled models, or one response
    sent late by a default model).

    A decoupled model's sender has credits: how many more responses the
    server takes now. It starts with the window the server gave at init,
    spends one a response and gets them back as the server hands the
    responses on to their consumer ("credit" messages), so that a consumer
    that reads slowly holds back the sends of its own request only, not
    the stub's other requests nor its messages, and the server buffers
    a bounded number of responses for it."""

    def __init__(self, batch, index, wanted):
        self._batch, self._index, self._wanted = batch, index, wanted
        self._sent, self._closed = 0, False
        self._unanswered = None  # _Unanswered, once execute has returned without answering the request
        self._lock = threading.Lock()
        self._credits, self._broken = _send_window, None
        if _decoupled and _send_window:
            self._room = threading.Condition(self._lock)
            _senders.add(self)

    def send(self, response=None, flags=0):
        if flags not in (0, pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL):
            raise TritonModelException("Unable to send response. Unsupported flag provided.")
        if flags == 0 and response is None:
            raise TritonModelException("Inference Response object must be provided when the response flags is set to zero.")
        with self._lock:
            if self._closed or self._batch.failed:
                raise TritonModelException("Unable to send response. Response sender has been closed.")
            if not _decoupled:
                if response is not None and self._sent:
                    raise TritonModelException("Unable to send response. Non-decoupled model cannot send more than one response.")
                if response is None and not self._sent:
                    raise TritonModelException(
                        "Unable to send response. Non-decoupled model cannot send complete final before sending a response.")
            if _decoupled and _send_window:
                while self._credits <= 0 and self._broken is None:
                    self._room.wait()
                if self._broken is not None:
                    raise TritonModelException("Unable to send response. " + self._broken)
                self._credits -= 1
            msg = {"op": "send", "batch": self._batch.id, "req": self._index, "final": bool(flags)}
            if response is not None:
                msg["response"] = _wire_response(response, self._wanted)
                self._sent += 1
            if flags:
                self._closed = True
                if self._unanswered is not None:
                    self._unanswered.answered = True
                _senders.discard(self)
            events.send(msg)

    def _close(self, why):
        """Closes the sender: of a request the model rescheduled, or whose
        execute raised (the server has answered it with the error). A send
        waiting for credits, and every later one, raises with why."""
        with self._lock:
            self._closed = True
            self._broken = why
            if _decoupled and _send_window:
                self._room.notify_all()
        _senders.discard(self)

    def _credit(self, n):
        with self._lock:
            self._credits += n
            self._room.notify_all()

    def _break(self, message):
        with self._lock:
            self._broken = message
            self._room.notify_all()

    def is_cancelled(self):
        return self._batch.cancelled(self._index)


class InferenceTrace:
    """The trace of a request (a context for OpenTelemetry, when traced)."""

    def __init__(self, context=None):
        self._context = context

    def get_context(self, mode="opentelemetry"):
        return self._context


class PreferredMemory:
    """Where a BLS request wants its outputs (always CPU memory here)."""

    def __init__(self, preferred_memory_type=0, preferred_device_id=0):
        self.preferred_memory_type, self.preferred_device_id = preferred_memory_type, preferred_device_id


class InferenceRequest:
    """A request: one the server hands to execute, or a BLS request the
    model builds to call another model of the server."""
    __slots__ = ("_id", "_corr", "_inputs", "_outputs", "_model", "_version", "_flags", "_timeout",
                 "_parameters", "_trace", "_batch", "_index", "_sender", "_wanted", "__dict__", "__weakref__")

    def __init__(self, request_id="", correlation_id=0, inputs=None, requested_output_names=None,
                 model_name=None, model_version=-1, flags=0, timeout=0, preferred_memory=None,
                 trace=None, parameters=None):
        if inputs is None or requested_output_names is None or model_name is None:
            raise TypeError("InferenceRequest needs inputs, requested_output_names and model_name")
        if not isinstance(correlation_id, (int, str)) or isinstance(correlation_id, bool):
            raise TritonModelException("Correlation ID must be integer or string")
        inputs = list(inputs)
        for t in inputs:
            if t is None:
                raise TritonModelException(
                    "Input tensor for request with id '%s' and model name '%s' should not be empty." % (request_id, model_name))
        names = list(requested_output_names)
        for n in names:
            if n == "":
                raise TritonModelException(
                    "Requested output name for request with id '%s' and model name '%s' should not be empty." % (request_id, model_name))
        self._id, self._corr, self._inputs, self._outputs = request_id, correlation_id, inputs, names
        self._model, self._version, self._flags, self._timeout = model_name, int(model_version), int(flags), int(timeout)
        self._parameters = _check_parameters(parameters)
        self._trace = trace or InferenceTrace()
        self._batch, self._index, self._sender, self._wanted = None, 0, None, None

    def inputs(self):
        return self._inputs

    def request_id(self):
        return self._id

    def correlation_id(self):
        return self._corr

    def flags(self):
        return self._flags

    def set_flags(self, flags):
        self._flags = int(flags)

    def timeout(self):
        return self._timeout

    def parameters(self):
        return json.dumps(self._parameters)

    def requested_output_names(self):
        return set(self._outputs)  # a set, as Triton's (a std::set)

    def trace(self):
        if self._trace is None:
            self._trace = InferenceTrace()
        return self._trace

    def get_response_sender(self):
        if self._batch is None:
            raise TritonModelException("Only requests passed to execute have a response sender.")
        if self._sender is None:
            self._sender = InferenceResponseSender(self._batch, self._index, self._wanted)
            self._sender._unanswered = self.__dict__.get("_unanswered")
        return self._sender

    def is_cancelled(self):
        return self._batch is not None and self._batch.cancelled(self._index)

    def set_release_flags(self, flags):
        """TRITONSERVER_REQUEST_RELEASE_RESCHEDULE: the request runs again
        in a later batch once execute returns (the model's config needs
        sequence_batching { iterative_sequence: true }, which the server
        checks); TRITONSERVER_REQUEST_RELEASE_ALL takes that back."""
        b = self._batch
        if b is None:
            raise TritonModelException("Only requests passed to execute can be rescheduled.")
        if b.resched is None:
            b.resched = set()
        if flags & pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE:
            b.resched.add(self._index)
        else:
            b.resched.discard(self._index)

    def _call(self, decoupled, by_reference=False):
        call = _calls.open()
        msg = {"op": "bls", "call": call.id, "model": self._model, "version": self._version,
               "rid": self._id, "flags": self._flags, "timeout": self._timeout,
               "outputs": self._outputs, "decoupled": decoupled}
        if isinstance(self._corr, str):
            msg["corr_s"] = self._corr
        elif self._corr:
            msg["corr"] = self._corr
        if self._parameters:
            msg["params"] = self._parameters
        b = _batch.get()
        if b is not None:
            msg["batch"] = b
        try:
            msg["inputs"] = _write_tensors(self._inputs, by_reference)[0] if self._inputs else []
        except Exception:
            _calls.close(call.id)
            raise
        events.send(msg)
        return call

    def exec(self, decoupled=False):
        # As Triton: anywhere once initialize has returned (execute, its
        # threads, threads of the model's own) until finalize.
        if _model is None or _state["finalizing"]:
            return InferenceResponse(error=TritonError("BLS is only supported during the 'execute' function."))
        # Inputs that are views of the execute's own inputs go by reference
        # when the call ends before execute can return (and so before those
        # inputs go back): a call of execute itself, on the main thread, with
        # one response. Calls from other threads, async_exec and decoupled
        # calls may outlive execute, and copy.
        call = self._call(decoupled, not decoupled and _state["in_execute"] and
                          threading.current_thread() is threading.main_thread())
        if decoupled:
            return ResponseIterator(call)
        reply = call.get()
        _calls.close(call.id)
        return _bls_response(reply)

    def async_exec(self, decoupled=False):
        loop = asyncio.get_running_loop()
        ctx = contextvars.copy_context()
        return loop.run_in_executor(None, ctx.run, self.exec, decoupled)


class _Call:
    """A call the stub made; its replies arrive on the reply socket."""

    def __init__(self, id):
        self.id = id
        self.cond = threading.Condition()
        self.items = []

    def put(self, item):
        with self.cond:
            self.items.append(item)
            self.cond.notify()

    def get(self):
        with self.cond:
            while not self.items:
                self.cond.wait()
            return self.items.pop(0)


class _Calls:
    def __init__(self):
        self.lock = threading.Lock()
        self.next = 0
        self.open_calls = {}

    def open(self):
        with self.lock:
            self.next += 1
            c = _Call(self.next)
            self.open_calls[c.id] = c
            return c

    def close(self, id):
        with self.lock:
            self.open_calls.pop(id, None)

    def deliver(self, id, item):
        with self.lock:
            c = self.open_calls.get(id)
        if c is not None:
            c.put(item)
        elif "block" in item:
            down.release(item["block"])  # a reply nobody waits for any more

    def abandon(self, call):
        """Closes a call whose replies nobody will read: the blocks of those
        it holds go back, and so will those of later ones (deliver)."""
        self.close(call.id)
        with call.cond:
            items, call.items = call.items, []
        for item in items:
            if "block" in item:
                down.release(item["block"])

    def fail_all(self, message):
        with self.lock:
            calls = list(self.open_calls.values())
        for c in calls:
            c.put({"error": {"msg": message, "code": TritonError.UNAVAILABLE}, "final": True})


_calls = _Calls()


class _Senders:
    """The decoupled response senders that may still send, by (batch id,
    request index), for the server's credit messages. Held weakly: a
    sender the model drops goes (and its _Unanswered with it)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.open = weakref.WeakValueDictionary()

    def add(self, sender):
        with self.lock:
            self.open[(sender._batch.id, sender._index)] = sender

    def discard(self, sender):
        with self.lock:
            if self.open.get((sender._batch.id, sender._index)) is sender:
                del self.open[(sender._batch.id, sender._index)]

    def credit(self, batch, index, n):
        with self.lock:
            sender = self.open.get((batch, index))
        if sender is not None:
            sender._credit(n)

    def break_all(self, message):
        with self.lock:
            senders = list(self.open.values())
        for sender in senders:
            sender._break(message)


_senders = _Senders()
_send_window = 0  # the server's window of responses a request (init); 0: no credits


def _bls_response(reply):
    if "error" in reply:
        return InferenceResponse(error=TritonError(reply["error"]["msg"], reply["error"]["code"]))
    tensors = _read_tensors(reply.get("outputs", []), True)
    if "block" in reply:
        down.release(reply["block"])  # copied: the block goes back at once
    resp = InferenceResponse(tensors)
    resp._parameters = reply.get("params") or {}  # as the called model set them (a float too)
    return resp


class ResponseIterator:
    """The responses of a BLS request with decoupled=True, as they come."""

    def __init__(self, call):
        self._call, self._done = call, False
        self._taken = 0  # responses taken and not yet reported to the server (bls_credit)

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        reply = self._call.get()
        if reply.get("final"):
            # As Triton, the last response may have no tensors.
            self._done = True
            _calls.close(self._call.id)
        elif _send_window:
            # The server sends _send_window responses ahead of those taken
            # here: give it room back, half a window at a time.
            self._taken += 1
            if self._taken >= _send_window // 2:
                events.send({"op": "bls_credit", "call": self._call.id, "n": self._taken})
                self._taken = 0
        return _bls_response(reply)

    def cancel(self):
        events.send({"op": "bls_cancel", "call": self._call.id})

    def __del__(self):
        # Dropped before its final response (the model broke out of the
        # loop): the server must stop the request, whose stream would
        # otherwise wait for this iterator to take its responses. Not here,
        # where a lock this thread holds may be taken (the collector can run
        # __del__ anywhere): SimpleQueue.put is safe in __del__.
        if not self._done:
            _dropped.put(self._call)


_dropped = queue.SimpleQueue()  # calls of dropped ResponseIterators, dropped _Unanswered and freed inputs, for _cancel_dropped


def _cancel_dropped():
    """Cancels the BLS requests whose iterators the model dropped, and tells
    the server of the requests nothing can answer any more."""
    while True:
        item = _dropped.get()
        if item is _FLUSH:  # _hold_inputs
            for bid in _take_freed() or ():
                try:
                    events.send({"op": "freed", "batch": bid})
                except OSError:
                    return
            continue
        if type(item) is _Unanswered:
            msg = {"op": "dropped", "batch": item.batch, "req": item.index}
        else:
            _calls.abandon(item)
            msg = {"op": "bls_cancel", "call": item.id}
        try:
            events.send(msg)
        except OSError:
            return  # the server has gone


def _request(op, **fields):
    """A call with one reply: raises TritonModelException on its error."""
    call = _calls.open()
    fields.update(op=op, call=call.id)
    try:
        events.send(fields)
        reply = call.get()
    finally:
        _calls.close(call.id)
    if "error" in reply:
        raise TritonModelException(reply["error"]["msg"])
    return reply


class Logger:
    """Writes to the server's log, with the model's fields."""
    INFO, WARNING, ERROR, VERBOSE = 0, 1, 2, 3
    LogLevel = type("LogLevel", (), {"INFO": 0, "WARNING": 1, "ERROR": 2, "VERBOSE": 3})

    @staticmethod
    def log(message, level=0):
        f = sys._getframe(1)
        if f.f_code.co_filename == __file__:
            f = f.f_back or f
        events.send({"op": "log", "level": int(level), "msg": str(message),
                  "file": os.path.basename(f.f_code.co_filename), "line": f.f_lineno})

    @staticmethod
    def log_info(message):
        Logger.log(message, Logger.INFO)

    @staticmethod
    def log_warn(message):
        Logger.log(message, Logger.WARNING)

    @staticmethod
    def log_error(message):
        Logger.log(message, Logger.ERROR)

    @staticmethod
    def log_verbose(message):
        Logger.log(message, Logger.VERBOSE)


class MetricFamily:
    """A family of custom metrics, exported beside the server's own."""
    COUNTER, GAUGE, HISTOGRAM = 0, 1, 2
    Kind = type("MetricKind", (), {"COUNTER": 0, "GAUGE": 1, "HISTOGRAM": 2})

    def __init__(self, name, description, kind):
        if kind not in (0, 1, 2):
            raise TritonModelException("Error when creating MetricFamily: unknown metric kind %r" % (kind,))
        try:
            self._id = _request("family", name=name, help=description, kind=kind)["id"]
        except TritonModelException as e:
            raise TritonModelException("Error when creating MetricFamily: %s" % e)
        self._kind, self._alive = kind, True

    def Metric(self, labels=None, buckets=None):
        return _Metric(self, labels, buckets)

    def __del__(self):
        if getattr(self, "_alive", False):
            self._alive = False
            try:
                events.send({"op": "family_close", "id": self._id})
            except Exception:
                pass


class _Metric:
    def __init__(self, family, labels, buckets):
        if labels is not None and not isinstance(labels, dict):
            raise TritonModelException("Failed to create metric. Labels must be a dictionary.")
        if buckets is not None and not isinstance(buckets, list):
            raise TritonModelException("Failed to create metric. Buckets must be a list.")
        if family._kind == MetricFamily.HISTOGRAM and buckets is None:
            raise TritonModelException("Failed to create metric. Missing required buckets.")
        if family._kind != MetricFamily.HISTOGRAM and buckets is not None:
            raise TritonModelException("Failed to create metric. Unexpected buckets found.")
        labels = {str(k): str(v) for k, v in (labels or {}).items()}
        try:
            self._id = _request("metric", family=family._id, labels=labels,
                                buckets=[float(b) for b in buckets] if buckets is not None else None)["id"]
        except TritonModelException as e:
            raise TritonModelException("Failed to create metric. %s" % e)
        self._family, self._alive = family, True

    def _op(self, what, prefix, value):
        if not self._family._alive:
            raise TritonModelException(
                "Invalid metric operation as the corresponding 'MetricFamily' has been deleted. The 'MetricFamily' "
                "object should be deleted AFTER its corresponding 'Metric' objects have been deleted.")
        k = self._family._kind
        kinds = ("TRITONSERVER_METRIC_KIND_COUNTER", "TRITONSERVER_METRIC_KIND_GAUGE", "TRITONSERVER_METRIC_KIND_HISTOGRAM")
        allowed = {"increment": (0, 1), "set": (1,), "observe": (2,), "value": (0, 1)}[what]
        if k not in allowed:
            op = {"increment": "Increment", "set": "Set", "observe": "Observe", "value": "Value"}[what]
            raise TritonModelException("%s%s does not support %s" % (prefix, kinds[k], op))
        if what == "increment" and k == MetricFamily.COUNTER and not value >= 0:
            raise TritonModelException(
                "%s%s can only be incremented monotonically by non-negative values." % (prefix, kinds[k]))
        if what == "value":
            return _request("metric_value", id=self._id)["value"]
        events.send({"op": "metric_op", "id": self._id, "what": what, "value": float(value)})

    def increment(self, value):
        self._op("increment", "Failed to increment metric value: ", value)

    def set(self, value):
        self._op("set", "Failed to set metric value: ", value)

    def observe(self, value):
        self._op("observe", "Failed to observe metric value: ", value)

    def value(self):
        return self._op("value", "Failed to get metric value: ", 0)

    def __del__(self):
        if getattr(self, "_alive", False):
            self._alive = False
            try:
                events.send({"op": "metric_close", "id": self._id})
            except Exception:
                pass


# ---------------------------------------------------------------------------
# The model loading API: pb_utils.load_model, unload_model, is_model_ready.

def _control(what, fail, msg):
    """Sends a model-control call to the server and waits for its answer;
    fail prefixes the server's error, raised as TritonModelException."""
    for phase in ("auto_complete", "finalizing"):
        if _state[phase]:
            raise TritonModelException("%sthe model loading API is not supported in %s" % (
                fail, "auto_complete_config" if phase == "auto_complete" else "finalize"))
    if not isinstance(msg["model"], str):
        raise TypeError("model_name must be a str, not %s" % type(msg["model"]).__name__)
    b = _batch.get()
    if b is not None:
        msg["batch"] = b
    try:
        return _request("control", what=what, **msg).get("ready", False)
    except TritonModelException as e:
        raise TritonModelException(fail + str(e))


def load_model(model_name, config="", files=None):
    msg = {"model": model_name, "config": config}
    if files is not None:
        if not isinstance(files, dict):
            raise TritonModelException(
                "failed to load model '%s', files should be a dictionary of file paths and file contents" % model_name)
        for k, v in files.items():
            if not isinstance(k, str) or not isinstance(v, (bytes, bytearray, memoryview)):
                raise TritonModelException(
                    "failed to load model '%s', files should be a dictionary of file paths (str) and file "
                    "contents (bytes); %r is not" % (model_name, k))
        msg["files"] = {k: bytes(v) for k, v in files.items()}
    _control("load", "Failed to load model: ", msg)


def unload_model(model_name, unload_dependents=False):
    _control("unload", "Failed to unload model: ", {"model": model_name, "dependents": bool(unload_dependents)})


def _model_version(text):
    """A version string as Triton reads it (std::stol: leading blanks, a
    sign, digits; what follows is ignored); "" is -1, the server's policy."""
    if text == "":
        return -1
    fail = "Failed to check model readiness: failed to get model version from specified version string '%s'" % text
    digits = text.lstrip(" \t\n\v\f\r")
    sign = digits[:1] if digits[:1] in ("+", "-") else ""
    rest = digits[len(sign):]
    n = 0
    while n < len(rest) and "0" <= rest[n] <= "9":
        n += 1
    if n == 0 or not -2**63 <= int(sign + rest[:n]) < 2**63:
        raise TritonModelException(fail + " (details: stol), version should be an integral value > 0")
    version = int(sign + rest[:n])
    if version < 0:
        raise TritonModelException(fail + ", version should be an integral value > 0")
    return version


def is_model_ready(model_name, model_version=""):
    return _control("ready", "Failed to check model readiness: ",
                    {"model": model_name, "version": _model_version(str(model_version))})


def get_model_dir():
    return _state.get("model_dir", "")


for _name, _value in {
    "Tensor": Tensor, "InferenceRequest": InferenceRequest, "InferenceResponse": InferenceResponse,
    "TritonError": TritonError, "TritonModelException": TritonModelException, "Logger": Logger,
    "PreferredMemory": PreferredMemory, "MetricFamily": MetricFamily, "get_model_dir": get_model_dir,
    "TRITONSERVER_MEMORY_CPU": 0, "TRITONSERVER_MEMORY_GPU": 2,
    "load_model": load_model, "unload_model": unload_model, "is_model_ready": is_model_ready,
}.items():
    if pb_utils is not None:
        setattr(pb_utils, _name, _value)

# ---------------------------------------------------------------------------
# Running the model.

_model = None
_decoupled = False
_loop = None  # the asyncio loop of async execute functions, on its own thread


def _error_text(e):
    """The exception and the traceback of the model's own frames."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename != __file__]
    text = "".join(traceback.format_exception_only(type(e), e)).rstrip("\n")
    if frames:
        text += "\nTraceback (most recent call last):\n" + "".join(traceback.format_list(frames)).rstrip("\n")
    return text


def _import_model(msg):
    path = _state["path"] = msg["path"]
    if not path.endswith(".py"):
        raise TritonModelException('Model name must end with \'.py\'. Model name is "%s".' % os.path.basename(path))
    if not os.path.isfile(path):
        raise TritonModelException("Python model file not found in '%s'" % path)
    # A Python-based backend's model.py (backend_dir) is the module "model",
    # its folder on the path, as Triton imports it.
    backend_dir, version_dir = msg.get("backend_dir"), os.path.dirname(path)
    for p in (backend_dir,) if backend_dir else (version_dir, msg["model_dir"], os.path.dirname(version_dir)):
        if p not in sys.path:
            sys.path.append(p)  # as Triton: after the interpreter's own paths
    name = "model"
    if not backend_dir:
        # As Triton: the version folder is a package, the file a module of it.
        pkg = os.path.basename(version_dir)
        name = pkg + "." + os.path.splitext(os.path.basename(path))[0]
        if pkg not in sys.modules:
            pspec = importlib.util.spec_from_file_location(
                pkg, os.path.join(version_dir, "__init__.py"), submodule_search_locations=[version_dir])
            pmod = importlib.util.module_from_spec(pspec)
            sys.modules[pkg] = pmod
            if os.path.isfile(os.path.join(version_dir, "__init__.py")):
                pspec.loader.exec_module(pmod)
    spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if not hasattr(module, "TritonPythonModel"):
        raise TritonModelException("Python model '%s' has no class TritonPythonModel" % path)
    return module


def _init(msg):
    global _model, _decoupled, _send_window, up
    if np is None:
        raise TritonModelException(
            "the interpreter %s cannot import numpy (%s); install Debian's python3-numpy, or name an "
            "interpreter that has numpy" % (sys.executable, _numpy_error))
    _numpy_names()
    up = _UpRegion(FD_UP, msg["shm_growth"], msg["shm_limit"])
    args = msg["args"]
    _state.update(model=args["model_name"], instance=args.get("model_instance_name", ""), model_dir=args["model_repository"])
    module = _import_model(msg)
    cls = module.TritonPythonModel
    if msg.get("auto_complete"):
        _state["auto_complete"] = True
        fn = getattr(cls, "auto_complete_config", None)
        if fn is None:
            return {"op": "ok"}
        cfg = fn(pb_utils.ModelConfig(args["model_config"]))
        if not isinstance(cfg, pb_utils.ModelConfig):
            raise TritonModelException(
                "auto_complete_config function in model '%s' must return a valid pb.ModelConfig object." % args["model_name"])
        return {"op": "ok", "config": json.dumps(cfg.as_dict())}
    _decoupled = pb_utils.using_decoupled_model_transaction_policy(json.loads(args["model_config"]))
    _send_window = msg.get("send_window", 0)
    model = cls()
    if hasattr(model, "initialize"):
        model.initialize(args)
    _model = model  # finalize only after a successful initialize
    if not hasattr(_model, "execute"):
        _state["no_execute"] = True
    # The model and its libraries live as long as the stub: the collector
    # need not walk them at each collection of a request's garbage.
    gc.freeze()
    return {"op": "ok", "is_ready": hasattr(_model, "is_ready")}


def _run(fn, *args):
    """Calls fn, a function or an async function (awaited on the loop)."""
    result = fn(*args)
    if asyncio.iscoroutine(result):
        return _await(result)
    return result


def _async_loop():
    global _loop
    if _loop is None:
        _loop = asyncio.new_event_loop()
        threading.Thread(target=_loop.run_forever, name="triton-asyncio", daemon=True).start()
    return _loop


def _await(coro):
    return asyncio.run_coroutine_threadsafe(coro, _async_loop()).result()


def _background(coro):
    """A decoupled model's async execute: runs on, its errors logged."""
    fut = asyncio.run_coroutine_threadsafe(coro, _async_loop())

    def done(f):
        if f.exception() is not None:
            Logger.log_error("async execute failed: " + _error_text(f.exception()))
    fut.add_done_callback(done)


def _execute(msg):
    """Runs an execute command, ["execute", id, flags, requests]; its answer
    is ("done", id, seq, block, fail, responses, rescheduled, held, freed)."""
    _, bid, flags, wire = msg
    responses = block = fail = token = resched = requests = None
    batch = _Batch(bid, flags)
    _state["in_execute"] = _state["answering"] = True
    try:
        requests = _requests(batch, wire)
        token = _batch.set(bid)
        if _state.get("no_execute"):
            raise TritonModelException("Python model %s does not implement `execute` method." % _state["path"])
        result = _model.execute(requests)
        if type(result) is not list and asyncio.iscoroutine(result):
            if _decoupled:
                _background(result)
                result = None
            else:
                result = _await(result)
        responses = _responses(batch, requests, result)
        block = batch.block
        if batch.resched:
            resched = sorted(batch.resched)
            for i in resched:  # the next execution of the request has a sender of its own
                if requests[i]._sender is not None:
                    requests[i]._sender._close("The request was rescheduled.")
    except Exception as e:
        fail, resched = _error_text(e), None
        # As Triton, the requests' senders close: the server answers every
        # request of the batch with the error.
        batch.failed = True
        for q in requests or ():
            if q._sender is not None:
                q._sender._close("Response sender has been closed.")
        q = None  # the loop's last request, which _hold_inputs would count as kept
    finally:
        _state["in_execute"] = False
        if token is not None:
            _batch.reset(token)
    requests = result = None  # what is left of the batch is the model's
    held = _hold_inputs(batch)
    _state["answering"] = False
    freed = _take_freed()
    return "done", bid, events.sent, block, fail, responses, resched, held, freed  # seq: the server handles those events first


_held_inputs = {}  # batch id -> weak references to the views of its inputs that the model still holds
_held_lock = threading.RLock()  # a callback may run, as the collector frees, on a thread that holds it
_freed = []  # ids of held batches whose last input the model freed, for the next answer or _cancel_dropped
_FLUSH = ("freed",)  # tells _cancel_dropped to send what is in _freed
_MAIN = threading.get_ident()  # the thread that imports the stub runs main


def _take_freed():
    """Empties _freed (either the answer or _cancel_dropped takes each id)."""
    out = []
    while _freed:
        try:
            out.append(_freed.pop())
        except IndexError:  # the other taker was quicker
            break
    return out or None


def _hold_inputs(batch):
    """Reports whether the model still holds some of the batch's inputs
    once execute has returned (a request, a tensor or an array over them,
    kept for later) or a response sender of it (whose is_cancelled reads
    the batch's block): the server then keeps the block until the last of
    them is freed, when the stub tells it "freed". Without this, the next
    batch's inputs would be written over them."""
    views, batch.views = batch.views, None
    live = _over(views, batch, _VIEW_REFS, _BATCH_REFS)
    if live is None:
        return False
    bid = batch.id
    left = [len(live)]

    def gone(_):
        with _held_lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            del _held_inputs[bid]
            _freed.append(bid)
            # Freed in execute (the model replaced what it kept), the answer
            # says so, before the server writes the next batch; freed
            # elsewhere, _cancel_dropped does (not events.send: this runs
            # wherever the last one was freed).
            if not (_state["answering"] and threading.get_ident() == _MAIN):
                _dropped.put(_FLUSH)
    _held_inputs[bid] = [weakref.ref(v, gone) for v in live]  # a reference lives as long as its callback may run
    return True


def _over(views, batch, view_base, batch_base):
    """The views with more references than view_base, and the batch if it
    has more than batch_base (a sender kept without its request: its
    is_cancelled reads the block), as getrefcount counts them here; None
    when there are none."""
    live = None
    for v in views:
        if sys.getrefcount(v) > view_base:
            if live is None:
                live = []
            live.append(v)
    if sys.getrefcount(batch) > batch_base:
        if live is None:
            live = []
        live.append(batch)
    return live


def _baselines():
    """The references _over counts for a view and a batch that nobody else
    holds, as _execute (one local) and _hold_inputs (its argument, views)
    hold them. Measured, not assumed: what getrefcount sees of a frame's
    references changes between Python versions (3.14 borrows some)."""
    batch = _Batch(0, 0)
    batch.views = [memoryview(b"x")]
    return _baseline_probe(batch)


def _baseline_probe(batch):
    views, batch.views = batch.views, None  # as _hold_inputs
    view_base = batch_base = 1
    while _over(views, batch, view_base, 1 << 30):
        view_base += 1
    while _over((), batch, 1 << 30, batch_base):
        batch_base += 1
    return view_base, batch_base


_VIEW_REFS, _BATCH_REFS = _baselines()


def _responses(batch, requests, result):
    """The wire form of execute's responses (None: answered through its
    response sender), every output in one block of shared memory, whose
    offset goes to batch.block."""
    if _decoupled:
        if result is not None:
            raise TritonModelException(
                "Python model '%s' is using the decoupled mode and the execute function must return None." % _state["instance"])
        _watch_unanswered(batch, requests, range(len(requests)))
        return None
    if result is None:
        _watch_unanswered(batch, requests, range(len(requests)))
        return [None] * len(requests)
    if not isinstance(result, list):
        raise TritonModelException("Expected a list in the execute return, found type '%s'." % type(result))
    if len(result) != len(requests):
        raise TritonModelException(
            "Number of InferenceResponse objects do not match the number of InferenceRequest objects. "
            "InferenceRequest(s) size is:%d, and InferenceResponse(s) size is:%d\n" % (len(requests), len(result)))
    if batch.resched:
        for i in batch.resched:
            if result[i] is not None:
                raise TritonModelException(
                    "Expected a None object in the execute function return list for reschduled request, "
                    "found type '%s'." % type(result[i]))
    parts = [None if resp is None else _response_parts(resp, req._wanted) for req, resp in zip(requests, result)]
    if None in parts:
        _watch_unanswered(batch, requests, [i for i, p in enumerate(parts) if p is None])
    tensors = [t for p in parts if p is not None and p[0] for t in p[0]]
    if not tensors:
        return parts
    wire, batch.block = _write_tensors(tensors, True)
    out, at = [], 0
    for p in parts:
        if p is not None and p[0]:
            n = len(p[0])
            p = (wire[at:at + n], p[1], p[2])
            at += n
        out.append(p)
    return out


def _ready():
    try:
        ok = _run(_model.is_ready)
    except Exception as e:
        return {"error": {"msg": _error_text(e), "code": TritonError.INTERNAL}}
    if not isinstance(ok, bool):
        return {"error": {"msg": "is_ready() must return a boolean value", "code": TritonError.INTERNAL}}
    return {"ready": ok}


def _answer_ready(call):
    r = _ready()
    r.update(op="ready", call=call)
    events.send(r)


def _reply_loop():
    """Reads the server's replies to the stub's calls."""
    try:
        while True:
            msg = events.recv()
            op = msg["op"]
            if op == "reply":
                _calls.deliver(msg["call"], msg)
            elif op == "credit":
                _senders.credit(msg["batch"], msg["req"], msg["n"])
            elif op == "ready":
                # On a thread of its own: an is_ready that calls the server
                # (is_model_ready, BLS) waits for a reply this loop reads.
                threading.Thread(target=_answer_ready, args=(msg["call"],), name="triton-is-ready", daemon=True).start()
    except (EOFError, OSError):
        _calls.fail_all("the server closed the connection")
        _senders.break_all("The server closed the connection.")


def _watch_parent(parent):
    import time
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(1)  # the server died: nobody will read our answers


def main():
    global cmd, events, down
    import signal
    cmd, events, down = _Channel(FD_CMD, FD_ANSWERS, False), _Channel(FD_EVENTS, FD_EVENTS, True), _Region(FD_DOWN)
    # The server stops stubs with its own commands (or SIGKILL); a terminal's
    # Ctrl-C is for the server alone.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(os.getppid(),), name="triton-parent", daemon=True).start()
    threading.Thread(target=_reply_loop, name="triton-replies", daemon=True).start()
    threading.Thread(target=_cancel_dropped, name="triton-dropped", daemon=True).start()
    while True:
        try:
            msg = cmd.recv()
        except (EOFError, OSError):
            os._exit(0)
        if type(msg) is list:  # the one command that is not a dict, for speed
            cmd.send(_execute(msg))
            continue
        op = msg["op"]
        if op == "init":
            try:
                reply = _init(msg)
            except BaseException as e:
                reply = {"op": "error", "msg": _error_text(e)}
        elif op == "finalize":
            _state["finalizing"] = True
            reply = {"op": "ok"}
            if _model is not None and hasattr(_model, "finalize"):
                try:
                    _run(_model.finalize)
                except Exception as e:
                    Logger.log_info("finalize failed: " + _error_text(e))
            cmd.send(reply)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        else:
            reply = {"op": "error", "msg": "unknown command %r" % op}
        cmd.send(reply)


if __name__ == "__main__":
    main()
