# The limit of backend/python's benchmarks (bench_test.go): a model's
# execute called directly inside one Python process, with no server, no
# pipes and no second process.
#
# It imports the stub (../../stub/stub.py, which has no side effects when
# imported and puts triton_python_backend_utils on the path), imports the
# model file the way the stub does, calls initialize, then answers commands,
# one a line, from --run or, without --run, from stdin; each answer is one
# line on stdout: a number, or "error: ..." (and the process goes on).
#
#   execute N B   N calls of execute, each with a list of B requests built
#                 once (the stub's InferenceRequest, pb_utils.Tensor inputs);
#                 prints ns per call
#   stub N B      N rounds of what the stub does for one execute command
#                 without its pipes: decode the command (marshal), build
#                 the B requests over shared memory (memfd), execute, write
#                 the responses' tensors to shared memory, encode the
#                 answer; prints ns per round
#   rtt N SIZE    N round trips of a message of about SIZE bytes over the
#                 pipes on --rtt-fd R,W, with the stub's own channel code
#                 (the other end echoes each message); prints ns per round
#                 trip
#
# Run by hand (Debian's python3, which has numpy), e.g. for add_sub:
#
#   /usr/bin/python3 backend/python/testdata/bench/direct.py --run 'execute 20000 1' --run 'stub 20000 1'

import argparse
import importlib.util
import json
import marshal
import os
import sys
import time

_here = os.path.dirname(os.path.abspath(__file__))

# add_sub's configuration as the server hands it to initialize (the parts
# the model reads).
_ADD_SUB_CONFIG = json.dumps({
    "name": "add_sub", "backend": "python", "max_batch_size": 8,
    "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4]},
              {"name": "INPUT1", "data_type": "TYPE_FP32", "dims": [4]}],
    "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]},
               {"name": "OUTPUT1", "data_type": "TYPE_FP32", "dims": [4]}],
})

_TRITON = {"float32": "FP32", "float64": "FP64", "int32": "INT32", "int64": "INT64", "uint8": "UINT8"}


def parse():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--stub", default=os.path.join(_here, "..", "..", "stub"), help="the folder of stub.py")
    p.add_argument("--model", default=os.path.join(_here, "..", "add_sub", "1", "model.py"), help="the model file")
    p.add_argument("--config", default=_ADD_SUB_CONFIG, help="the model configuration as JSON")
    p.add_argument("--input", action="append", help="NAME:DTYPE:SHAPE, e.g. INPUT0:float32:1,4 (repeatable)")
    p.add_argument("--output", action="append", help="a requested output name (repeatable)")
    p.add_argument("--rtt-fd", default="", help="R,W: pipes to read from and write to, whose other ends echo messages")
    p.add_argument("--run", action="append", help="a command (repeatable); without it, commands come from stdin")
    a = p.parse_args()
    a.input = a.input or ["INPUT0:float32:1,4", "INPUT1:float32:1,4"]
    a.output = a.output or ["OUTPUT0", "OUTPUT1"]
    return a


def import_model(path):
    """The model module, imported as the stub does: <version>.model."""
    version_dir = os.path.dirname(os.path.abspath(path))
    name = os.path.basename(version_dir) + "." + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class _NoEvents:
    """Stands in for the stub's event socket (nothing is sent here)."""
    sent = 0

    def send(self, msg):
        pass


class Bench:
    def __init__(self, a):
        sys.path.insert(0, os.path.abspath(a.stub))
        import stub  # noqa: E402 (after the path is set)
        import numpy as np

        self.stub, self.np = stub, np
        stub._numpy_names()  # what the stub's init command does first
        model_dir = os.path.dirname(os.path.dirname(os.path.abspath(a.model)))
        stub._state.update(model="bench", instance="bench_0", model_dir=model_dir)
        self.model = import_model(a.model).TritonPythonModel()
        if hasattr(self.model, "initialize"):
            self.model.initialize({
                "model_config": a.config, "model_instance_kind": "CPU", "model_instance_name": "bench_0",
                "model_instance_device_id": "0", "model_repository": model_dir, "model_version": "1",
                "model_name": "bench"})
        self.inputs = []
        for spec in a.input:
            name, dtype, shape = spec.split(":")
            shape = [int(d) for d in shape.split(",")]
            n = 1
            for d in shape:
                n *= d
            self.inputs.append((name, np.arange(n).astype(dtype).reshape(shape)))
        self.outputs = a.output
        self.rtt_fd = a.rtt_fd
        self.channel = None

    def requests(self, b):
        pb = self.stub
        return [pb.InferenceRequest(model_name="bench", requested_output_names=self.outputs,
                                    inputs=[pb.Tensor(n, v) for n, v in self.inputs]) for _ in range(b)]

    def execute(self, n, b):
        reqs, execute = self.requests(b), self.model.execute
        for _ in range(min(n, 100)):  # warm-up
            execute(reqs)
        t = time.perf_counter_ns()
        for _ in range(n):
            execute(reqs)
        return (time.perf_counter_ns() - t) / n

    def _regions(self, b):
        """The down region holding one execute command's inputs, and the
        message that names them (as the server lays them out)."""
        stub = self.stub
        align = lambda k: (k + 63) & ~63  # noqa: E731
        at = stub._HEADER + align(4 * b)  # the cancellation flags first
        reqs = []
        data = []
        for _ in range(b):
            ins = []
            for name, v in self.inputs:
                raw = v.tobytes()
                ins.append([name, _TRITON[str(v.dtype)], list(v.shape), at, len(raw)])
                data.append((at, raw))
                at += align(len(raw))
            reqs.append(["", 0, 0, 0, None, self.outputs, ins])  # as the server writes them (wire.go)
        fd = os.memfd_create("bench_down")
        os.ftruncate(fd, max(at, 4096))
        for off, raw in data:
            os.pwrite(fd, raw, off)
        stub.down = stub._Region(fd)
        if stub.up is None:
            stub.up = stub._UpRegion(os.memfd_create("bench_up"), 1 << 20, 1 << 30)
        stub._model = self.model
        stub.events = _NoEvents()
        return marshal.dumps(["execute", 1, stub._HEADER, reqs], 2)

    def stub_rounds(self, n, b):
        stub = self.stub
        raw = self._regions(b)

        def one():
            reply = stub._execute(marshal.loads(raw))  # ("done", id, seq, block, fail, responses)
            if reply[4] is not None:
                raise RuntimeError(reply[4])
            marshal.dumps(reply, 2)
            if reply[3] is not None:  # what the server does once it read them
                stub.up.release(reply[3])
        for _ in range(min(n, 100)):
            one()
        t = time.perf_counter_ns()
        for _ in range(n):
            one()
        return (time.perf_counter_ns() - t) / n

    def rtt(self, n, size):
        if not self.rtt_fd:
            raise RuntimeError("no --rtt-fd")
        if self.channel is None:
            rfd, wfd = (int(fd) for fd in self.rtt_fd.split(","))
            self.channel = self.stub._Channel(rfd, wfd, False)  # as the stub's command channel
        ch, msg = self.channel, {"op": "ping", "pad": "x" * max(size - 25, 0)}
        for _ in range(min(n, 100)):
            ch.send(msg)
            ch.recv()
        t = time.perf_counter_ns()
        for _ in range(n):
            ch.send(msg)
            ch.recv()
        return (time.perf_counter_ns() - t) / n

    def command(self, line):
        op, *args = line.split()
        args = [int(x) for x in args]
        fn = {"execute": self.execute, "stub": self.stub_rounds, "rtt": self.rtt}.get(op)
        if fn is None:
            raise ValueError("unknown command %r" % op)
        return fn(*args)


def main():
    a = parse()
    bench = Bench(a)
    lines = a.run if a.run else sys.stdin
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            out = "%.1f" % bench.command(line)
        except Exception as e:
            out = "error: %s: %s" % (type(e).__name__, e)
        print(out, flush=True)


if __name__ == "__main__":
    main()
