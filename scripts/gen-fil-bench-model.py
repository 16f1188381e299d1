#!/usr/bin/python3
"""Writes the production-size XGBoost model of backend/fil's batching
benchmark: binary:logistic, 500 trees of depth 8 over 32 features, trained
on 20,000 seeded synthetic rows (the size of a typical fraud or ranking
model, where a row costs the trees tens of times what a request costs the
server).

Usage: /usr/bin/python3 scripts/gen-fil-bench-model.py OUTFILE.json

Needs Debian's python3-xgboost and python3-numpy (scripts/deps.sh installs
them). BenchmarkBatchingXGBoostLarge runs it into a temporary folder.
"""

import sys

import numpy as np
import xgboost as xgb

FEATURES, ROWS, TREES, DEPTH = 32, 20000, 500, 8


def main():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(ROWS, FEATURES)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    Z = np.nan_to_num(X)
    s = Z[:, 0] * Z[:, 1] - np.abs(Z[:, 2]) + np.sin(3 * Z[:, 3]) + Z[:, 4:12].sum(axis=1) * 0.2
    y = (s + rng.normal(scale=0.7, size=ROWS) > 0).astype(np.float32)
    p = {"objective": "binary:logistic", "max_depth": DEPTH, "eta": 0.05, "seed": 5,
         "tree_method": "hist", "nthread": 2, "min_child_weight": 0}
    booster = xgb.train(p, xgb.DMatrix(X, label=y, missing=np.nan), num_boost_round=TREES)
    booster.save_model(sys.argv[1])


if __name__ == "__main__":
    main()
