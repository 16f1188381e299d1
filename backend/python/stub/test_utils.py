"""Tests of triton_python_backend_utils (the pure-Python part of pb_utils).

Run from this directory: /usr/bin/python3 -m unittest -v test_utils
"""

import json
import struct
import subprocess
import sys
import unittest

import numpy as np

import triton_python_backend_utils as pb_utils


def reference_encode(items):
    """The BYTES wire format written out element by element, independently
    of the module's encoder."""
    out = b""
    for item in items:
        out += struct.pack("<I", len(item)) + item
    return out


def reference_decode(buf):
    items, offset = [], 0
    while offset < len(buf):
        (length,) = struct.unpack_from("<I", buf, offset)
        items.append(bytes(buf[offset + 4 : offset + 4 + length]))
        offset += 4 + length
    return items


class FakeTensor:
    def __init__(self, name):
        self._name = name

    def name(self):
        return self._name


class FakeRequest:
    def __init__(self, tensors):
        self._tensors = tensors

    def inputs(self):
        return self._tensors


class FakeResponse:
    def __init__(self, tensors):
        self._tensors = tensors

    def output_tensors(self):
        return self._tensors


class ConstantsTest(unittest.TestCase):
    def test_values(self):
        self.assertEqual(pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START, 1)
        self.assertEqual(pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END, 2)
        self.assertEqual(pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL, 1)
        self.assertEqual(pb_utils.TRITONSERVER_REQUEST_RELEASE_ALL, 1)
        self.assertEqual(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, 2)

    def test_native_names_left_to_the_stub(self):
        for name in (
            "Tensor",
            "InferenceRequest",
            "InferenceResponse",
            "TritonError",
            "TritonModelException",
            "Logger",
            "MetricFamily",
            "PreferredMemory",
            "load_model",
            "unload_model",
            "is_model_ready",
            "get_model_dir",
        ):
            self.assertFalse(hasattr(pb_utils, name), name)


class ImportTest(unittest.TestCase):
    def test_imports_only_numpy_and_the_standard_library(self):
        # Modules the import adds beyond what numpy and the few standard
        # modules it names bring in.
        code = (
            "import sys\n"
            "import json, struct, itertools, operator, numpy\n"
            "before = set(sys.modules)\n"
            "import triton_python_backend_utils\n"
            "print(sorted(set(sys.modules) - before))\n"
        )
        out = subprocess.run(
            [sys.executable, "-B", "-c", code],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        self.assertEqual(out, "['triton_python_backend_utils']")


class SerializeTest(unittest.TestCase):
    def test_wire_layout(self):
        got = pb_utils.serialize_byte_tensor(np.array([b"ab", b""], dtype=np.object_))
        self.assertEqual(got, b"\x02\x00\x00\x00ab\x00\x00\x00\x00")
        self.assertIs(type(got), bytes)

    def test_length_is_little_endian(self):
        got = pb_utils.serialize_byte_tensor(np.array([b"x" * 300], dtype=np.object_))
        self.assertEqual(got[:4], b"\x2c\x01\x00\x00")
        self.assertEqual(len(got), 304)

    def test_bytes_items_verbatim_others_as_utf8_str(self):
        items = [b"\x00raw\xff", "h\u00e9llo \u65e5\u672c", 7, 2.5, None, np.bytes_(b"ab")]
        got = pb_utils.serialize_byte_tensor(np.array(items, dtype=np.object_))
        want = reference_encode(
            [
                b"\x00raw\xff",
                "h\u00e9llo \u65e5\u672c".encode("utf-8"),
                b"7",
                b"2.5",
                b"None",
                # Only items of type bytes are verbatim: an np.bytes_ item of
                # an object array goes through str(), as in Triton.
                b"b'ab'",
            ]
        )
        self.assertEqual(got, want)

    def test_multi_dim_in_c_order(self):
        arr = np.array([[b"a", b"bb", b"ccc"], [b"d", b"ee", b"fff"]], dtype=np.object_)
        want = reference_encode([b"a", b"bb", b"ccc", b"d", b"ee", b"fff"])
        self.assertEqual(pb_utils.serialize_byte_tensor(arr), want)
        self.assertEqual(pb_utils.serialize_byte_tensor(np.asfortranarray(arr)), want)
        self.assertEqual(
            pb_utils.serialize_byte_tensor(arr[:, ::2]),
            reference_encode([b"a", b"ccc", b"d", b"fff"]),
        )
        self.assertEqual(
            pb_utils.serialize_byte_tensor(arr.T),
            reference_encode([b"a", b"d", b"bb", b"ee", b"ccc", b"fff"]),
        )

    def test_zero_dim_array(self):
        arr = np.array(b"one", dtype=np.object_)
        self.assertEqual(pb_utils.serialize_byte_tensor(arr), reference_encode([b"one"]))

    def test_empty(self):
        for shape in ((0,), (2, 0), (0, 3)):
            arr = np.empty(shape, dtype=np.object_)
            self.assertEqual(pb_utils.serialize_byte_tensor(arr), b"", shape)

    def test_bytes_dtype(self):
        arr = np.array([b"ab", b"c\x00\x00"], dtype=np.bytes_)
        # numpy itself drops trailing zero bytes of np.bytes_ elements.
        self.assertEqual(pb_utils.serialize_byte_tensor(arr), reference_encode([b"ab", b"c"]))

    def test_other_dtypes_give_none(self):
        for arr in (
            np.zeros(3, np.float32),
            np.zeros(2, np.int64),
            np.array(["a", "b"]),
        ):
            self.assertIsNone(pb_utils.serialize_byte_tensor(arr), arr.dtype)

    def test_uniform_lengths(self):
        for items, shape in (
            ([b"%07d" % i for i in range(1000)], (10, 100)),
            ([b""] * 200, (200,)),
            ([b"\x00\x01\x02"] * pb_utils._UNIFORM_MIN, (pb_utils._UNIFORM_MIN,)),
        ):
            arr = np.array(items, dtype=np.object_).reshape(shape)
            self.assertEqual(pb_utils.serialize_byte_tensor(arr), reference_encode(items))

    def test_uniform_but_one(self):
        items = [b"abcd"] * 100 + [b"abc"]
        arr = np.array(items, dtype=np.object_)
        self.assertEqual(pb_utils.serialize_byte_tensor(arr), reference_encode(items))


class DeserializeTest(unittest.TestCase):
    def assert_items(self, arr, items):
        self.assertIsInstance(arr, np.ndarray)
        self.assertEqual(arr.dtype, np.object_)
        self.assertEqual(arr.ndim, 1)
        self.assertEqual(arr.tolist(), items)
        for item in arr.tolist():
            self.assertIs(type(item), bytes)

    def test_decode(self):
        items = [b"ab", b"", b"\x00c\x00", "\u00e9".encode("utf-8")]
        self.assert_items(pb_utils.deserialize_bytes_tensor(reference_encode(items)), items)

    def test_empty(self):
        arr = pb_utils.deserialize_bytes_tensor(b"")
        self.assertEqual(arr.shape, (0,))
        self.assertEqual(arr.dtype, np.object_)

    def test_buffer_kinds(self):
        items = [b"one", b"two", b"three"]
        buf = reference_encode(items)
        for kind in (bytes, bytearray, memoryview, lambda b: np.frombuffer(b, np.uint8)):
            self.assert_items(pb_utils.deserialize_bytes_tensor(kind(buf)), items)
        # A slice of a larger buffer, as a region of shared memory would be.
        region = memoryview(b"xxxx" + buf + b"yy")[4 : 4 + len(buf)]
        self.assert_items(pb_utils.deserialize_bytes_tensor(region), items)

    def test_incomplete_length_field(self):
        for buf in (b"\x01", b"\x01\x00\x00", reference_encode([b"ab"]) + b"\x00\x00"):
            with self.assertRaises(ValueError) as caught:
                pb_utils.deserialize_bytes_tensor(buf)
            self.assertEqual(
                str(caught.exception), "Invalid bytes tensor data: incomplete length field"
            )

    def test_string_extends_beyond_buffer(self):
        for buf in (
            b"\x05\x00\x00\x00ab",
            b"\x00\x00\x00\x00\x01\x00\x00\x00",
            b"\xff\xff\xff\xff",
            reference_encode([b"abc"] * 100)[:-1],
        ):
            with self.assertRaises(ValueError) as caught:
                pb_utils.deserialize_bytes_tensor(buf)
            self.assertEqual(
                str(caught.exception), "Invalid bytes tensor data: string extends beyond buffer"
            )

    def test_error_is_also_a_struct_error(self):
        # Triton's own Python decoder fails with struct.error on such input.
        with self.assertRaises(struct.error):
            pb_utils.deserialize_bytes_tensor(b"\x01")

    def test_uniform_lengths(self):
        for items in (
            [b"%05d" % i for i in range(500)],
            [b""] * 100,
            [b"\x00" * 3] * pb_utils._UNIFORM_MIN,
        ):
            self.assert_items(pb_utils.deserialize_bytes_tensor(reference_encode(items)), items)

    def test_looks_uniform_but_is_not(self):
        # Same total size as 64 elements of 2 bytes, and the first length is
        # 2, but the second and third elements have lengths 1 and 3.
        items = [b"aa", b"b", b"ccc"] + [b"dd"] * 61
        buf = reference_encode(items)
        self.assertEqual(len(buf), 64 * 6)
        self.assert_items(pb_utils.deserialize_bytes_tensor(buf), items)

    def test_round_trips(self):
        cases = [
            np.array([b"x"], dtype=np.object_),
            np.array(["\u65e5\u672c\u8a9e", "\U0001f600", ""], dtype=np.object_),
            np.array([[b"a", b"bc"], [b"", b"\x00\x00"]], dtype=np.object_),
            np.array([b"%d" % i for i in range(300)], dtype=np.object_).reshape(3, 10, 10),
            np.array([b"z" * (1 << 20), b"tail"], dtype=np.object_),
        ]
        for arr in cases:
            back = pb_utils.deserialize_bytes_tensor(pb_utils.serialize_byte_tensor(arr))
            want = [x if type(x) is bytes else str(x).encode("utf-8") for x in arr.ravel().tolist()]
            self.assert_items(back, want)
            self.assertEqual(back.reshape(arr.shape).shape, arr.shape)

    def test_reference_decoder_agrees(self):
        items = [bytes([i % 256]) * (i % 17) for i in range(1000)]
        buf = pb_utils.serialize_byte_tensor(np.array(items, dtype=np.object_))
        self.assertEqual(reference_decode(buf), items)
        self.assertEqual(pb_utils.deserialize_bytes_tensor(buf).tolist(), items)


class TypeMapTest(unittest.TestCase):
    TYPES = [
        (1, np.bool_),
        (2, np.uint8),
        (3, np.uint16),
        (4, np.uint32),
        (5, np.uint64),
        (6, np.int8),
        (7, np.int16),
        (8, np.int32),
        (9, np.int64),
        (10, np.float16),
        (11, np.float32),
        (12, np.float64),
        (13, np.object_),
    ]

    def test_triton_string_to_numpy(self):
        want = {
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
        for name, np_type in want.items():
            self.assertIs(pb_utils.triton_string_to_numpy(name), np_type, name)
        self.assertEqual(pb_utils.TRITON_STRING_TO_NUMPY, want)

    def test_triton_string_to_numpy_unknown(self):
        for name in ("TYPE_BF16", "TYPE_INVALID", "FP32", "type_fp32", ""):
            with self.assertRaises(KeyError):
                pb_utils.triton_string_to_numpy(name)

    def test_triton_to_numpy_type(self):
        for code, np_type in self.TYPES:
            self.assertIs(pb_utils.triton_to_numpy_type(code), np_type, code)
        for other in (0, 14, 15, -1, 99, None, "11", [11]):
            self.assertIsNone(pb_utils.triton_to_numpy_type(other), other)

    def test_numpy_to_triton_type(self):
        for code, np_type in self.TYPES:
            self.assertEqual(pb_utils.numpy_to_triton_type(np_type), code, np_type)
            self.assertEqual(pb_utils.numpy_to_triton_type(np.dtype(np_type)), code, np_type)
            self.assertEqual(
                pb_utils.triton_to_numpy_type(pb_utils.numpy_to_triton_type(np_type)), np_type
            )
        self.assertEqual(pb_utils.numpy_to_triton_type(np.bytes_), 13)
        self.assertEqual(pb_utils.numpy_to_triton_type(np.dtype("S5")), 13)
        self.assertEqual(pb_utils.numpy_to_triton_type(np.dtype("<f4")), 11)
        self.assertEqual(pb_utils.numpy_to_triton_type(np.dtype(">i4")), 8)
        others = (np.str_, np.complex64, np.dtype("U3"), np.void, np.datetime64)
        others += (None, "TYPE_FP32", [1])
        for other in others:
            self.assertIsNone(pb_utils.numpy_to_triton_type(other), other)


class ByNameTest(unittest.TestCase):
    def test_get_input_tensor_by_name(self):
        a, b, b2 = FakeTensor("A"), FakeTensor("B"), FakeTensor("B")
        request = FakeRequest([a, b, b2])
        self.assertIs(pb_utils.get_input_tensor_by_name(request, "A"), a)
        self.assertIs(pb_utils.get_input_tensor_by_name(request, "B"), b)
        self.assertIsNone(pb_utils.get_input_tensor_by_name(request, "C"))
        self.assertIsNone(pb_utils.get_input_tensor_by_name(request, "a"))
        self.assertIsNone(pb_utils.get_input_tensor_by_name(FakeRequest([]), "A"))

    def test_get_output_tensor_by_name(self):
        x, y = FakeTensor("X"), FakeTensor("Y")
        response = FakeResponse([x, y])
        self.assertIs(pb_utils.get_output_tensor_by_name(response, "Y"), y)
        self.assertIsNone(pb_utils.get_output_tensor_by_name(response, "Z"))
        self.assertIsNone(pb_utils.get_output_tensor_by_name(FakeResponse([]), "X"))

    def test_config_by_name(self):
        config = {
            "input": [{"name": "IN0", "data_type": "TYPE_FP32"}, {"name": "IN1"}],
            "output": [{"name": "OUT0", "dims": [4]}],
        }
        self.assertIs(pb_utils.get_input_config_by_name(config, "IN1"), config["input"][1])
        self.assertIs(pb_utils.get_output_config_by_name(config, "OUT0"), config["output"][0])
        self.assertIsNone(pb_utils.get_input_config_by_name(config, "OUT0"))
        self.assertIsNone(pb_utils.get_output_config_by_name(config, "IN0"))
        self.assertIsNone(pb_utils.get_input_config_by_name({}, "IN0"))
        self.assertIsNone(pb_utils.get_output_config_by_name({"name": "m"}, "OUT0"))

    def test_using_decoupled_model_transaction_policy(self):
        self.assertFalse(pb_utils.using_decoupled_model_transaction_policy({}))
        self.assertFalse(
            pb_utils.using_decoupled_model_transaction_policy({"model_transaction_policy": {}})
        )
        self.assertFalse(
            pb_utils.using_decoupled_model_transaction_policy(
                {"model_transaction_policy": {"decoupled": False}}
            )
        )
        self.assertTrue(
            pb_utils.using_decoupled_model_transaction_policy(
                {"model_transaction_policy": {"decoupled": True}}
            )
        )


def model_config(**fields):
    """A ModelConfig from JSON as our server writes it (protobuf JSON with
    field names, 64-bit integers as strings)."""
    config = {"name": "m"}
    config.update(fields)
    return pb_utils.ModelConfig(json.dumps(config))


ADD_SUB_CONFIG = {
    "name": "add_sub",
    "max_batch_size": 6,
    "input": [
        {"name": "INPUT0", "data_type": "TYPE_FP32", "dims": ["4"]},
        {"name": "INPUT1", "data_type": "TYPE_INT32", "dims": ["16"]},
    ],
    "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": ["4"]}],
}


class ModelConfigTest(unittest.TestCase):
    def assert_raises_text(self, text, fn, *args):
        with self.assertRaises(ValueError) as caught:
            fn(*args)
        self.assertEqual(str(caught.exception), text)

    def test_as_dict_is_live(self):
        config = pb_utils.ModelConfig(json.dumps(ADD_SUB_CONFIG))
        d = config.as_dict()
        self.assertIs(config.as_dict(), d)
        self.assertIs(config._model_config, d)
        d["max_batch_size"] = 2
        self.assertEqual(config.as_dict()["max_batch_size"], 2)
        self.assertEqual(d["name"], "add_sub")

    def test_accepts_bytes(self):
        config = pb_utils.ModelConfig(json.dumps(ADD_SUB_CONFIG).encode())
        self.assertEqual(config.as_dict()["name"], "add_sub")

    def test_not_an_object(self):
        with self.assertRaises(ValueError):
            pb_utils.ModelConfig("[1, 2]")
        with self.assertRaises(ValueError):
            pb_utils.ModelConfig("{not json")

    def test_int64_fields_become_numbers(self):
        config = model_config(
            input=[{"name": "I", "dims": ["-1", "3"], "reshape": {"shape": ["3"]}}],
            output=[{"name": "O", "dims": ["2"]}],
            version_policy={"specific": {"versions": ["1", "3"]}},
            dynamic_batching={
                "max_queue_delay_microseconds": "100",
                "preferred_batch_size": [4, 8],
                "priority_levels": "2",
                "default_priority_level": "1",
                "default_queue_policy": {"default_timeout_microseconds": "7", "max_queue_size": 3},
                "priority_queue_policy": {"1": {"default_timeout_microseconds": "9"}},
            },
            model_warmup=[{"name": "w", "inputs": {"I": {"dims": ["1", "3"]}}}],
        ).as_dict()
        self.assertEqual(config["input"][0]["dims"], [-1, 3])
        self.assertEqual(config["input"][0]["reshape"]["shape"], [3])
        self.assertEqual(config["output"][0]["dims"], [2])
        self.assertEqual(config["version_policy"]["specific"]["versions"], [1, 3])
        db = config["dynamic_batching"]
        self.assertEqual(db["max_queue_delay_microseconds"], 100)
        self.assertEqual(db["priority_levels"], 2)
        self.assertEqual(db["default_priority_level"], 1)
        self.assertEqual(
            db["default_queue_policy"], {"default_timeout_microseconds": 7, "max_queue_size": 3}
        )
        self.assertEqual(db["priority_queue_policy"], {"1": {"default_timeout_microseconds": 9}})
        self.assertEqual(db["preferred_batch_size"], [4, 8])
        self.assertEqual(config["model_warmup"][0]["inputs"]["I"]["dims"], [1, 3])

        seq = model_config(
            sequence_batching={
                "max_sequence_idle_microseconds": "5000000",
                "oldest": {"max_queue_delay_microseconds": "10"},
                "state": [
                    {
                        "input_name": "S",
                        "dims": ["1"],
                        "initial_state": [{"name": "zero", "dims": ["1"]}],
                    }
                ],
            }
        ).as_dict()["sequence_batching"]
        self.assertEqual(seq["max_sequence_idle_microseconds"], 5000000)
        self.assertEqual(seq["oldest"]["max_queue_delay_microseconds"], 10)
        self.assertEqual(seq["state"][0]["dims"], [1])
        self.assertEqual(seq["state"][0]["initial_state"][0]["dims"], [1])

        ens = model_config(
            ensemble_scheduling={"step": [{"model_name": "a", "model_version": "-1"}]}
        ).as_dict()
        self.assertEqual(ens["ensemble_scheduling"]["step"][0]["model_version"], -1)

    def test_defaults_and_nulls(self):
        # Members our server may leave out or write as null are filled in as
        # Triton always writes them, or dropped.
        d = pb_utils.ModelConfig(
            json.dumps(
                {
                    "name": "m",
                    "input": [{"name": "I"}],
                    "output": [{"name": "O"}],
                    "sequence_batching": None,
                    "model_transaction_policy": {},
                }
            )
        ).as_dict()
        self.assertEqual(d["max_batch_size"], 0)
        self.assertEqual(
            d["input"], [{"name": "I", "data_type": "TYPE_INVALID", "dims": [], "optional": False}]
        )
        self.assertEqual(d["output"], [{"name": "O", "data_type": "TYPE_INVALID", "dims": []}])
        self.assertNotIn("sequence_batching", d)
        self.assertEqual(d["model_transaction_policy"], {"decoupled": False})
        empty = pb_utils.ModelConfig('{"name": "e"}').as_dict()
        self.assertEqual(empty, {"name": "e", "max_batch_size": 0, "input": [], "output": []})
        self.assertEqual(json.loads(json.dumps(d)), d)

    def test_set_max_batch_size(self):
        config = model_config()
        config.set_max_batch_size(4)
        self.assertEqual(config.as_dict()["max_batch_size"], 4)
        config = model_config(max_batch_size=4)
        config.set_max_batch_size(4)
        config.set_max_batch_size(8)
        self.assertEqual(config.as_dict()["max_batch_size"], 8)

    def test_set_max_batch_size_conflict(self):
        config = pb_utils.ModelConfig(
            json.dumps({"name": "conflicting_max_batch_size", "max_batch_size": 6})
        )
        self.assert_raises_text(
            "configuration specified max_batch_size 6, but in auto-complete-config function for "
            "model 'conflicting_max_batch_size' specified max_batch_size 4",
            config.set_max_batch_size,
            4,
        )
        self.assertEqual(config.as_dict()["max_batch_size"], 6)

    def test_set_dynamic_batching(self):
        config = model_config()
        config.set_dynamic_batching()
        self.assertEqual(config.as_dict()["dynamic_batching"], {})
        config = model_config(dynamic_batching={"preferred_batch_size": [2]})
        config.set_dynamic_batching()
        self.assertEqual(config.as_dict()["dynamic_batching"], {"preferred_batch_size": [2]})

    def test_set_dynamic_batching_conflict(self):
        for scheduler in ("sequence_batching", "ensemble_scheduling"):
            config = pb_utils.ModelConfig(
                json.dumps({"name": "conflicting_scheduler", scheduler: {}})
            )
            self.assert_raises_text(
                "Configuration specified scheduling_choice as '"
                + scheduler
                + "', but auto-complete-config function for model 'conflicting_scheduler' "
                "tries to set scheduling_choice as 'dynamic_batching'",
                config.set_dynamic_batching,
            )
            self.assertNotIn("dynamic_batching", config.as_dict())

    def test_add_new_tensors(self):
        config = model_config()
        i0 = {"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4], "optional": True}
        o0 = {"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [-1, 4]}
        config.add_input(i0)
        config.add_output(o0)
        self.assertEqual(config.as_dict()["input"], [i0])
        self.assertEqual(config.as_dict()["output"], [o0])

    def test_merge_into_existing(self):
        config = pb_utils.ModelConfig(json.dumps(ADD_SUB_CONFIG))
        # dims ["4"] (JSON int64 as a string) and [4] are the same dims.
        config.add_input({"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4]})
        config.add_output({"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]})
        d = config.as_dict()
        self.assertEqual(len(d["input"]), 2)
        self.assertEqual(
            d["input"][0],
            {"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4], "optional": False},
        )
        self.assertEqual(len(d["output"]), 1)
        self.assertEqual(d["output"][0]["dims"], [4])

    def test_merge_fills_name_only_entry(self):
        config = model_config(input=[{"name": "I"}], output=[{"name": "O"}])
        i = {"name": "I", "data_type": "TYPE_INT64", "dims": [2, 3], "optional": False}
        config.add_input(dict(i))
        config.add_output({"name": "O", "data_type": "TYPE_STRING", "dims": [1]})
        d = config.as_dict()
        self.assertEqual(d["input"], [i])
        self.assertEqual(d["output"], [{"name": "O", "data_type": "TYPE_STRING", "dims": [1]}])

    def test_dims_compared_by_value(self):
        config = model_config(input=[{"name": "I", "data_type": "TYPE_FP32", "dims": ["-1", "4"]}])
        config.add_input({"name": "I", "data_type": "TYPE_FP32", "dims": (-1, np.int64(4))})
        self.assertEqual(config.as_dict()["input"][0]["dims"], (-1, np.int64(4)))
        config = model_config(input=[{"name": "I", "data_type": "TYPE_FP32", "dims": [-1, 4]}])
        config.add_input({"name": "I", "data_type": "TYPE_FP32", "dims": ["-1", "4"]})
        self.assert_raises_text(
            "model 'm', tensor 'I': the model expects dims [-1, 5] but the model configuration "
            "specifies dims ['-1', '4']",
            config.add_input,
            {"name": "I", "data_type": "TYPE_FP32", "dims": [-1, 5]},
        )
        config = model_config(input=[{"name": "I", "data_type": "TYPE_FP32", "dims": [4]}])
        self.assert_raises_text(
            "model 'm', tensor 'I': the model expects dims [4, 1] but the model configuration "
            "specifies dims [4]",
            config.add_input,
            {"name": "I", "data_type": "TYPE_FP32", "dims": [4, 1]},
        )

    def test_input_mismatch_datatype(self):
        config = pb_utils.ModelConfig(
            json.dumps(dict(ADD_SUB_CONFIG, name="input_mismatch_datatype"))
        )
        self.assert_raises_text(
            "unable to load model 'input_mismatch_datatype', configuration expects datatype "
            "TYPE_INT32 for input 'INPUT1', model provides TYPE_FP32",
            config.add_input,
            {"name": "INPUT1", "data_type": "TYPE_FP32", "dims": [16]},
        )
        self.assertEqual(config.as_dict()["input"][1]["data_type"], "TYPE_INT32")

    def test_output_mismatch_datatype(self):
        config = pb_utils.ModelConfig(
            json.dumps(dict(ADD_SUB_CONFIG, name="output_mismatch_datatype"))
        )
        self.assert_raises_text(
            "unable to load model 'output_mismatch_datatype', configuration expects datatype "
            "TYPE_FP32 for output 'OUTPUT0', model provides TYPE_INT32",
            config.add_output,
            {"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [4]},
        )

    def test_mismatch_dims(self):
        config = pb_utils.ModelConfig(json.dumps(dict(ADD_SUB_CONFIG, name="input_mismatch_dims")))
        self.assert_raises_text(
            "model 'input_mismatch_dims', tensor 'INPUT1': the model expects dims [4] but the "
            "model configuration specifies dims [16]",
            config.add_input,
            {"name": "INPUT1", "data_type": "TYPE_INT32", "dims": [4]},
        )
        config = pb_utils.ModelConfig(json.dumps(dict(ADD_SUB_CONFIG, name="output_mismatch_dims")))
        self.assert_raises_text(
            "model 'output_mismatch_dims', tensor 'OUTPUT0': the model expects dims [16] but the "
            "model configuration specifies dims [4]",
            config.add_output,
            {"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [16]},
        )

    def test_datatype_checked_before_dims_and_invalid_skipped(self):
        config = model_config(input=[{"name": "I", "data_type": "TYPE_INT8", "dims": ["2"]}])
        self.assert_raises_text(
            "unable to load model 'm', configuration expects datatype TYPE_INT8 for input 'I', "
            "model provides TYPE_FP32",
            config.add_input,
            {"name": "I", "data_type": "TYPE_FP32", "dims": [3]},
        )
        config = model_config(input=[{"name": "I", "data_type": "TYPE_INVALID", "dims": ["2"]}])
        self.assert_raises_text(
            "model 'm', tensor 'I': the model expects dims [3] but the model configuration "
            "specifies dims [2]",
            config.add_input,
            {"name": "I", "data_type": "TYPE_FP32", "dims": [3]},
        )

    def test_empty_config_dims_take_the_models(self):
        config = model_config(input=[{"name": "I", "data_type": "TYPE_FP32", "dims": []}])
        config.add_input({"name": "I", "data_type": "TYPE_FP32", "dims": [7]})
        self.assertEqual(config.as_dict()["input"][0]["dims"], [7])

    def test_optional(self):
        # Triton always writes optional (false by default) into the JSON it
        # hands over, so a model that says optional True conflicts with a
        # config that does not mention it.
        for entry in (
            {"name": "I", "data_type": "TYPE_FP32", "dims": ["4"], "optional": False},
            {"name": "I", "data_type": "TYPE_FP32", "dims": ["4"]},
        ):
            config = model_config(input=[entry])
            self.assert_raises_text(
                "model 'm', tensor 'I': the model expects optional True but the model "
                "configuration specifies optional False",
                config.add_input,
                {"name": "I", "data_type": "TYPE_FP32", "dims": [4], "optional": True},
            )
        config = model_config(
            input=[{"name": "I", "data_type": "TYPE_FP32", "dims": ["4"], "optional": True}]
        )
        config.add_input({"name": "I", "data_type": "TYPE_FP32", "dims": [4], "optional": True})
        config.add_input({"name": "I", "data_type": "TYPE_FP32", "dims": [4]})
        self.assertTrue(config.as_dict()["input"][0]["optional"])
        # An input the model added without optional takes a later one.
        config = model_config()
        config.add_input({"name": "J", "data_type": "TYPE_FP32", "dims": [1]})
        config.add_input({"name": "J", "data_type": "TYPE_FP32", "dims": [1], "optional": True})
        self.assertEqual(
            config.as_dict()["input"],
            [{"name": "J", "data_type": "TYPE_FP32", "dims": [1], "optional": True}],
        )

    def test_wrong_property(self):
        config = pb_utils.ModelConfig('{"name": "input_wrong_property"}')
        self.assert_raises_text(
            "input 'INPUT1' in auto-complete-config function for model 'input_wrong_property' "
            "contains property other than 'name', 'data_type', 'dims' and 'optional'.",
            config.add_input,
            {"name": "INPUT1", "data_type": "TYPE_FP32", "dims": [4], "is_shape_tensor": True},
        )
        config = pb_utils.ModelConfig('{"name": "output_wrong_property"}')
        for extra in ({"optional": True}, {"reshape": {"shape": [4]}}):
            output = {"name": "OUTPUT1", "data_type": "TYPE_FP32", "dims": [4]}
            output.update(extra)
            self.assert_raises_text(
                "output 'OUTPUT1' in auto-complete-config function for model "
                "'output_wrong_property' "
                "contains property other than 'name', 'data_type' and 'dims'.",
                config.add_output,
                output,
            )
        self.assertEqual(config.as_dict()["output"], [])

    def test_missing_properties(self):
        for kind in ("input", "output"):
            model = kind + "_missing"
            config = pb_utils.ModelConfig(json.dumps({"name": model}))
            add = config.add_input if kind == "input" else config.add_output
            missing_name = (
                kind + " in auto-complete-config function for model '" + model
                + "' is missing 'name' property."
            )
            self.assert_raises_text(
                missing_name,
                add,
                {"data_type": "TYPE_FP32", "dims": [4]},
            )
            # Without a name there is nothing to name in the property error.
            self.assert_raises_text(
                missing_name,
                add,
                {"data_type": "TYPE_FP32", "dims": [4], "shape": [4]},
            )
            self.assert_raises_text(
                kind + " 'T0' in auto-complete-config function for model '" + model
                + "' is missing 'data_type' property.",
                add,
                {"name": "T0", "dims": [4]},
            )
            self.assert_raises_text(
                kind + " 'T1' in auto-complete-config function for model '" + model
                + "' is missing 'dims' property.",
                add,
                {"name": "T1", "data_type": "TYPE_FP32"},
            )
            self.assert_raises_text(
                kind + " 'T2' in auto-complete-config function for model '" + model
                + "' is missing 'data_type' property.",
                add,
                {"name": "T2"},
            )
            self.assertEqual(config.as_dict()[kind], [])

    def test_set_model_transaction_policy(self):
        config = model_config()
        config.set_model_transaction_policy({"decoupled": True})
        self.assertEqual(config.as_dict()["model_transaction_policy"], {"decoupled": True})
        self.assertTrue(pb_utils.using_decoupled_model_transaction_policy(config.as_dict()))
        config.set_model_transaction_policy({"decoupled": True})
        config.set_model_transaction_policy({})
        self.assertEqual(config.as_dict()["model_transaction_policy"], {"decoupled": True})
        config = model_config()
        config.set_model_transaction_policy({})
        self.assertEqual(config.as_dict()["model_transaction_policy"], {})

    def test_model_transaction_policy_invalid_args(self):
        config = pb_utils.ModelConfig('{"name": "model_transaction_policy_invalid_args"}')
        self.assert_raises_text(
            "model transaction property in auto-complete-config function for model "
            "'model_transaction_policy_invalid_args' contains property other than 'decoupled'.",
            config.set_model_transaction_policy,
            {"decoupled": True, "sequence": False},
        )
        self.assertNotIn("model_transaction_policy", config.as_dict())

    def test_model_transaction_policy_mismatch(self):
        # model_transaction_policy { decoupled: false } in config.pbtxt:
        # Triton writes {"decoupled": false}, protobuf JSON without defaults {}.
        for policy in ({"decoupled": False}, {}):
            config = pb_utils.ModelConfig(
                json.dumps(
                    {
                        "name": "model_transaction_policy_mismatch",
                        "model_transaction_policy": policy,
                    }
                )
            )
            self.assert_raises_text(
                "trying to change decoupled property in auto-complete-config for model "
                "'model_transaction_policy_mismatch', which is already set to 'False'.",
                config.set_model_transaction_policy,
                {"decoupled": True},
            )
        config = model_config(model_transaction_policy={"decoupled": True})
        self.assert_raises_text(
            "trying to change decoupled property in auto-complete-config for model "
            "'m', which is already set to 'True'.",
            config.set_model_transaction_policy,
            {"decoupled": False},
        )

    def test_auto_complete_round(self):
        # What a typical auto_complete_config does, from a config that names
        # nothing but the model, and the JSON the stub sends back.
        config = pb_utils.ModelConfig(json.dumps({"name": "add_sub", "backend": "python"}))
        d = config.as_dict()
        names = [i["name"] for i in d["input"]]
        for name in ("INPUT0", "INPUT1"):
            if name not in names:
                config.add_input({"name": name, "data_type": "TYPE_FP32", "dims": [4]})
        config.add_output({"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]})
        config.set_max_batch_size(8)
        config.set_dynamic_batching()
        config.set_model_transaction_policy(dict(decoupled=False))
        back = json.loads(json.dumps(config._model_config))
        self.assertEqual(
            back,
            {
                "name": "add_sub",
                "backend": "python",
                "max_batch_size": 8,
                "input": [
                    {"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4]},
                    {"name": "INPUT1", "data_type": "TYPE_FP32", "dims": [4]},
                ],
                "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]}],
                "dynamic_batching": {},
                "model_transaction_policy": {"decoupled": False},
            },
        )


if __name__ == "__main__":
    unittest.main()

