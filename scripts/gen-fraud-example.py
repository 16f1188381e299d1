#!/usr/bin/python3
"""Writes the mixed ONNX + tree example of examples/model_repository:

  fraud_features  ONNX: RAW FP32 [8] (transaction features) -> FEATURES FP32 [12],
                  the 8 raw features followed by a 4-wide embedding tanh(RAW @ W + b)
  fraud_trees     FIL (XGBoost JSON): input__0 FP32 [12] -> output__0 FP32 [1], P(fraud)
  fraud           ensemble: RAW -> fraud_features -> fraud_trees -> P_FRAUD

The embedding's weights are fixed random numbers; the trees are trained with
Debian's python3-xgboost on synthetic transactions whose label depends on the
raw features and on the embedding, so that the trees use both.

Usage: /usr/bin/python3 scripts/gen-fraud-example.py [REPO]  (default examples/model_repository)
Needs python3-onnx, python3-numpy and python3-xgboost (make deps). Deterministic
apart from XGBoost's own JSON writer, which is stable for one XGBoost version.
"""

import os
import sys

import numpy as np
import onnx
import xgboost as xgb
from onnx import TensorProto, helper, numpy_helper

RAW, EMB = 8, 4


def embedding_weights():
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((RAW, EMB)) / 2).astype(np.float32)
    b = (rng.standard_normal(EMB) / 4).astype(np.float32)
    return w, b


def features(raw, w, b):
    return np.concatenate([raw, np.tanh(raw @ w + b)], axis=1).astype(np.float32)


def onnx_model(w, b):
    nodes = [
        helper.make_node("MatMul", ["RAW", "w"], ["xw"]),
        helper.make_node("Add", ["xw", "b"], ["xwb"]),
        helper.make_node("Tanh", ["xwb"], ["emb"]),
        helper.make_node("Concat", ["RAW", "emb"], ["FEATURES"], axis=1),
    ]
    graph = helper.make_graph(
        nodes, "fraud_features",
        [helper.make_tensor_value_info("RAW", TensorProto.FLOAT, ["batch", RAW])],
        [helper.make_tensor_value_info("FEATURES", TensorProto.FLOAT, ["batch", RAW + EMB])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    m = helper.make_model(graph, producer_name="triton-go scripts/gen-fraud-example.py", producer_version="1",
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def trees(w, b):
    rng = np.random.default_rng(11)
    raw = rng.standard_normal((4000, RAW)).astype(np.float32)
    f = features(raw, w, b)
    score = 1.5 * f[:, 0] - f[:, 3] + 2.0 * f[:, RAW] * f[:, RAW + 2] + 0.5 * rng.standard_normal(len(f))
    label = (score > 1.0).astype(np.float32)
    d = xgb.DMatrix(f, label=label)
    params = {"objective": "binary:logistic", "max_depth": 4, "eta": 0.3, "seed": 0, "nthread": 1}
    return xgb.train(params, d, num_boost_round=20)


CONFIGS = {
    "fraud_features": """name: "fraud_features"
platform: "onnxruntime_onnx"
max_batch_size: 64
input [ { name: "RAW" data_type: TYPE_FP32 dims: [ %d ] } ]
output [ { name: "FEATURES" data_type: TYPE_FP32 dims: [ %d ] } ]
dynamic_batching { }
""" % (RAW, RAW + EMB),
    "fraud_trees": """name: "fraud_trees"
backend: "fil"
max_batch_size: 64
input [ { name: "input__0" data_type: TYPE_FP32 dims: [ %d ] } ]
output [ { name: "output__0" data_type: TYPE_FP32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
parameters [
  { key: "model_type" value: { string_value: "xgboost_json" } },
  { key: "is_classifier" value: { string_value: "true" } },
  { key: "predict_proba" value: { string_value: "true" } },
  { key: "threshold" value: { string_value: "0.5" } }
]
dynamic_batching { }
""" % (RAW + EMB),
    "fraud": """name: "fraud"
platform: "ensemble"
max_batch_size: 64
input [ { name: "RAW" data_type: TYPE_FP32 dims: [ %d ] } ]
output [ { name: "P_FRAUD" data_type: TYPE_FP32 dims: [ 1 ] } ]
ensemble_scheduling { step [
  { model_name: "fraud_features" model_version: -1 input_map { key: "RAW" value: "RAW" } output_map { key: "FEATURES" value: "features" } },
  { model_name: "fraud_trees" model_version: -1 input_map { key: "input__0" value: "features" } output_map { key: "output__0" value: "P_FRAUD" } }
] }
""" % RAW,
}


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else "examples/model_repository"
    w, b = embedding_weights()
    for name, cfg in CONFIGS.items():
        os.makedirs(os.path.join(repo, name, "1"), exist_ok=True)
        with open(os.path.join(repo, name, "config.pbtxt"), "w") as f:
            f.write(cfg)
    open(os.path.join(repo, "fraud", "1", ".gitkeep"), "w").close()
    onnx.save(onnx_model(w, b), os.path.join(repo, "fraud_features", "1", "model.onnx"))
    trees(w, b).save_model(os.path.join(repo, "fraud_trees", "1", "xgboost.json"))


if __name__ == "__main__":
    main()
