#!/usr/bin/python3
"""Writes the small XGBoost test models of backend/fil/xgboost.

Usage: /usr/bin/python3 scripts/gen-fil-models.py [OUTDIR]
       (default OUTDIR: backend/fil/xgboost/testdata)

Needs Debian's python3-xgboost (XGBoost 1.7.4) and python3-numpy:
`apt-get install -y python3-xgboost` (scripts/deps.sh installs it).

Each model is trained on seeded synthetic data with missing values (NaN),
single-threaded, and saved in the formats XGBoost 1.7 writes:

  NAME.model  the legacy binary format (save_model to a name that ends in
              neither .json nor .ubj; FIL's model_type "xgboost")
  NAME.json   JSON (model_type "xgboost_json")
  NAME.ubj    UBJSON (model_type "xgboost_ubj")

(categorical splits cannot be saved in the legacy format: the categorical
model has no NAME.model). Beside them, NAME.expect.json holds a held-out
input set with missing values and XGBoost's own answers for it:
Booster.predict and Booster.predict(pred_contribs=True) on a DMatrix of the
rows (missing=NaN), each file loaded back and checked to give exactly
those. Numbers are numpy's shortest decimal of each float32 value, which
gives the value back when read as a float32; NaN is null.

The output is deterministic: running it twice gives byte-identical files.
"""

import json
import os
import sys

import numpy as np
import xgboost as xgb

FEATURES = 6
TRAIN_ROWS = 400
TEST_ROWS = 24


def synthetic(seed, rows, features=FEATURES, missing=0.15):
    """Rows of standard normal features, a fraction of them NaN."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, features)).astype(np.float32)
    X[rng.random(X.shape) < missing] = np.nan
    return X, rng


def held_out(seed, features=FEATURES):
    """Test rows: random ones with NaNs, plus an all-NaN row and rows with
    a NaN in each split-heavy feature."""
    X, _ = synthetic(seed, TEST_ROWS - 2, features, missing=0.2)
    extra = np.zeros((2, features), np.float32)
    extra[0, :] = np.nan
    extra[1, :] = np.float32(0.5)
    extra[1, 0] = np.nan
    return np.concatenate([X, extra])


def score(X):
    """A nonlinear target from the first features; NaN counts as 0."""
    Z = np.nan_to_num(X)
    return (1.5 * Z[:, 0] - Z[:, 1] * Z[:, 2] + np.sin(2 * Z[:, 3]) + 0.5 * (Z[:, 4] > 0.3)).astype(np.float32)


def params(**kw):
    p = {"seed": 7, "nthread": 1, "tree_method": "hist", "max_depth": 3, "eta": 0.3}
    p.update(kw)
    return p


def dmatrix(X, **kw):
    return xgb.DMatrix(X, missing=np.nan, nthread=1, **kw)


def train(p, X, y, rounds, **kw):
    return xgb.train(p, dmatrix(X, label=y, **kw), num_boost_round=rounds)


def floats(a):
    """A JSON array of float32 values: numpy's shortest decimal of each,
    which gives the value back when read as a float32; NaN as null."""
    out = []
    for v in np.asarray(a, dtype=np.float32).ravel():
        out.append("null" if np.isnan(v) else repr(v))
    return "[" + ",".join(out) + "]"


def models():
    """Yields (name, booster, test rows, expected-prediction override or
    None, formats, description)."""
    X, rng = synthetic(1, TRAIN_ROWS)
    y = score(X)

    reg = train(params(objective="reg:squarederror", max_depth=4), X, y, 8)
    yield "regression", reg, held_out(11), None, ("model", "json", "ubj"), "reg:squarederror, 8 trees of depth 4"

    yb = (y + rng.normal(scale=0.5, size=len(y)).astype(np.float32) > 0.2).astype(np.float32)
    binary = train(params(objective="binary:logistic"), X, yb, 8)
    yield "binary", binary, held_out(12), None, ("model", "json", "ubj"), "binary:logistic, 8 trees"

    raw = train(params(objective="binary:logitraw"), X, yb, 5)
    yield "logitraw", raw, held_out(13), None, ("model", "json", "ubj"), "binary:logitraw, 5 trees: predict gives the margin"

    yk = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3])).astype(np.float32)
    softprob = train(params(objective="multi:softprob", num_class=3), X, yk, 6)
    Xt = held_out(14)
    yield "softprob", softprob, Xt, None, ("model", "json", "ubj"), "multi:softprob, 3 classes, 6 rounds (18 trees)"

    # multi:softmax trains the same trees as softprob (same gradients), and
    # its predict gives class numbers; the Forest gives the softmax of its
    # margins, which must be softprob's probabilities, bit for bit.
    softmax = train(params(objective="multi:softmax", num_class=3), X, yk, 6)
    m1 = softprob.predict(dmatrix(Xt), output_margin=True)
    m2 = softmax.predict(dmatrix(Xt), output_margin=True)
    assert np.array_equal(m1, m2), "softmax and softprob trees differ"
    yield ("softmax", softmax, Xt, softprob.predict(dmatrix(Xt)), ("model", "json", "ubj"),
           "multi:softmax, as softprob: expected predictions are softprob's probabilities, not class numbers")

    dart = train(params(objective="reg:squarederror", booster="dart", rate_drop=0.3, skip_drop=0.0), X, y, 6)
    yield "dart", dart, held_out(15), None, ("model", "json", "ubj"), "reg:squarederror with the dart booster, 6 trees"

    # Feature 3 categorical (categories 0..5), with enable_categorical; the
    # held-out rows add categories never seen in training (6, 40).
    Xc, rngc = synthetic(2, TRAIN_ROWS)
    Xc[:, 3] = rngc.integers(0, 6, size=TRAIN_ROWS).astype(np.float32)
    Xc[rngc.random(TRAIN_ROWS) < 0.1, 3] = np.nan
    yc = np.nan_to_num(Xc[:, 0]) + np.isin(Xc[:, 3], [1, 4]) * 2.0 - (Xc[:, 3] == 2) * 1.5
    types = ["q"] * FEATURES
    types[3] = "c"
    cat = train(params(objective="reg:squarederror", max_cat_to_onehot=1), Xc, yc.astype(np.float32), 6,
                feature_types=types, enable_categorical=True)
    Xt = held_out(16)
    Xt[:, 3] = np.array([0, 1, 2, 3, 4, 5, 6, 40, np.nan] * 3, np.float32)[:TEST_ROWS]
    yield "categorical", cat, Xt, None, ("json", "ubj"), "reg:squarederror, feature 3 categorical (JSON and UBJSON only)"


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "backend", "fil", "xgboost", "testdata")
    os.makedirs(out, exist_ok=True)
    for name, booster, Xt, expected, formats, what in models():
        pred = booster.predict(dmatrix(Xt))
        contribs = booster.predict(dmatrix(Xt), pred_contribs=True)
        cfg = json.loads(booster.save_config())["learner"]
        lmp = cfg["learner_model_param"]
        for ext in formats:
            path = os.path.join(out, name + "." + ext)
            booster.save_model(path)
            back = xgb.Booster(model_file=path)
            assert np.array_equal(back.predict(dmatrix(Xt)), pred), path
            assert np.array_equal(back.predict(dmatrix(Xt), pred_contribs=True), contribs), path
        classes = int(lmp["num_class"])
        fields = [
            ("description", json.dumps(what)),
            ("xgboost", json.dumps(xgb.__version__)),
            ("objective", json.dumps(cfg["objective"]["name"])),
            ("features", str(int(lmp["num_feature"]))),
            ("classes", str(classes)),
            ("outputs", str(max(classes, 1))),
            ("rows", str(int(Xt.shape[0]))),
            ("input", floats(Xt)),
            ("predict", floats(pred if expected is None else expected)),
            ("contribs", floats(contribs)),
        ]
        with open(os.path.join(out, name + ".expect.json"), "w") as f:
            f.write("{\n" + ",\n".join('"%s": %s' % kv for kv in fields) + "\n}\n")
        print("%s: %s" % (name, what), file=sys.stderr)


if __name__ == "__main__":
    main()
