#!/usr/bin/python3
"""Writes the repository of the memory-budget benchmark: N ONNX models
(model_00, model_01, ...), each a 1024x1024 FP32 MatMul and Relu with its
own weights (4 MiB of initializers), with a config.pbtxt.

Usage: /usr/bin/python3 scripts/gen-budget-models.py OUTDIR [N]   (N: 20)

Needs Debian's python3-onnx and python3-numpy. Deterministic: the weights
of model_i come from numpy's generator seeded with i.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SIDE = 1024

CONFIG = """name: "%s"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ %d ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ %d ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
"""


def model(seed):
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array((rng.standard_normal((SIDE, SIDE)) / 32).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Relu", ["xw"], ["y"])],
        "budget",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", SIDE])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", SIDE])],
        [w],
    )
    m = helper.make_model(graph, producer_name="triton-go scripts/gen-budget-models.py", producer_version="1",
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 20
    for i in range(n):
        name = "model_%02d" % i
        os.makedirs(os.path.join(out, name, "1"), exist_ok=True)
        with open(os.path.join(out, name, "config.pbtxt"), "w") as f:
            f.write(CONFIG % (name, SIDE, SIDE))
        onnx.save(model(i), os.path.join(out, name, "1", "model.onnx"))


if __name__ == "__main__":
    main()
