"""Tests of the stub's own code that runs without a server: how it builds
the requests of an execute command over the server's shared memory.
(Importing stub adds its classes to triton_python_backend_utils, hence a
module of its own.)

Run from this directory: /usr/bin/python3 -m unittest -v test_stub
"""

import gc
import json
import mmap
import os
import struct
import threading
import unittest
import weakref

import numpy as np

import stub
import triton_python_backend_utils as pb_utils


class StubRequestsTest(unittest.TestCase):
    """The requests of an execute command, as stub._requests builds them from
    the command's wire form over the server's shared memory."""

    def setUp(self):
        stub._numpy_names()
        fd = os.memfd_create("test_down")
        self.addCleanup(os.close, fd)
        os.ftruncate(fd, 4096)
        os.pwrite(fd, np.arange(4, dtype=np.float32).tobytes(), 128)
        stub.down = stub._Region(fd)
        self.mem = mmap.mmap(fd, 4096)
        self.addCleanup(self.mem.close)
        stub._state["model"] = "m"
        self.wire = [["r1", 7, 3, 100, {"k": "v"}, ["OUT"], [["IN", "FP32", [2, 2], 128, 16], ["E", "FP32", [0], 0, 0]]]]

    def test_fields(self):
        (r,) = stub._requests(stub._Batch(1, 64), self.wire)
        self.assertEqual((r.request_id(), r.correlation_id(), r.flags(), r.timeout()), ("r1", 7, 3, 100))
        self.assertEqual(r.requested_output_names(), {"OUT"})  # a set, as Triton's
        self.assertEqual(json.loads(r.parameters()), {"k": "v"})
        self.assertEqual([t.name() for t in r.inputs()], ["IN", "E"])
        self.assertEqual(pb_utils.get_input_tensor_by_name(r, "E").as_numpy().shape, (0,))

    def test_input_is_a_view_of_shared_memory(self):
        (r,) = stub._requests(stub._Batch(1, 64), self.wire)
        a = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()
        self.assertEqual((a.dtype, a.shape, a.tolist()), (np.float32, (2, 2), [[0, 1], [2, 3]]))
        self.mem[128:132] = struct.pack("<f", 9.5)  # the server's bytes, changed under the array
        self.assertEqual(a[0, 0], 9.5)

    def test_freed_without_the_cycle_collector(self):
        gc.disable()
        self.addCleanup(gc.enable)
        reqs = stub._requests(stub._Batch(1, 64), self.wire)
        first, tensor = weakref.ref(reqs[0]), weakref.ref(reqs[0].inputs()[0])
        del reqs
        self.assertIsNone(first(), "a request outlived its list: it is in a reference cycle")
        self.assertIsNone(tensor(), "an input outlived its request")


class HeldInputsTest(unittest.TestCase):
    """_hold_inputs: whether the model kept some of a batch's inputs once
    execute returned, and the "freed" that comes when it lets the last go."""

    def setUp(self):
        StubRequestsTest.setUp(self)  # its shared memory and command
        while not stub._dropped.empty():  # what other tests left there
            stub._dropped.get_nowait()

    def held(self, keep):
        batch = stub._Batch(5, 64)
        reqs = stub._requests(batch, self.wire)
        kept = keep(reqs[0])
        del reqs
        return kept, stub._hold_inputs(batch)  # as _execute calls it

    def test_nothing_kept(self):
        for keep in (lambda r: None, lambda r: r.inputs()[0].as_numpy().copy(), lambda r: r.request_id()):
            self.assertFalse(self.held(keep)[1])
        self.assertNotIn(5, stub._held_inputs)

    def test_kept_until_freed(self):
        keeps = {
            "request": lambda r: r,
            "tensor": lambda r: r.inputs()[0],
            "array": lambda r: r.inputs()[0].as_numpy(),
            "view of the array": lambda r: r.inputs()[0].as_numpy()[1:].reshape(2),
            "memoryview of the array": lambda r: memoryview(r.inputs()[0].as_numpy()),
            "response sender": lambda r: r.get_response_sender(),
        }
        for what, keep in keeps.items():
            with self.subTest(what):
                kept, held = self.held(keep)
                self.assertTrue(held)
                self.assertTrue(stub._dropped.empty())
                del kept  # outside execute: _cancel_dropped is to send it
                self.assertIs(stub._dropped.get_nowait(), stub._FLUSH)
                self.assertEqual(stub._take_freed(), [5])
                self.assertNotIn(5, stub._held_inputs)

    def test_freed_in_execute_goes_with_the_answer(self):
        kept, held = self.held(lambda r: r)
        self.assertTrue(held)
        stub._state["answering"] = True  # as in the next execute, on this (the main) thread
        self.addCleanup(stub._state.update, answering=False)
        del kept
        self.assertTrue(stub._dropped.empty())
        self.assertEqual(stub._take_freed(), [5])

    def test_async_execute_keeps_nothing(self):
        # The event loop made in the first async execute copies the context
        # of that execute: the batch must not be in it.
        class Model:
            async def execute(self, requests):
                return [pb_utils.InferenceResponse([]) for _ in requests]
        self.addCleanup(setattr, stub, "_model", stub._model)
        self.addCleanup(setattr, stub, "events", stub.events)
        stub._model, stub.events = Model(), type("Events", (), {"sent": 0})()
        for bid in (7, 8):
            answer = stub._execute(["execute", bid, 64, self.wire])
            self.assertIsNone(answer[4])
            self.assertFalse(answer[7], "batch %d held" % bid)

    def test_offset_of_an_input_array(self):
        (r,) = stub._requests(stub._Batch(1, 64), self.wire)
        self.assertEqual(stub.down.offset_of(r.inputs()[0].as_numpy()), 128)


class AbandonedCallTest(unittest.TestCase):
    """Replies nobody reads any more give their blocks back: those an
    abandoned call holds, and those that arrive after it was closed."""

    def setUp(self):
        fd = os.memfd_create("test_down")
        self.addCleanup(os.close, fd)
        os.ftruncate(fd, 4096)
        stub.down = stub._Region(fd)
        self.mem = mmap.mmap(fd, 4096)
        self.addCleanup(self.mem.close)

    def held(self, block):
        """Marks the block at block as the server's (a live state word)."""
        struct.pack_into("<I", self.mem, block - stub._HEADER, 1)

    def state(self, block):
        return struct.unpack_from("<I", self.mem, block - stub._HEADER)[0]

    def test_release_is_one_store(self):
        # The server may reuse a block the moment its state word reads 0,
        # and store 1 there: the release must be a single store of the low
        # byte, not a zero-fill followed by a second write of the value.
        struct.pack_into("<I", self.mem, 256 - stub._HEADER, 0x01010101)
        stub.down.release(256)
        self.assertEqual(self.state(256), 0x01010100)

    def test_abandon_and_late_replies(self):
        calls = stub._Calls()
        call = calls.open()
        for b in (256, 512, 1024):
            self.held(b)
        calls.deliver(call.id, {"outputs": [], "block": 256})
        calls.deliver(call.id, {"error": {"msg": "x", "code": 0}})
        calls.abandon(call)
        self.assertEqual(self.state(256), 0, "a buffered reply kept its block")
        self.assertEqual(call.items, [])
        calls.deliver(call.id, {"outputs": [], "block": 512})
        self.assertEqual(self.state(512), 0, "a reply after the call closed kept its block")
        self.assertEqual(self.state(1024), 1, "a block nobody replied with was released")


class BLSTest(unittest.TestCase):
    """A BLS call: its output tensors, and the phases where exec is
    refused."""

    def setUp(self):
        stub._numpy_names()
        fd = os.memfd_create("test_down")
        self.addCleanup(os.close, fd)
        os.ftruncate(fd, 4096)
        stub.down = stub._Region(fd)
        os.pwrite(fd, np.arange(4, dtype=np.float32).tobytes(), 128)
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        self.addCleanup(os.close, w)
        self.addCleanup(setattr, stub, "events", getattr(stub, "events", None))
        stub.events = stub._Channel(r, w, True)
        self.addCleanup(setattr, stub, "_model", stub._model)
        self.addCleanup(setattr, stub, "up", stub.up)
        up = os.memfd_create("test_up")
        self.addCleanup(os.close, up)
        stub.up = stub._UpRegion(up, 1 << 16, 1 << 20)
        self.request = pb_utils.InferenceRequest(
            model_name="m", requested_output_names=["OUT"], inputs=[pb_utils.Tensor("IN", np.zeros(2, np.float32))])

    def test_outputs_are_writable(self):
        # The model may change a BLS output in place or hand it on through
        # DLPack (torch.utils.dlpack.from_dlpack(out.to_dlpack())), as it
        # may its own arrays.
        resp = stub._bls_response({"outputs": [["OUT", "FP32", [4], 128, 16]]})
        out = pb_utils.get_output_tensor_by_name(resp, "OUT")
        a = out.as_numpy()
        a += 1
        self.assertEqual(a.tolist(), [1, 2, 3, 4])
        self.assertEqual(np.from_dlpack(out).tolist(), [1, 2, 3, 4])
        self.assertEqual(stub.down.view(128, 4).tobytes(), np.float32(0).tobytes(), "the copy shares the server's memory")

    def test_refused_before_initialize_returns_and_in_finalize(self):
        refused = "BLS is only supported during the 'execute' function."
        stub._model = None  # initialize has not returned
        self.assertEqual(self.request.exec().error().message(), refused)
        stub._model = object()
        self.addCleanup(stub._state.update, {"finalizing": False})
        stub._state["finalizing"] = True
        self.assertEqual(self.request.exec().error().message(), refused)
        self.assertEqual(stub.events.sent, 0)

    def test_allowed_outside_execute(self):
        # As Triton: from a thread of the model's own, execute or not.
        stub._model = object()
        self.assertFalse(stub._state["in_execute"])
        done = []
        t = threading.Thread(target=lambda: done.append(self.request.exec(decoupled=True)))
        t.start()
        t.join()
        self.assertIsInstance(done[0], stub.ResponseIterator)
        self.assertEqual(stub.events.sent, 1, "the call was not sent to the server")


class FailedExecuteTest(unittest.TestCase):
    """An execute that raises closes its requests' response senders, as
    Triton's stub does: the server has answered every request of the batch
    with the error, so a later send raises instead of waiting for credits
    the server will never return."""

    def setUp(self):
        stub._numpy_names()
        fd = os.memfd_create("test_down")
        self.addCleanup(os.close, fd)
        os.ftruncate(fd, 4096)
        stub.down = stub._Region(fd)
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        self.addCleanup(os.close, w)
        for name in ("events", "_model", "_decoupled", "_send_window"):
            self.addCleanup(setattr, stub, name, getattr(stub, name, None))
        stub.events = stub._Channel(r, w, True)
        stub._decoupled, stub._send_window = True, 16

    def test_senders_close(self):
        senders = []

        class Model:
            def execute(self, requests):
                s = requests[0].get_response_sender()
                s.send(pb_utils.InferenceResponse([]))
                senders.append(s)
                raise ValueError("boom")

        stub._model = Model()
        answer = stub._execute(["execute", 1, 64, [["r", 0, 0, 0, None, None, []]]])
        self.assertIn("boom", answer[4])
        with self.assertRaises(pb_utils.TritonModelException) as e:
            senders[0].send(pb_utils.InferenceResponse([]))
        self.assertEqual(str(e.exception), "Unable to send response. Response sender has been closed.")
        self.assertNotIn((1, 0), stub._senders.open)


class TensorNameTest(unittest.TestCase):
    def test_name(self):
        stub._numpy_names()
        with self.assertRaises(TypeError):  # as pybind's in Triton
            pb_utils.Tensor(1, np.zeros(1))
        with self.assertRaises(pb_utils.TritonModelException) as e:
            pb_utils.Tensor("", np.zeros(1))
        self.assertEqual(str(e.exception), "Tensor name cannot be an empty string.")


class DLPackTest(unittest.TestCase):
    """DLPack both ways: BF16, which numpy has no type for, travels as its
    bits under kDLBfloat, and a tensor made from DLPack goes out again."""

    def setUp(self):
        stub._numpy_names()

    def test_bf16_is_exported_as_bfloat16(self):
        bits = np.array([0x3FC0, 0xC000], np.uint16)  # 1.5, -2
        t = stub.Tensor._from_wire("X", "BF16", [2], memoryview(bytearray(bits.tobytes())))
        capsule = t.to_dlpack()
        self.assertEqual(stub._dl_dtype(capsule), (stub._DL_BFLOAT, 16, 1))
        back = pb_utils.Tensor.from_dlpack("Y", capsule)  # a bfloat16 capsule comes in as BF16
        self.assertEqual(back.triton_dtype(), 14)  # TYPE_BF16
        self.assertEqual(back._array.tolist(), bits.tolist())

    def test_round_trip(self):
        # numpy marks an array made from DLPack read-only, and exports only
        # writable ones: the tensor goes out again all the same.
        t = pb_utils.Tensor.from_dlpack("X", np.arange(3, dtype=np.float32))
        self.assertEqual(np.from_dlpack(t).tolist(), [0, 1, 2])
        self.assertEqual(np.from_dlpack(stub._Capsule(t.to_dlpack())).tolist(), [0, 1, 2])


class ModelLoadingTest(unittest.TestCase):
    """The model loading API's checks in the stub: version strings read as
    Triton reads them, and the phases where the API is refused (before
    anything is sent to the server)."""

    def test_model_version(self):
        for text, want in (("", -1), ("1", 1), (" 2x", 2), ("+3", 3), ("0", 0)):
            self.assertEqual(stub._model_version(text), want, text)
        fail = "Failed to check model readiness: failed to get model version from specified version string "
        for text, tail in (("abc", " (details: stol)"), ("-1", ""), ("9" * 20, " (details: stol)"), ("- 1", " (details: stol)")):
            with self.assertRaises(pb_utils.TritonModelException) as e:
                stub._model_version(text)
            self.assertEqual(str(e.exception), fail + "'%s'%s, version should be an integral value > 0" % (text, tail))

    def test_refused_in_auto_complete_and_finalize(self):
        for phase, name in (("auto_complete", "auto_complete_config"), ("finalizing", "finalize")):
            self.addCleanup(stub._state.update, {phase: stub._state[phase]})
            stub._state[phase] = True
            with self.assertRaises(pb_utils.TritonModelException) as e:
                pb_utils.unload_model(model_name="m")
            self.assertEqual(str(e.exception), "Failed to unload model: the model loading API is not supported in " + name)
            stub._state[phase] = False

    def test_files_beyond_a_message(self):
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        self.addCleanup(os.close, w)
        self.addCleanup(setattr, stub, "events", getattr(stub, "events", None))
        stub.events = stub._Channel(r, w, True)
        with self.assertRaises(pb_utils.TritonModelException) as e:
            pb_utils.load_model("m", "{}", {"file:1/model.onnx": bytes(stub._MAX_MESSAGE)})
        self.assertTrue(str(e.exception).startswith("Failed to load model: a message of "), str(e.exception))
        self.assertEqual(stub.events.sent, 0)

    def test_files_must_be_bytes(self):
        for files in ([b"x"], {"file:1/model.py": "text"}):
            with self.assertRaises(pb_utils.TritonModelException) as e:
                pb_utils.load_model("m", "{}", files)
            self.assertTrue(str(e.exception).startswith("failed to load model 'm', files should be a dictionary"))


class OffsetOfTest(unittest.TestCase):
    """Region.offset_of finds the offset of an array that is a view of the
    region, and nothing for one that is not."""

    def test_views_and_others(self):
        fd = os.memfd_create("test_offset")
        self.addCleanup(os.close, fd)
        os.ftruncate(fd, 1 << 16)
        region = stub._Region(fd)
        a = np.ndarray((1024,), np.uint8, region.view(4096, 1024))
        self.assertEqual(region.offset_of(a), 4096)
        self.assertEqual(region.offset_of(a[512:]), 4096 + 512)
        self.assertEqual(region.offset_of(a.reshape(32, 32)), 4096)
        self.assertIsNone(region.offset_of(a[::2]), "not contiguous")
        self.assertIsNone(region.offset_of(a.copy()), "a copy")
        other = mmap.mmap(-1, 4096)
        self.addCleanup(other.close)
        b = np.ndarray((16,), np.uint8, memoryview(other)[:16])
        self.assertIsNone(region.offset_of(b), "a view of another mapping")
        del b
        os.ftruncate(fd, 1 << 17)  # the writer grows the region: a view beyond the old size remaps it
        c = np.ndarray((16,), np.uint8, region.view(1 << 16, 16))
        self.assertEqual(region.offset_of(c), 1 << 16)
        self.assertEqual(region.offset_of(a), 4096, "a view of the old mapping")
        self.assertEqual(len(region.maps), 2)
        del a
        gc.collect()
        self.assertEqual(len(region.maps), 1, "an old mapping nobody views stayed")
        del c


class ChannelTest(unittest.TestCase):
    """The stub's message channel over a pipe: messages in order, one larger
    than the pipe and the read buffer, and the end of the pipe."""

    def test_round_trip(self):
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        tx, rx = stub._Channel(-1, w, True), stub._Channel(r, -1, False)
        big = {"op": "x", "pad": "y" * (3 << 20)}  # beyond the pipe's 64 KiB and the 64 KiB buffer
        msgs = [["execute", 1, 64, []], big, ("done", 1, 0, None, None, None)]
        def write():
            for m in msgs:
                tx.send(m)
            os.close(w)
        writer = threading.Thread(target=write)
        writer.start()
        got = [rx.recv() for _ in msgs]
        writer.join()
        self.assertEqual(got, msgs)
        self.assertEqual(tx.sent, 3)
        with self.assertRaises(EOFError):
            rx.recv()
