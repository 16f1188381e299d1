"""The pure-Python part of ``triton_python_backend_utils``, the module that
Triton ``model.py`` files import as ``pb_utils``.

This file holds what needs no native code: the BYTES tensor codec, the
numpy <-> Triton data type maps, the by-name lookups, the request and response
flag constants and ``ModelConfig``, the object ``auto_complete_config``
receives. The stub adds the native classes (``Tensor``, ``InferenceRequest``,
``InferenceResponse``, ``TritonError``, ``TritonModelException``, ``Logger``,
``MetricFamily``, ``PreferredMemory``, ``load_model``, ...) as attributes of
this module when it starts, so the functions here only call methods on the
objects they are given (``inputs()``, ``output_tensors()``, ``name()``).

It is imported by every stub process at start: it imports the standard
library's small modules and numpy, and nothing else.
"""

import itertools
import json
import operator
import struct

import numpy as np

# Flag values of Triton's C API (tritonserver.h).
TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2

# Model configuration data type names to numpy types. TYPE_BF16 has no numpy
# type and is absent, as in Triton.
TRITON_STRING_TO_NUMPY = {
    "TYPE_BOOL": bool,
    "TYPE_UINT8": np.uint8,
    "TYPE_UINT16": np.uint16,
    "TYPE_UINT32": np.uint32,
    "TYPE_UINT64": np.uint64,
    "TYPE_INT8": np.int8,
    "TYPE_INT16": np.int16,
    "TYPE_INT32": np.int32,
    "TYPE_INT64": np.int64,
    "TYPE_FP16": np.float16,
    "TYPE_FP32": np.float32,
    "TYPE_FP64": np.float64,
    "TYPE_STRING": np.object_,
}

# TRITONSERVER_DataType values (1 BOOL ... 13 BYTES; 14 BF16 has no numpy
# type) to numpy types, and back.
_TRITON_TO_NUMPY = {
    1: np.bool_,
    2: np.uint8,
    3: np.uint16,
    4: np.uint32,
    5: np.uint64,
    6: np.int8,
    7: np.int16,
    8: np.int32,
    9: np.int64,
    10: np.float16,
    11: np.float32,
    12: np.float64,
    13: np.object_,
}
_NUMPY_TO_TRITON = {t: code for code, t in _TRITON_TO_NUMPY.items()}
_NUMPY_TO_TRITON[np.bytes_] = 13

_U32 = struct.Struct("<I")
_MAX_ELEMENT = 0xFFFFFFFF

# From this many elements on, a tensor whose elements all have one length is
# encoded and decoded with numpy, in a few calls for the whole tensor.
_UNIFORM_MIN = 64


class _BytesTensorError(ValueError, struct.error):
    """A BYTES buffer that is not a sequence of length-prefixed elements.

    It is a ValueError, and a struct.error as well, the error Triton's own
    decoder raises, so code written against either catches it.
    """


def serialize_byte_tensor(input_tensor):
    """Encode a numpy array of np.object_ (or np.bytes_) dtype in the BYTES
    wire format: for each element in C order, its length as a 4-byte
    little-endian unsigned integer, then its bytes.

    Elements of type ``bytes`` are taken as they are; any other element of an
    object array is encoded as ``str(element).encode("utf-8")``. numpy drops
    trailing zero bytes from np.bytes_ elements, so prefer np.object_ arrays.

    Returns the encoding as ``bytes`` (``b""`` for an array with no
    elements), or None if the array's dtype is neither np.object_ nor
    np.bytes_.
    """
    if input_tensor.size == 0:
        return b""
    dtype = input_tensor.dtype
    if dtype == np.object_:
        parts = [
            item if type(item) is bytes else str(item).encode("utf-8")
            for item in input_tensor.ravel().tolist()
        ]
    elif dtype.type == np.bytes_:
        parts = input_tensor.ravel().tolist()
    else:
        return None
    lengths = list(map(len, parts))
    longest = max(lengths)
    if longest > _MAX_ELEMENT:
        raise ValueError(
            "BYTES tensor element of "
            + str(longest)
            + " bytes is longer than the 4-byte length field allows"
        )
    if len(parts) >= _UNIFORM_MIN and min(lengths) == longest:
        out = np.empty((len(parts), 4 + longest), np.uint8)
        out[:, :4] = np.frombuffer(_U32.pack(longest), np.uint8)
        out[:, 4:] = np.frombuffer(b"".join(parts), np.uint8).reshape(
            len(parts), longest
        )
        return out.tobytes()
    return b"".join(
        itertools.chain.from_iterable(zip(map(_U32.pack, lengths), parts))
    )


def deserialize_bytes_tensor(encoded_tensor):
    """Decode a BYTES wire buffer (any object with the buffer protocol:
    bytes, bytearray, memoryview, a numpy array) into a 1-D np.object_ array
    whose elements are ``bytes``.

    A buffer that ends inside a length field raises ValueError "Invalid
    bytes tensor data: incomplete length field"; one whose element runs past
    its end, "Invalid bytes tensor data: string extends beyond buffer".
    """
    buf = encoded_tensor
    if type(buf) is not bytes:
        buf = memoryview(buf).tobytes()
    size = len(buf)
    if size == 0:
        return np.empty(0, dtype=np.object_)
    items = _decode_uniform(buf)
    if items is None:
        items = []
        append = items.append
        offset = 0
        while offset < size:
            start = offset + 4
            if start > size:
                raise _BytesTensorError(
                    "Invalid bytes tensor data: incomplete length field"
                )
            end = start + int.from_bytes(buf[offset:start], "little")
            if end > size:
                raise _BytesTensorError(
                    "Invalid bytes tensor data: string extends beyond buffer"
                )
            append(buf[start:end])
            offset = end
    out = np.empty(len(items), dtype=np.object_)
    out[:] = items
    return out


def _decode_uniform(buf):
    """Decode buf with numpy if all its elements have the length of the
    first one (then each length field sits at a multiple of 4 + that length,
    and reading them in order would find the same); else return None."""
    size = len(buf)
    if size < 4:
        return None
    length = _U32.unpack_from(buf, 0)[0]
    stride = 4 + length
    count = size // stride
    if count < _UNIFORM_MIN or count * stride != size:
        return None
    fields = np.ndarray((count,), dtype="<u4", buffer=buf, strides=(stride,))
    if not (fields == length).all():
        return None
    if length == 0:
        return [b""] * count
    data = np.ndarray(
        (count,), dtype="V" + str(length), buffer=buf, offset=4, strides=(stride,)
    )
    return data.tolist()


def triton_string_to_numpy(triton_type_string):
    """Return the numpy type of a model configuration data type name such
    as "TYPE_FP32"; an unknown name (TYPE_BF16 among them) raises KeyError."""
    return TRITON_STRING_TO_NUMPY[triton_type_string]


def triton_to_numpy_type(data_type):
    """Return the numpy type of a TRITONSERVER_DataType value (1 BOOL ...
    13 BYTES, which maps to np.object_), or None for any other value."""
    try:
        return _TRITON_TO_NUMPY.get(data_type)
    except TypeError:
        return None


def numpy_to_triton_type(data_type):
    """Return the TRITONSERVER_DataType value of a numpy type or dtype
    (np.object_ and np.bytes_ are 13, BYTES), or None if it has none."""
    try:
        code = _NUMPY_TO_TRITON.get(data_type)
    except TypeError:
        return None
    if code is None and data_type is not None:
        try:
            code = _NUMPY_TO_TRITON.get(np.dtype(data_type).type)
        except (TypeError, ValueError):
            return None
    return code


def get_input_tensor_by_name(inference_request, name):
    """Return the input tensor of the request with the given name, or None."""
    for tensor in inference_request.inputs():
        if tensor.name() == name:
            return tensor
    return None


def get_output_tensor_by_name(inference_response, name):
    """Return the output tensor of the response with the given name, or None."""
    for tensor in inference_response.output_tensors():
        if tensor.name() == name:
            return tensor
    return None


def get_input_config_by_name(model_config, name):
    """Return the entry of model_config["input"] (model_config is the model
    configuration as a dict) with the given name, or None."""
    return _entry_by_name(model_config, "input", name)


def get_output_config_by_name(model_config, name):
    """Return the entry of model_config["output"] with the given name, or None."""
    return _entry_by_name(model_config, "output", name)


def _entry_by_name(model_config, section, name):
    for entry in model_config.get(section) or ():
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry
    return None


def using_decoupled_model_transaction_policy(model_config):
    """Report whether the model configuration (a dict) sets
    model_transaction_policy { decoupled: true }."""
    policy = model_config.get("model_transaction_policy")
    if not policy:
        return False
    return policy.get("decoupled", False)


class ModelConfig:
    """The model configuration as ``auto_complete_config`` sees it.

    It is built from the configuration as JSON with the protobuf field
    names. The dict it holds looks as Triton's does: 64-bit integer fields
    Triton writes as numbers (dims, reshape shapes, versions, queue delays,
    ...) are numbers even where the JSON gave them as strings, and the fields
    Triton always writes (max_batch_size, input, output, and each tensor's
    data_type, dims and optional) are present. The setters check the model's
    wishes against what the configuration already says and raise ValueError
    with Triton's messages when they conflict.
    """

    def __init__(self, model_config):
        self._model_config = _triton_config(json.loads(model_config))

    def as_dict(self):
        """Return the configuration dict itself (changes to it are kept)."""
        return self._model_config

    def _name(self):
        return str(self._model_config.get("name", ""))

    def set_max_batch_size(self, max_batch_size):
        """Set max_batch_size; fails if the configuration already gives a
        larger one."""
        configured = self._model_config.get("max_batch_size", 0)
        if configured > max_batch_size:
            raise ValueError(
                "configuration specified max_batch_size "
                + str(configured)
                + ", but in auto-complete-config function for model '"
                + self._name()
                + "' specified max_batch_size "
                + str(max_batch_size)
            )
        self._model_config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self):
        """Choose the dynamic batcher unless the configuration chose it
        already; fails if it chose sequence batching or an ensemble."""
        for scheduler in ("sequence_batching", "ensemble_scheduling"):
            if scheduler in self._model_config:
                raise ValueError(
                    "Configuration specified scheduling_choice as '"
                    + scheduler
                    + "', but auto-complete-config function for model '"
                    + self._name()
                    + "' tries to set scheduling_choice as 'dynamic_batching'"
                )
        self._model_config.setdefault("dynamic_batching", {})

    def add_input(self, input):
        """Add an input {"name", "data_type", "dims"[, "optional"]}, or
        complete the configuration's input of that name."""
        self._add_tensor("input", input, ("name", "data_type", "dims", "optional"))

    def add_output(self, output):
        """Add an output {"name", "data_type", "dims"}, or complete the
        configuration's output of that name."""
        self._add_tensor("output", output, ("name", "data_type", "dims"))

    def _add_tensor(self, kind, tensor, allowed):
        model = self._name()
        if "name" not in tensor:
            raise ValueError(
                kind
                + " in auto-complete-config function for model '"
                + model
                + "' is missing 'name' property."
            )
        name = str(tensor["name"])
        if any(key not in allowed for key in tensor):
            if kind == "input":
                listed = "'name', 'data_type', 'dims' and 'optional'."
            else:
                listed = "'name', 'data_type' and 'dims'."
            raise ValueError(
                kind
                + " '"
                + name
                + "' in auto-complete-config function for model '"
                + model
                + "' contains property other than "
                + listed
            )
        for key in ("data_type", "dims"):
            if key not in tensor:
                raise ValueError(
                    kind
                    + " '"
                    + name
                    + "' in auto-complete-config function for model '"
                    + model
                    + "' is missing '"
                    + key
                    + "' property."
                )

        entries = self._model_config.setdefault(kind, [])
        for current in entries:
            if not isinstance(current, dict) or current.get("name") != tensor["name"]:
                continue
            configured_type = current.get("data_type", "TYPE_INVALID")
            if configured_type not in ("TYPE_INVALID", tensor["data_type"]):
                raise ValueError(
                    "unable to load model '"
                    + model
                    + "', configuration expects datatype "
                    + str(configured_type)
                    + " for "
                    + kind
                    + " '"
                    + name
                    + "', model provides "
                    + str(tensor["data_type"])
                )
            configured_dims = current.get("dims")
            if configured_dims and _dims(configured_dims) != _dims(tensor["dims"]):
                raise ValueError(
                    "model '"
                    + model
                    + "', tensor '"
                    + name
                    + "': the model expects dims "
                    + str(tensor["dims"])
                    + " but the model configuration specifies dims "
                    + str(configured_dims)
                )
            if (
                kind == "input"
                and "optional" in current
                and "optional" in tensor
                and current["optional"] != tensor["optional"]
            ):
                raise ValueError(
                    "model '"
                    + model
                    + "', tensor '"
                    + name
                    + "': the model expects optional "
                    + str(tensor["optional"])
                    + " but the model configuration specifies optional "
                    + str(current["optional"])
                )
            current["data_type"] = tensor["data_type"]
            current["dims"] = tensor["dims"]
            if "optional" in tensor:
                current["optional"] = tensor["optional"]
            return
        entries.append(tensor)

    def set_model_transaction_policy(self, transaction_policy_dict):
        """Set model_transaction_policy (only "decoupled" may be given);
        fails if it would change a value the configuration sets."""
        for key in transaction_policy_dict:
            if key != "decoupled":
                raise ValueError(
                    "model transaction property in auto-complete-config "
                    "function for model '"
                    + self._name()
                    + "' contains property other than 'decoupled'."
                )
        policy = self._model_config.setdefault("model_transaction_policy", {})
        if "decoupled" not in transaction_policy_dict:
            return
        wanted = transaction_policy_dict["decoupled"]
        if "decoupled" in policy and policy["decoupled"] != wanted:
            raise ValueError(
                "trying to change decoupled property in auto-complete-config "
                "for model '"
                + self._name()
                + "', which is already set to '"
                + str(policy["decoupled"])
                + "'."
            )
        policy["decoupled"] = wanted


def _dims(dims):
    """dims as a list of ints for comparison ("4" and 4 are one dim); dims
    that are not all integers or integer strings are compared as they are."""
    try:
        return [int(d) if isinstance(d, str) else operator.index(d) for d in dims]
    except (TypeError, ValueError):
        return list(dims) if isinstance(dims, (list, tuple)) else dims


def _triton_config(config):
    """Make a model configuration dict decoded from protobuf JSON look as
    the one Triton hands to Python: no null members, the 64-bit integer
    fields Triton turns into numbers as numbers, and the fields Triton always
    prints filled with their defaults. Returns config, changed in place."""
    config = _drop_nulls(config)
    if not isinstance(config, dict):
        raise ValueError("model configuration must be a JSON object")
    config.setdefault("name", "")
    config.setdefault("max_batch_size", 0)
    for kind in ("input", "output"):
        config.setdefault(kind, [])
        for io in _list(config, kind):
            if not isinstance(io, dict):
                continue
            io.setdefault("data_type", "TYPE_INVALID")
            io.setdefault("dims", [])
            _int_list(io, "dims")
            if kind == "input":
                io.setdefault("optional", False)
            _int_list(io.get("reshape"), "shape")
    _int_list(_path(config, "version_policy", "specific"), "versions")
    batching = config.get("dynamic_batching")
    _int_fields(
        batching,
        "max_queue_delay_microseconds",
        "priority_levels",
        "default_priority_level",
    )
    _int_fields(
        _path(batching, "default_queue_policy"), "default_timeout_microseconds"
    )
    levels = _path(batching, "priority_queue_policy")
    if isinstance(levels, dict):
        for policy in levels.values():
            _int_fields(policy, "default_timeout_microseconds")
    sequence = config.get("sequence_batching")
    _int_fields(sequence, "max_sequence_idle_microseconds")
    for strategy in ("oldest", "direct"):
        _int_fields(_path(sequence, strategy), "max_queue_delay_microseconds")
    for state in _list(sequence, "state"):
        _int_list(state, "dims")
        for initial in _list(state, "initial_state"):
            _int_list(initial, "dims")
    for step in _list(config.get("ensemble_scheduling"), "step"):
        _int_fields(step, "model_version")
    for warmup in _list(config, "model_warmup"):
        inputs = warmup.get("inputs") if isinstance(warmup, dict) else None
        if isinstance(inputs, dict):
            for tensor in inputs.values():
                _int_list(tensor, "dims")
    policy = config.get("model_transaction_policy")
    if isinstance(policy, dict):
        policy.setdefault("decoupled", False)
    return config


def _drop_nulls(value):
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _path(obj, *keys):
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _list(obj, key):
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, list) else ()


def _as_int(value):
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return value
    return value


def _int_list(obj, key):
    if isinstance(obj, dict) and isinstance(obj.get(key), list):
        obj[key] = [_as_int(v) for v in obj[key]]


def _int_fields(obj, *keys):
    if isinstance(obj, dict):
        for key in keys:
            if key in obj:
                obj[key] = _as_int(obj[key])
