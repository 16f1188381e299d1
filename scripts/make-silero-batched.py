#!/usr/bin/python3
"""Derives a batch-first Silero VAD v6 that dynamic batching can batch.

Usage: /usr/bin/python3 scripts/make-silero-batched.py [SRC [DST]]
       (defaults: .cache/models/silero_vad_v6.onnx and
       .cache/models/silero_vad_v6_batched.onnx; scripts/fetch-models.sh runs
       it when DST is missing)

Silero VAD v6 (see backend/onnxruntime/testdata/REAL_MODELS.md) takes
`state` as [2, batch, 128] and `sr` as a rank-0 int64, so batching along
axis 0, as Triton does, cannot batch it. The derived model is the same
network with
  - `state` FP32 [batch, 2, 128], transposed to [2, batch, 128] by a
    Transpose node in front of the original graph;
  - `stateN` FP32 [batch, 2, 128], transposed back from the original
    [2, batch, 128] by a Transpose node after it;
  - `sr` fixed at 16000 and no longer an input: the source's only use of
    it is `If (sr == 16000)` choosing between the 16 kHz and 8 kHz
    networks, so the 16 kHz branch is inlined in place of the If (see
    fix_sample_rate for why ONNX Runtime cannot be left to fold it);
  - `input` FP32 [batch, 576] (64 samples of context + 512) and `output`
    FP32 [batch, 1].
The original graph's own tensors named `state` and `stateN` are renamed
(`state_2b128`, `stateN_2b128`), in its subgraphs too; no other node or
weight changes. IR version and opset stay those of the source (IR 8,
opset 16). The 8 kHz weights go with their branch, so the file is about
half the source's size.

Needs Debian's python3-onnx (ONNX 1.12). The source's sha256 is checked
against the pinned one, and the output is deterministic (fixed producer,
no timestamps): the same source always gives byte-identical output. The
model is checked with onnx.checker before it is written, and written
atomically (a temporary file renamed into place).
"""

import hashlib
import os
import sys

import onnx
import onnx.numpy_helper
from onnx import AttributeProto, TensorProto, helper

SRC_SHA256 = "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3"
PRODUCER = "triton-go scripts/make-silero-batched.py"
PRODUCER_VERSION = "1"

STATE, STATE_INNER = "state", "state_2b128"
STATE_N, STATE_N_INNER = "stateN", "stateN_2b128"
SR = "sr"
SAMPLE_RATE = 16000
INPUT_LEN = 64 + 512  # context + chunk at 16 kHz


def subgraphs(node):
    for a in node.attribute:
        if a.type == AttributeProto.GRAPH:
            yield a.g
        elif a.type == AttributeProto.GRAPHS:
            yield from a.graphs


def defined_names(graph):
    """Every name graph or its subgraphs define (inputs, initializers, outputs of nodes)."""
    names = [i.name for i in graph.input] + [i.name for i in graph.initializer]
    for n in graph.node:
        names.extend(n.output)
        for g in subgraphs(n):
            names.extend(defined_names(g))
    return names


def rename_uses(graph, old, new):
    """Renames every node input old to new, in graph and (outer-scope references) its subgraphs."""
    count = 0
    for n in graph.node:
        for k, name in enumerate(n.input):
            if name == old:
                n.input[k] = new
                count += 1
        for g in subgraphs(n):
            count += rename_uses(g, old, new)
    return count


def value_info(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def constant_int(graph, name):
    """The value of a scalar int64 Constant node of graph producing name, or None."""
    for n in graph.node:
        if n.op_type == "Constant" and list(n.output) == [name]:
            for a in n.attribute:
                if a.name == "value" and a.t.data_type == TensorProto.INT64:
                    vals = list(onnx.numpy_helper.to_array(a.t).flatten())
                    if len(vals) == 1:
                        return int(vals[0])
    return None


def fix_sample_rate(g):
    """Replaces the top-level `If (sr == 16000)` with its then branch.

    With sr an input, the graph is Equal(sr, 16000) -> If, whose branches
    are the 16 kHz and 8 kHz networks. Fixing sr could be a Constant node,
    but then ONNX Runtime 1.24's constant folding inlines the If itself and
    the session fails to load ("SaveInitializedTensors ...
    !utils::HasExternalDataInMemory(tensor_proto) was false"), so the 16 kHz
    branch is inlined here instead: its nodes move to the top level, and an
    Identity node hands each branch output to the If's output name. Nothing
    else reads sr, so it disappears.
    """
    equal = [n for n in g.node if n.op_type == "Equal" and SR in n.input]
    if len(equal) != 1 or len(equal[0].input) != 2:
        sys.exit("make-silero-batched: expected exactly one top-level Equal(sr, 16000)")
    equal = equal[0]
    other = equal.input[1] if equal.input[0] == SR else equal.input[0]
    if constant_int(g, other) != SAMPLE_RATE:
        sys.exit(f"make-silero-batched: sr is compared with {other!r}, not a Constant 16000")
    ifs = [n for n in g.node if n.op_type == "If" and list(n.input) == list(equal.output)]
    if len(ifs) != 1:
        sys.exit("make-silero-batched: expected exactly one If on sr == 16000")
    if_node = ifs[0]
    then = [a.g for a in if_node.attribute if a.name == "then_branch"][0]
    if len(then.output) != len(if_node.output) or len(then.input) != 0:
        sys.exit("make-silero-batched: the If's then branch does not match its outputs")

    inlined = list(then.node)
    for src, dst in zip(then.output, if_node.output):
        inlined.append(helper.make_node("Identity", [src.name], [dst], name=f"batch_first/{dst}"))
    g.initializer.extend(then.initializer)
    g.sparse_initializer.extend(then.sparse_initializer)

    drop = {id(equal), id(if_node)}
    still_read = lambda name: any(name in n.input for n in g.node if id(n) not in drop)
    nodes = []
    for n in g.node:
        if n is if_node:
            nodes.extend(inlined)
        elif id(n) in drop:
            continue
        elif n.op_type == "Constant" and list(n.output) == [other] and not still_read(other):
            continue
        else:
            nodes.append(n)
    if any(SR in n.input for n in nodes) or any(rename_uses(sg, SR, SR) for n in nodes for sg in subgraphs(n)):
        sys.exit("make-silero-batched: something besides the Equal reads sr")
    del g.node[:]
    g.node.extend(nodes)


def derive(model):
    g = model.graph
    names = defined_names(g)
    for n in (STATE, STATE_N, SR):
        if names.count(n) != 1:
            sys.exit(f"make-silero-batched: {n!r} is defined {names.count(n)} times in the source; expected once")
    for n in (STATE_INNER, STATE_N_INNER):
        if n in names:
            sys.exit(f"make-silero-batched: the source already has a tensor named {n!r}")
    if [i.name for i in g.input] != ["input", STATE, SR] or [o.name for o in g.output] != ["output", STATE_N]:
        sys.exit("make-silero-batched: the source's inputs/outputs are not input, state, sr -> output, stateN")

    # state: the graph reads STATE_INNER = Transpose(state, [1, 0, 2]).
    if rename_uses(g, STATE, STATE_INNER) == 0:
        sys.exit("make-silero-batched: nothing reads 'state'")
    # stateN: the node that produced it now produces STATE_N_INNER.
    producers = [n for n in g.node if STATE_N in n.output]
    if len(producers) != 1:
        sys.exit("make-silero-batched: 'stateN' is not produced by exactly one top-level node")
    out = producers[0].output
    out[list(out).index(STATE_N)] = STATE_N_INNER

    # sr: fixed at 16000, which selects the 16 kHz branch.
    fix_sample_rate(g)

    nodes = list(g.node)
    del g.node[:]
    g.node.append(helper.make_node("Transpose", [STATE], [STATE_INNER], name="batch_first/state_in", perm=[1, 0, 2]))
    g.node.extend(nodes)
    g.node.append(helper.make_node("Transpose", [STATE_N_INNER], [STATE_N], name="batch_first/state_out", perm=[1, 0, 2]))

    del g.input[:]
    g.input.extend([
        value_info("input", ["batch", INPUT_LEN]),
        value_info(STATE, ["batch", 2, 128]),
    ])
    del g.output[:]
    g.output.extend([
        value_info("output", ["batch", 1]),
        value_info(STATE_N, ["batch", 2, 128]),
    ])
    # Shape annotations of the original graph's tensors would be stale for
    # the renamed ones; the source has none at the top level, drop any.
    del g.value_info[:]

    model.producer_name = PRODUCER
    model.producer_version = PRODUCER_VERSION
    model.doc_string = (
        "Silero VAD v6 (silero_vad_v6.onnx from @ricky0123/vad-web@0.0.31, sha256 " + SRC_SHA256 + "), "
        "batch first, 16 kHz only: input [batch, 576], state [batch, 2, 128] -> output [batch, 1], "
        "stateN [batch, 2, 128]. Made by scripts/make-silero-batched.py."
    )
    return model


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cache = os.path.join(root, ".cache", "models")
    src = argv[1] if len(argv) > 1 else os.path.join(cache, "silero_vad_v6.onnx")
    dst = argv[2] if len(argv) > 2 else os.path.join(cache, "silero_vad_v6_batched.onnx")

    with open(src, "rb") as f:
        data = f.read()
    got = hashlib.sha256(data).hexdigest()
    if got != SRC_SHA256:
        sys.exit(f"make-silero-batched: {src} has sha256 {got}, want {SRC_SHA256}")
    model = derive(onnx.load_from_string(data))
    onnx.checker.check_model(model, full_check=True)

    out = model.SerializeToString(deterministic=True)
    tmp = f"{dst}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(out)
    os.replace(tmp, dst)
    print(f"make-silero-batched: wrote {dst} ({len(out)} B, sha256 {hashlib.sha256(out).hexdigest()})", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
