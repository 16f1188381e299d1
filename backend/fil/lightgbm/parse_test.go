package lightgbm

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// tiny is a hand-written model in LightGBM 4's form: two features, two
// trees. Tree 0 splits numerically on feature 0 (NaN missing type, default
// left), then on feature 1; tree 1 is a categorical split on feature 1
// (categories 0 and 2 go left). The error cases below edit it.
const tiny = `tree
version=v4
num_class=1
num_tree_per_iteration=1
label_index=0
max_feature_idx=1
objective=regression
feature_names=a b
feature_infos=[0:1] 0:1:2
tree_sizes=300 300

Tree=0
num_leaves=3
num_cat=0
split_feature=0 1
split_gain=1 1
threshold=0.5 1.5
decision_type=10 0
left_child=-1 -2
right_child=1 -3
leaf_value=1 2 3
leaf_weight=1 1 1
leaf_count=10 20 30
internal_value=0 0
internal_weight=0 0
internal_count=60 50
is_linear=0
shrinkage=1


Tree=1
num_leaves=2
num_cat=1
split_feature=1
split_gain=1
threshold=0
decision_type=1
left_child=-1
right_child=-2
leaf_value=10 20
leaf_weight=1 1
leaf_count=5 5
internal_value=0
internal_weight=0
internal_count=10
cat_boundaries=0 1
cat_threshold=5
is_linear=0
shrinkage=1


end of trees

feature_importances:
a=1
b=2

parameters:
[boosting: gbdt]
end of parameters
`

func TestTiny(t *testing.T) {
	f, err := Parse("tiny", []byte(tiny))
	if err != nil {
		t.Fatal(err)
	}
	if f.Features() != 2 || f.Outputs() != 1 || f.NumTrees() != 2 || f.Version() != "v4" || f.Objective() != "regression" {
		t.Fatalf("got %d features, %d outputs, %d trees, %s, %q", f.Features(), f.Outputs(), f.NumTrees(), f.Version(), f.Objective())
	}
	nan := float32(math.NaN())
	for _, tc := range []struct {
		a, b float32
		want float32
	}{
		{0.5, 0, 1 + 10},    // a <= 0.5: leaf 0; b = category 0: left
		{0.6, 1, 2 + 20},    // a > 0.5, b <= 1.5; category 1: right
		{nan, 2, 1 + 10},    // NaN a: default left; category 2: left
		{0.7, 2.9, 3 + 10},  // category 2 (truncated)
		{0.7, -0.5, 2 + 10}, // -0.5 truncates to category 0
		{0.7, -1, 2 + 20},   // negative category: right
		{0.7, nan, 2 + 20},  // NaN b: 0 for the numerical split, right for the categorical
		{0.7, 64, 3 + 20},   // beyond the bitset
		{0.7, 1e10, 3 + 20}, // beyond int32
	} {
		out := make([]float32, 1)
		if err := f.Predict([]float32{tc.a, tc.b}, 1, out); err != nil {
			t.Fatal(err)
		}
		if out[0] != tc.want {
			t.Errorf("Predict(%v, %v) = %v, want %v", tc.a, tc.b, out[0], tc.want)
		}
	}
	// SHAP values add up to the raw score.
	phi := make([]float32, 3)
	if err := f.SHAP([]float32{0.6, 1}, 1, phi); err != nil {
		t.Fatal(err)
	}
	if sum := phi[0] + phi[1] + phi[2]; math.Abs(float64(sum-22)) > 1e-5 {
		t.Errorf("SHAP %v sums to %v, want 22", phi, sum)
	}
}

// stump is a one-split regression model on feature 0 (leaves -1 left, 1
// right) with the given decision_type and threshold.
func stump(decision, threshold string) string {
	return `tree
version=v4
num_class=1
num_tree_per_iteration=1
label_index=0
max_feature_idx=0
feature_names=x
feature_infos=[0:1]

Tree=0
num_leaves=2
num_cat=0
split_feature=0
threshold=` + threshold + `
decision_type=` + decision + `
left_child=-1
right_child=-2
leaf_value=-1 1
is_linear=0
shrinkage=1

end of trees
`
}

// TestMissing checks Tree::NumericalDecision's missing-value rules, and the
// zero threshold LightGBM's predictor applies to inputs.
func TestMissing(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		name      string
		decision  string
		threshold string
		x         float32
		want      float32
	}{
		{"none NaN is 0", "0", "0.5", nan, -1},
		{"none NaN is 0 whatever the default", "2", "-0.5", nan, 1},
		{"none tiny is 0", "0", "0", 1e-36, -1},
		{"none tiny negative is 0", "0", "-1e-37", -1e-36, 1},
		{"none above zero threshold", "0", "0", 1e-30, 1},
		{"zero 0 default right", "4", "0.5", 0, 1},
		{"zero 0 default left", "6", "-0.5", 0, -1},
		{"zero NaN default left", "6", "-0.5", nan, -1},
		{"zero NaN default right", "4", "0.5", nan, 1},
		{"zero tiny is missing", "6", "-0.5", -1e-36, -1},
		{"zero non-zero", "6", "-0.5", 1e-30, 1},
		{"nan NaN default left", "10", "-0.5", nan, -1},
		{"nan NaN default right", "8", "0.5", nan, 1},
		{"nan 0 is a value", "10", "-0.5", 0, 1},
		{"threshold inclusive", "0", "0.25", 0.25, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("", []byte(stump(tc.decision, tc.threshold)))
			if err != nil {
				t.Fatal(err)
			}
			out := []float32{0}
			if err := f.Predict([]float32{tc.x}, 1, out); err != nil {
				t.Fatal(err)
			}
			if out[0] != tc.want {
				t.Errorf("x=%v: %v, want %v", tc.x, out[0], tc.want)
			}
		})
	}
}

func TestObjectives(t *testing.T) {
	for _, tc := range []struct {
		objective string
		raw, want float64
	}{
		{"regression", -2, -2},
		{"regression sqrt", -2, -4},
		{"regression_l1 sqrt", 3, 9},
		{"huber sqrt", 3, 3}, // huber clears sqrt
		{"quantile", 3, 3},
		{"poisson", 1, math.E},
		{"gamma", 0, 1},
		{"tweedie", 0, 1},
		{"binary sigmoid:2", 0.5, 1 / (1 + math.Exp(-1))},
		{"cross_entropy", 0, 0.5},
		{"xentropy", 0, 0.5}, // alias
		{"cross_entropy_lambda", 0, math.Log(2)},
		{"lambdarank", 7, 7},
		{"rank_xendcg", 7, 7},
		{"custom", 7, 7},
		{"mse", 7, 7}, // alias
	} {
		o, err := parseObjective(tc.objective, 1)
		if err != nil {
			t.Errorf("%s: %v", tc.objective, err)
			continue
		}
		s := []float64{tc.raw}
		o.convert(s)
		if math.Abs(s[0]-tc.want) > 1e-15 {
			t.Errorf("%s(%v) = %v, want %v", tc.objective, tc.raw, s[0], tc.want)
		}
	}
	for _, bad := range []struct{ objective, want string }{
		{"binary", "no sigmoid"},
		{"binary sigmoid:0", "greater than zero"},
		{"binary sigmoid:x", "greater than zero"},
		{"multiclass num_class:3", "does not match"},
		{"multiclass", "no num_class"},
		{"regression_l3", "unsupported"},
		{"", "empty"},
	} {
		_, err := parseObjective(bad.objective, 2)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: error %v, want one containing %q", bad.objective, err, bad.want)
		}
	}
	if _, err := parseObjective("binary sigmoid:1", 3); err == nil {
		t.Error("binary with num_class=3 accepted")
	}
}

func TestLegacyAtof(t *testing.T) {
	for s, want := range map[string]float64{"1": 1, "0.7": 0.7, "1.3": 1.3, "-2.5": -2.5, "1e3": 1000, "2.5E-1": 0.25, "+4": 4, "inf": math.Inf(1)} {
		if got := legacyAtof(s); got != want {
			t.Errorf("legacyAtof(%q) = %v, want %v", s, got, want)
		}
	}
	if !math.IsNaN(legacyAtof("x")) {
		t.Error("legacyAtof(x) is not NaN")
	}
}

// TestBadInput edits the tiny model into broken ones: each must give a
// FormatError that says what is wrong.
func TestBadInput(t *testing.T) {
	edit := func(pairs ...string) string {
		s := tiny
		for i := 0; i < len(pairs); i += 2 {
			if !strings.Contains(s, pairs[i]) {
				t.Fatalf("tiny has no %q", pairs[i])
			}
			s = strings.Replace(s, pairs[i], pairs[i+1], 1)
		}
		return s
	}
	for _, tc := range []struct {
		name        string
		data        string
		want        string
		unsupported bool
	}{
		{"empty", "", "empty file", false},
		{"xgboost json", `{"learner":{"attributes":{}},"version":[2,1,0]}`, "JSON", false},
		{"xgboost ubjson", "{L\x00\x00\x00\x00\x00\x00\x00\x07learner{", "binary data", false},
		{"xgboost binary", "binf\x00\x00\x00?\x03\x00\x00\x00\x01\x00\x00\x00", "binary data", false},
		{"other text", "hello\nworld\n", `first line is "hello"`, false},
		{"no version", edit("version=v4\n", ""), "no version= line", false},
		{"v2", edit("version=v4", "version=v2"), `version "v2"`, true},
		{"v5", edit("version=v4", "version=v5"), `version "v5"`, true},
		{"no num_class", edit("num_class=1\n", ""), "no num_class= line", false},
		{"bad num_class", edit("num_class=1", "num_class=x"), "num_class=x", false},
		{"trees per iteration", edit("num_tree_per_iteration=1", "num_tree_per_iteration=2"), "differs from num_class", false},
		{"no max_feature_idx", edit("max_feature_idx=1\n", ""), "no max_feature_idx", false},
		{"feature_names count", edit("feature_names=a b", "feature_names=a"), "feature_names has 1 names", false},
		{"feature_infos count", edit("feature_infos=[0:1] 0:1:2", "feature_infos=[0:1]"), "feature_infos has 1", false},
		{"duplicate header key", edit("label_index=0", "label_index=0\nlabel_index=0"), "appears twice", false},
		{"unknown objective", edit("objective=regression", "objective=magic"), `objective "magic"`, true},
		{"tree_sizes count", edit("tree_sizes=300 300", "tree_sizes=300 300 300"), "tree_sizes lists 3 trees", false},
		{"tree_sizes value", edit("tree_sizes=300 300", "tree_sizes=300 x"), `"x" is not a size`, false},
		{"tree index", edit("Tree=1", "Tree=2"), "want Tree=1", false},
		{"no end of trees", edit("end of trees", ""), `"feature_importances:" where a Tree= block`, false},
		{"stray line", edit("end of trees", "something else"), `"something else" where a Tree=`, false},
		{"truncated parameters", strings.TrimSuffix(tiny, "end of parameters\n"), "no \"end of parameters\"", false},
		{"no trees", tiny[:strings.Index(tiny, "Tree=0")] + "end of trees\n", "tree_sizes lists 2 trees but the file has 0", false},
		{"not a multiple", edit("num_class=1", "num_class=3", "num_tree_per_iteration=1", "num_tree_per_iteration=3", "objective=regression\n", ""), "not a multiple", false},
		{"no num_leaves", edit("num_leaves=3\n", ""), "Tree=0: no num_leaves= line", false},
		{"num_leaves mismatch", edit("num_leaves=3", "num_leaves=4"), "leaf_value has 3 values, want 4", false},
		{"num_leaves zero", edit("num_leaves=3", "num_leaves=0"), "Tree=0: num_leaves=0: want an integer in [1, ", false},
		{"leaf_value short", edit("leaf_value=1 2 3", "leaf_value=1 2"), "leaf_value has 2 values, want 3", false},
		{"leaf_value bad", edit("leaf_value=1 2 3", "leaf_value=1 2 x"), `leaf_value[2]="x" is not a number`, false},
		{"threshold short", edit("threshold=0.5 1.5", "threshold=0.5"), "threshold has 1 values", false},
		{"no left_child", edit("left_child=-1 -2\n", ""), "Tree=0: no left_child= line", false},
		{"feature out of range", edit("split_feature=0 1", "split_feature=0 2"), `split_feature[1]="2"`, false},
		{"negative feature", edit("split_feature=0 1", "split_feature=-1 1"), `split_feature[0]="-1"`, false},
		{"child out of range", edit("right_child=1 -3", "right_child=2 -3"), `right_child[0]="2"`, false},
		{"leaf out of range", edit("right_child=1 -3", "right_child=1 -4"), `right_child[1]="-4"`, false},
		{"root as child", edit("right_child=1 -3", "right_child=1 0"), "root (node 0) as a child", false},
		{"self loop", edit("left_child=-1 -2", "left_child=-1 1"), "node 1 is the child of more than one node", false},
		{"leaf twice", edit("left_child=-1 -2", "left_child=-1 -1"), "leaf 0 is the child of more than one node", false},
		{"decision_type missing type 3", edit("decision_type=10 0", "decision_type=14 0"), "missing type 3", false},
		{"decision_type range", edit("decision_type=10 0", "decision_type=16 0"), `decision_type[0]="16"`, false},
		{"line without =", edit("shrinkage=1\n\n\nTree=1", "shrinkage=1\noops\n\nTree=1"), `Tree=0: "oops": want key=value`, false},
		{"duplicate tree key", edit("shrinkage=1\n\n\nTree=1", "shrinkage=1\nshrinkage=1\n\nTree=1"), "Tree=0: shrinkage appears twice", false},
		{"num_cat too big", edit("num_cat=1", "num_cat=2"), "num_cat=2 but the tree has 1 splits", false},
		{"cat_boundaries count", edit("cat_boundaries=0 1", "cat_boundaries=0"), "cat_boundaries has 1 values", false},
		{"cat_boundaries start", edit("cat_boundaries=0 1", "cat_boundaries=1 1"), "cat_boundaries[0]=1", false},
		{"cat_threshold count", edit("cat_threshold=5", "cat_threshold=5 6"), "cat_threshold has 2 values", false},
		{"cat_threshold range", edit("cat_threshold=5", "cat_threshold=-5"), `cat_threshold[0]="-5"`, false},
		{"category set index", edit("threshold=0\ndecision_type=1", "threshold=1\ndecision_type=1"), "not a category set index", false},
		{"category set fraction", edit("threshold=0\ndecision_type=1", "threshold=0.5\ndecision_type=1"), "not a category set index", false},
		{"is_linear range", edit("is_linear=0\nshrinkage=1\n\n\nend", "is_linear=2\nshrinkage=1\n\n\nend"), "Tree=1: is_linear=2: want an integer in [0, 1]", false},
		{"linear without features", edit("is_linear=0\nshrinkage=1\n\n\nend", "is_linear=1\nnum_features=1 0\nshrinkage=1\n\n\nend"), "Tree=1: no leaf_features= line", false},
		{"linear feature range", edit("is_linear=0\nshrinkage=1\n\n\nend", "is_linear=1\nnum_features=1 0\nleaf_features=7\nleaf_coeff=1\nshrinkage=1\n\n\nend"), `leaf_features[0]="7"`, false},
		{"linear coeff count", edit("is_linear=0\nshrinkage=1\n\n\nend", "is_linear=1\nnum_features=1 0\nleaf_features=1\nleaf_coeff=1 2\nshrinkage=1\n\n\nend"), "leaf_coeff has 2 values", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("model.txt", []byte(tc.data))
			if err == nil {
				t.Fatalf("loaded (%d trees)", f.NumTrees())
			}
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Path != "model.txt" {
				t.Fatalf("%v (%T) is not a FormatError for model.txt", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if got := errors.Is(err, errors.ErrUnsupported); got != tc.unsupported {
				t.Errorf("errors.Is(ErrUnsupported) = %v for %q", got, err)
			}
		})
	}
}

// TestCycle builds a tree whose nodes 1 and 2 are each other's child: every
// node has one parent, yet they are unreachable from the root.
func TestCycle(t *testing.T) {
	s := strings.NewReplacer(
		"num_leaves=2\nnum_cat=0\nsplit_feature=0\n", "num_leaves=4\nnum_cat=0\nsplit_feature=0 0 0\n",
		"threshold=0\n", "threshold=0 0 0\n",
		"decision_type=0\n", "decision_type=0 0 0\n",
		"left_child=-1\n", "left_child=-1 2 1\n",
		"right_child=-2\n", "right_child=-2 -3 -4\n",
		"leaf_value=-1 1\n", "leaf_value=1 2 3 4\n",
	).Replace(stump("0", "0"))
	_, err := Parse("", []byte(s))
	if err == nil || !strings.Contains(err.Error(), "cycle: 1 of 3 nodes are reachable") {
		t.Fatalf("error %v, want a cycle", err)
	}
}

// TestTruncated cuts a real model at many points before the end of its
// trees: every prefix must fail to load, none panic.
func TestTruncated(t *testing.T) {
	for _, data := range [][]byte{[]byte(tiny), mustRead(t, "testdata/categorical/binary/model.txt"), mustRead(t, "testdata/binary/linear/model.txt")} {
		end := strings.Index(string(data), "end of trees") + len("end of trees")
		step := max(1, len(data)/3000)
		for n := 0; n < end; n += step {
			if _, err := Parse("", data[:n]); err == nil {
				t.Fatalf("a prefix of %d bytes (of %d) loaded", n, len(data))
			}
		}
		// With the trees complete, only the parameters section can be cut.
		if _, err := Parse("", data[:end+1]); err != nil {
			t.Errorf("the model up to \"end of trees\" does not load: %v", err)
		}
	}
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestCRLF(t *testing.T) {
	f, err := Parse("", []byte(strings.ReplaceAll(tiny, "\n", "\r\n")))
	if err != nil {
		t.Fatal(err)
	}
	out := []float32{0}
	if err := f.Predict([]float32{0.6, 1}, 1, out); err != nil || out[0] != 22 {
		t.Fatalf("Predict: %v, %v", out, err)
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join("testdata", "binary", "binary", "model.txt")
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Features() != 28 || f.Outputs() != 1 || f.Objective() != "binary sigmoid:0.7" || len(f.FeatureNames()) != 28 {
		t.Fatalf("%d features, %d outputs, %q", f.Features(), f.Outputs(), f.Objective())
	}
	if _, err := Load(filepath.Join("testdata", "missing.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v", err)
	}
	fsys := fstest.MapFS{"m/1/model.txt": {Data: []byte(tiny)}, "bad/1/model.txt": {Data: []byte("tree\n")}}
	if _, err := LoadFS(fsys, "m/1/model.txt"); err != nil {
		t.Fatal(err)
	}
	_, err = LoadFS(fsys, "bad/1/model.txt")
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Path != "bad/1/model.txt" || !strings.HasPrefix(err.Error(), "lightgbm: bad/1/model.txt: ") {
		t.Errorf("LoadFS of a broken model: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestArguments(t *testing.T) {
	f, err := Parse("", []byte(tiny))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		rows       []float32
		n, outSize int
	}{
		{"negative n", nil, -1, 1},
		{"short rows", []float32{1, 2, 3}, 2, 2},
		{"short out", []float32{1, 2, 3, 4}, 2, 1},
	} {
		if err := f.Predict(tc.rows, tc.n, make([]float32, tc.outSize)); err == nil {
			t.Errorf("Predict %s: no error", tc.name)
		}
		if err := f.SHAP(tc.rows, tc.n, make([]float32, tc.outSize*3)); err == nil {
			t.Errorf("SHAP %s: no error", tc.name)
		}
	}
	if err := f.Predict(nil, 0, nil); err != nil {
		t.Errorf("Predict of no rows: %v", err)
	}
}

func TestLinearSHAPUnsupported(t *testing.T) {
	f, err := Load("testdata/binary/linear/model.txt")
	if err != nil {
		t.Fatal(err)
	}
	err = f.SHAP(make([]float32, f.Features()), 1, make([]float32, f.Features()+1))
	if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "linear trees") {
		t.Fatalf("SHAP of a linear model: %v", err)
	}
}

func TestLinearOneLeaf(t *testing.T) {
	s := strings.NewReplacer(
		"num_leaves=2\nnum_cat=0\nsplit_feature=0\nthreshold=0\ndecision_type=0\nleft_child=-1\nright_child=-2\nleaf_value=-1 1\nis_linear=0\n",
		"num_leaves=1\nnum_cat=0\nleaf_value=5\nis_linear=1\nleaf_const=1\nnum_features=1\nleaf_features=0 \nleaf_coeff=2 \n",
	).Replace(stump("0", "0"))
	f, err := Parse("", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, 2)
	if err := f.Predict([]float32{3, float32(math.NaN())}, 2, out); err != nil {
		t.Fatal(err)
	}
	if out[0] != 7 || out[1] != 5 {
		t.Errorf("got %v, want [7 5] (1 + 2·3, then leaf_value for NaN)", out)
	}
}

// chain returns a model whose one tree is a chain of depth splits on
// feature 0: node i sends x <= i left to leaf i and the rest on.
func chain(depth int) string {
	var feat, thr, dec, left, right, leaves []string
	for i := range depth {
		feat = append(feat, "0")
		thr = append(thr, strconv.Itoa(i))
		dec = append(dec, "0")
		left = append(left, strconv.Itoa(^i))
		if i == depth-1 {
			right = append(right, strconv.Itoa(^depth))
		} else {
			right = append(right, strconv.Itoa(i+1))
		}
	}
	for i := range depth + 1 {
		leaves = append(leaves, strconv.Itoa(i))
	}
	return strings.NewReplacer(
		"num_leaves=2\n", "num_leaves="+strconv.Itoa(depth+1)+"\n",
		"split_feature=0\n", "split_feature="+strings.Join(feat, " ")+"\n",
		"threshold=0\n", "threshold="+strings.Join(thr, " ")+"\n",
		"decision_type=0\n", "decision_type="+strings.Join(dec, " ")+"\n",
		"left_child=-1\n", "left_child="+strings.Join(left, " ")+"\n",
		"right_child=-2\n", "right_child="+strings.Join(right, " ")+"\n",
		"leaf_value=-1 1\n", "leaf_value="+strings.Join(leaves, " ")+"\n",
	).Replace(stump("0", "0"))
}

func TestDeepTree(t *testing.T) {
	f, err := Parse("", []byte(chain(maxSHAPDepth+1)))
	if err != nil {
		t.Fatal(err)
	}
	out := []float32{0}
	if err := f.Predict([]float32{2000}, 1, out); err != nil || out[0] != maxSHAPDepth+1 {
		t.Fatalf("Predict: %v, %v", out, err)
	}
	if err := f.SHAP([]float32{1}, 1, make([]float32, 2)); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("SHAP of a tree deeper than %d: %v", maxSHAPDepth, err)
	}
	f, err = Parse("", []byte(chain(maxSHAPDepth)))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.SHAP([]float32{1}, 1, make([]float32, 2)); err != nil {
		t.Errorf("SHAP of a tree %d deep: %v", maxSHAPDepth, err)
	}
}
