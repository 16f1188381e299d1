#!/usr/bin/python3
"""Writes the small ONNX test models of backend/onnxruntime (and the
vocabulary of sentiment.onnx, sentiment_vocab.txt).

Usage: /usr/bin/python3 scripts/gen-test-models.py [OUTDIR]
       (default OUTDIR: backend/onnxruntime/testdata/models; `make models`)

Needs Debian's python3-onnx (ONNX 1.12): `apt-get install -y python3-onnx`.
The output is deterministic: running it twice gives byte-identical files
(fixed producer name and version, no timestamps, IR version 8, opset 13).
Every model is checked with onnx.checker.check_model before it is written.
See backend/onnxruntime/testdata/models/README.md for what each model does.
"""

import os
import sys

import onnx
from onnx import TensorProto, helper

IR_VERSION = 8  # ONNX Runtime 1.24 accepts IR 3..11; 8 is what ONNX 1.12 writes.
OPSET = 13
PRODUCER = "triton-go scripts/gen-test-models.py"
PRODUCER_VERSION = "1"

# Triton data type suffix -> ONNX element type.
IDENTITY_TYPES = [
    ("bool", TensorProto.BOOL),
    ("uint8", TensorProto.UINT8),
    ("uint16", TensorProto.UINT16),
    ("uint32", TensorProto.UINT32),
    ("uint64", TensorProto.UINT64),
    ("int8", TensorProto.INT8),
    ("int16", TensorProto.INT16),
    ("int32", TensorProto.INT32),
    ("int64", TensorProto.INT64),
    ("fp16", TensorProto.FLOAT16),
    ("fp32", TensorProto.FLOAT),
    ("fp64", TensorProto.DOUBLE),
    ("string", TensorProto.STRING),
]


def vi(name, elem_type, shape):
    """A value info; str entries of shape are symbolic dims (dim_param)."""
    return helper.make_tensor_value_info(name, elem_type, shape)


def model(name, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(
        nodes, name, inputs, outputs, initializer=list(initializers)
    )
    m = helper.make_model(
        graph,
        producer_name=PRODUCER,
        producer_version=PRODUCER_VERSION,
        opset_imports=[helper.make_opsetid("", OPSET)],
    )
    m.ir_version = IR_VERSION
    onnx.checker.check_model(m, full_check=True)
    return m


def identity(suffix, elem_type):
    return model(
        "identity_" + suffix,
        [helper.make_node("Identity", ["INPUT0"], ["OUTPUT0"], name="identity")],
        [vi("INPUT0", elem_type, ["batch", "n"])],
        [vi("OUTPUT0", elem_type, ["batch", "n"])],
    )


def add_sub():
    return model(
        "add_sub",
        [
            helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"], name="add"),
            helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"], name="sub"),
        ],
        [
            vi("INPUT0", TensorProto.FLOAT, ["batch", 16]),
            vi("INPUT1", TensorProto.FLOAT, ["batch", 16]),
        ],
        [
            vi("OUTPUT0", TensorProto.FLOAT, ["batch", 16]),
            vi("OUTPUT1", TensorProto.FLOAT, ["batch", 16]),
        ],
    )


def softmax():
    return model(
        "softmax",
        [helper.make_node("Softmax", ["LOGITS"], ["PROBS"], name="softmax", axis=-1)],
        [vi("LOGITS", TensorProto.FLOAT, ["batch", 10])],
        [vi("PROBS", TensorProto.FLOAT, ["batch", 10])],
    )


def multi_io():
    return model(
        "multi_io",
        [
            helper.make_node("Mul", ["FLOATS", "two"], ["SCALED"], name="scale"),
            helper.make_node("Add", ["INTS", "one"], ["SHIFTED"], name="shift"),
            helper.make_node("Identity", ["TEXT"], ["TEXT_OUT"], name="text"),
        ],
        [
            vi("FLOATS", TensorProto.FLOAT, ["batch", 4]),
            vi("INTS", TensorProto.INT64, ["batch", 2]),
            vi("TEXT", TensorProto.STRING, ["batch"]),
        ],
        [
            vi("SCALED", TensorProto.FLOAT, ["batch", 4]),
            vi("SHIFTED", TensorProto.INT64, ["batch", 2]),
            vi("TEXT_OUT", TensorProto.STRING, ["batch"]),
        ],
        [
            helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
            helper.make_tensor("one", TensorProto.INT64, [], [1]),
        ],
    )


def matmul_fixed():
    return model(
        "matmul_fixed",
        [helper.make_node("MatMul", ["X", "W"], ["Y"], name="matmul")],
        [vi("X", TensorProto.FLOAT, [2, 3])],
        [vi("Y", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor("W", TensorProto.FLOAT, [3, 2], [1, 2, 3, 4, 5, 6])],
    )


def reduce_dynamic():
    return model(
        "reduce_dynamic",
        [
            helper.make_node(
                "ReduceSum", ["X", "axes"], ["SUM"], name="sum", keepdims=0
            )
        ],
        [vi("X", TensorProto.FLOAT, ["batch", "rows", 3])],
        [vi("SUM", TensorProto.FLOAT, ["batch", "rows"])],
        [helper.make_tensor("axes", TensorProto.INT64, [1], [-1])],
    )


def sum_int32_nobatch():
    # No axes input: ReduceSum reduces every axis; keepdims=1 keeps rank 1.
    return model(
        "sum_int32_nobatch",
        [helper.make_node("ReduceSum", ["X"], ["TOTAL"], name="sum", keepdims=1)],
        [vi("X", TensorProto.INT32, ["n"])],
        [vi("TOTAL", TensorProto.INT32, [1])],
    )


def reshape_rows():
    # Reshapes [batch, n] into rows of 4: ONNX Runtime rejects, at run time,
    # an input whose element count is not a multiple of 4 (tests of inputs
    # the model itself refuses, after the server's checks passed).
    return model(
        "reshape_rows",
        [helper.make_node("Reshape", ["X", "rows"], ["Y"], name="reshape")],
        [vi("X", TensorProto.FLOAT, ["batch", "n"])],
        [vi("Y", TensorProto.FLOAT, ["m", 4])],
        [helper.make_tensor("rows", TensorProto.INT64, [2], [-1, 4])],
    )


def accumulate():
    # A stateful model for the sequence batcher's implicit state: START is
    # the CONTROL_SEQUENCE_START control (int32_false_true [0, 1]), STATE_IN
    # the state the server feeds back from the previous request's STATE_OUT.
    #   OUTPUT    = INPUT + STATE_IN * (1 - float(START))
    #   STATE_OUT = OUTPUT
    return model(
        "accumulate",
        [
            helper.make_node(
                "Cast", ["START"], ["start_f"], name="start", to=TensorProto.FLOAT
            ),
            helper.make_node("Sub", ["one", "start_f"], ["keep"], name="keep"),
            helper.make_node("Mul", ["STATE_IN", "keep"], ["carried"], name="carry"),
            helper.make_node("Add", ["INPUT", "carried"], ["OUTPUT"], name="add"),
            helper.make_node("Identity", ["OUTPUT"], ["STATE_OUT"], name="state"),
        ],
        [
            vi("INPUT", TensorProto.FLOAT, ["batch", 4]),
            vi("STATE_IN", TensorProto.FLOAT, ["batch", 4]),
            vi("START", TensorProto.INT32, ["batch", 1]),
        ],
        [
            vi("OUTPUT", TensorProto.FLOAT, ["batch", 4]),
            vi("STATE_OUT", TensorProto.FLOAT, ["batch", 4]),
        ],
        [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])],
    )


def accumulate_axis1():
    # accumulate with its state laid out [2, batch, 4], the batch on axis 1
    # (as recurrent state is, e.g. Silero VAD's [2, batch, 128]):
    #   OUTPUT       = INPUT + STATE_IN[0] * (1 - float(START))
    #   STATE_OUT[j] = OUTPUT for j = 0, 1
    return model(
        "accumulate_axis1",
        [
            helper.make_node(
                "Cast", ["START"], ["start_f"], name="start", to=TensorProto.FLOAT
            ),
            helper.make_node("Sub", ["one", "start_f"], ["keep"], name="keep"),
            helper.make_node(
                "Gather", ["STATE_IN", "zero"], ["layer0"], name="layer0", axis=0
            ),
            helper.make_node("Mul", ["layer0", "keep"], ["carried"], name="carry"),
            helper.make_node("Add", ["INPUT", "carried"], ["OUTPUT"], name="add"),
            helper.make_node(
                "Unsqueeze", ["OUTPUT", "axis0"], ["layer"], name="layer"
            ),
            helper.make_node(
                "Concat", ["layer", "layer"], ["STATE_OUT"], name="state", axis=0
            ),
        ],
        [
            vi("INPUT", TensorProto.FLOAT, ["batch", 4]),
            vi("STATE_IN", TensorProto.FLOAT, [2, "batch", 4]),
            vi("START", TensorProto.INT32, ["batch", 1]),
        ],
        [
            vi("OUTPUT", TensorProto.FLOAT, ["batch", 4]),
            vi("STATE_OUT", TensorProto.FLOAT, [2, "batch", 4]),
        ],
        [
            helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]),
            helper.make_tensor("zero", TensorProto.INT64, [], [0]),
            helper.make_tensor("axis0", TensorProto.INT64, [1], [0]),
        ],
    )


# The WordPiece vocabulary of the example repository's preprocess model
# (written as sentiment_vocab.txt, one token a line, the id is the 0-based line
# number) and the words sentiment.onnx weighs. Order is part of the format:
# append, never reorder.
VOCAB = (
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", ".", ",", "!", "?", "'"]
    + "the a an is was are it this that i you we they and but or so not no very really too".split()
    + "movie film book food service phone day story plot music place staff price time".split()
    + "good great love like nice best fun happy wonderful excellent".split()
    + "bad terrible hate awful worst boring sad poor slow broken".split()
    + "un re play work read help watch enjoy".split()
    + "##s ##ed ##ing ##ly ##er ##est ##ful ##ness ##able ##y ##d".split()
)
POSITIVE = set("good great love like nice best fun happy wonderful excellent enjoy".split())
NEGATIVE = set("bad terrible hate awful worst boring sad poor slow broken".split())
SENTIMENT_CLASSES = 3  # negative, neutral, positive


def sentiment():
    # A bag-of-words text classifier over the ids of the preprocess model:
    #   LOGITS = sum over tokens t with ATTENTION_MASK 1 of W[INPUT_IDS[t]] + B
    # W[id] = [1, 0, 0] for a negative word, [0, 0, 1] for a positive one,
    # 0 otherwise; B = [0, 0.5, 0], so a text without either is neutral.
    weights = []
    for tok in VOCAB:
        weights += [float(tok in NEGATIVE), 0.0, float(tok in POSITIVE)]
    return model(
        "sentiment",
        [
            helper.make_node("Gather", ["W", "INPUT_IDS"], ["emb"], name="embed", axis=0),
            helper.make_node(
                "Cast", ["ATTENTION_MASK"], ["mask_f"], name="mask", to=TensorProto.FLOAT
            ),
            helper.make_node("Unsqueeze", ["mask_f", "axis2"], ["mask3"], name="mask3"),
            helper.make_node("Mul", ["emb", "mask3"], ["kept"], name="keep"),
            helper.make_node(
                "ReduceSum", ["kept", "axis1"], ["sum"], name="sum", keepdims=0
            ),
            helper.make_node("Add", ["sum", "B"], ["LOGITS"], name="bias"),
        ],
        [
            vi("INPUT_IDS", TensorProto.INT64, ["batch", "seq"]),
            vi("ATTENTION_MASK", TensorProto.INT64, ["batch", "seq"]),
        ],
        [vi("LOGITS", TensorProto.FLOAT, ["batch", SENTIMENT_CLASSES])],
        [
            helper.make_tensor(
                "W", TensorProto.FLOAT, [len(VOCAB), SENTIMENT_CLASSES], weights
            ),
            helper.make_tensor("B", TensorProto.FLOAT, [SENTIMENT_CLASSES], [0.0, 0.5, 0.0]),
            helper.make_tensor("axis1", TensorProto.INT64, [1], [1]),
            helper.make_tensor("axis2", TensorProto.INT64, [1], [2]),
        ],
    )


def detector():
    # The first model of the example repository's BLS pipeline
    # (detect_classify): a 4x4 grey image, flattened, gets a score in (0, 1):
    #   SCORE = sigmoid(mean(INPUT))
    return model(
        "detector",
        [
            helper.make_node("MatMul", ["INPUT", "w"], ["mean"], name="mean"),
            helper.make_node("Sigmoid", ["mean"], ["SCORE"], name="sigmoid"),
        ],
        [vi("INPUT", TensorProto.FLOAT, ["batch", 16])],
        [vi("SCORE", TensorProto.FLOAT, ["batch", 1])],
        [helper.make_tensor("w", TensorProto.FLOAT, [16, 1], [1.0 / 16] * 16)],
    )


def classifier():
    # The second model of detect_classify, run only on what the detector
    # found: which of the 4 columns of the 4x4 image is brightest,
    #   PROBS = softmax(column sums of INPUT), W[i][j] = 1 if i % 4 == j
    return model(
        "classifier",
        [
            helper.make_node("MatMul", ["INPUT", "W"], ["logits"], name="columns"),
            helper.make_node("Softmax", ["logits"], ["PROBS"], name="softmax", axis=-1),
        ],
        [vi("INPUT", TensorProto.FLOAT, ["batch", 16])],
        [vi("PROBS", TensorProto.FLOAT, ["batch", 4])],
        [
            helper.make_tensor(
                "W",
                TensorProto.FLOAT,
                [16, 4],
                [float(i % 4 == j) for i in range(16) for j in range(4)],
            )
        ],
    )


def ragged():
    """Ragged batching: X is the elements of every request of a batch in one
    rank-1 tensor, OFFSETS where each request's elements start and end
    (batch input BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO); Y is each
    element plus 100 times the index of its request (the number of requests
    that end at or before the element)."""
    return model(
        "ragged",
        [
            helper.make_node("Shape", ["X"], ["n"], name="n"),
            helper.make_node("Squeeze", ["n", "zero"], ["n0"], name="n0"),
            helper.make_node("Range", ["zero_i64", "n0", "one_i64"], ["pos"], name="pos"),
            helper.make_node("Cast", ["pos"], ["posi"], name="posi", to=TensorProto.INT32),
            helper.make_node("Unsqueeze", ["posi", "one"], ["col"], name="col"),
            helper.make_node("Slice", ["OFFSETS", "one", "big"], ["ends"], name="ends"),
            helper.make_node("Unsqueeze", ["ends", "zero"], ["row"], name="row"),
            helper.make_node("LessOrEqual", ["row", "col"], ["done"], name="done"),
            helper.make_node("Cast", ["done"], ["donef"], name="donef", to=TensorProto.FLOAT),
            helper.make_node("ReduceSum", ["donef", "one"], ["index"], name="index", keepdims=0),
            helper.make_node("Mul", ["index", "hundred"], ["shift"], name="shift"),
            helper.make_node("Add", ["X", "shift"], ["Y"], name="y"),
        ],
        [vi("X", TensorProto.FLOAT, ["elements"]), vi("OFFSETS", TensorProto.INT32, ["requests_and_one"])],
        [vi("Y", TensorProto.FLOAT, ["elements"])],
        [
            helper.make_tensor("zero", TensorProto.INT64, [1], [0]),
            helper.make_tensor("one", TensorProto.INT64, [1], [1]),
            helper.make_tensor("big", TensorProto.INT64, [1], [2**31 - 1]),
            helper.make_tensor("zero_i64", TensorProto.INT64, [], [0]),
            helper.make_tensor("one_i64", TensorProto.INT64, [], [1]),
            helper.make_tensor("hundred", TensorProto.FLOAT, [], [100.0]),
        ],
    )


def custom_op():
    """Y = Scale(X), an operator of the domain ai.triton_go.test, which no
    library registers: what a model made for a custom-op library
    (model_operations) looks like to a server without it."""
    graph = helper.make_graph(
        [helper.make_node("Scale", ["X"], ["Y"], name="scale", domain="ai.triton_go.test")],
        "custom_op",
        [vi("X", TensorProto.FLOAT, ["batch", 4])],
        [vi("Y", TensorProto.FLOAT, ["batch", 4])],
    )
    m = helper.make_model(
        graph,
        producer_name=PRODUCER,
        producer_version=PRODUCER_VERSION,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("ai.triton_go.test", 1)],
    )
    m.ir_version = IR_VERSION
    onnx.checker.check_model(m)  # no full check: no schema knows Scale
    return m


def main(argv):
    if len(argv) > 2:
        sys.exit("usage: gen-test-models.py [OUTDIR]")
    out = argv[1] if len(argv) == 2 else "backend/onnxruntime/testdata/models"
    os.makedirs(out, exist_ok=True)
    models = [identity(s, t) for s, t in IDENTITY_TYPES] + [
        add_sub(),
        multi_io(),
        matmul_fixed(),
        reduce_dynamic(),
        sum_int32_nobatch(),
        reshape_rows(),
        accumulate(),
        accumulate_axis1(),
        softmax(),
        sentiment(),
        detector(),
        classifier(),
        ragged(),
        custom_op(),
    ]
    for m in models:
        path = os.path.join(out, m.graph.name + ".onnx")
        data = m.SerializeToString(deterministic=True)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        print(path)
    path = os.path.join(out, "sentiment_vocab.txt")
    with open(path, "w") as f:
        f.write("".join(tok + "\n" for tok in VOCAB))
    print(path)


if __name__ == "__main__":
    main(sys.argv)
