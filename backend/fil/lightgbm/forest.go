package lightgbm

import (
	"io/fs"
	"os"
	"slices"
)

// Forest is a LightGBM model read from its text form (model.txt): the
// trees, the objective that turns their summed scores into a prediction,
// and the header fields prediction needs.
//
// A Forest is immutable once loaded and safe for concurrent use: Predict
// and SHAP keep their scratch memory per call. It holds only Go memory;
// Close exists for the fil.Forest contract and does nothing.
//
// The zero Forest is not usable; get one from [Load], [LoadFS] or [Parse].
type Forest struct {
	version       string   // "v3" or "v4"
	numFeatures   int      // max_feature_idx + 1
	numClass      int      // num_class == num_tree_per_iteration
	featureNames  []string // feature_names, numFeatures of them
	obj           objective
	averageOutput bool // average_output (random forest): divide by the iterations
	trees         []tree
	iterations    int  // len(trees) / numClass
	linear        bool // some tree is linear
	maxDepth      int  // the deepest leaf of any tree
}

// Load reads the LightGBM text model at path. See [Parse] for what it
// accepts; errors about the file's content are [*FormatError]s naming path.
func Load(path string) (*Forest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parse(path, data)
}

// LoadFS is [Load] for a file of fsys (a model repository served from an
// [fs.FS]); name is used as in [fs.ReadFile].
func LoadFS(fsys fs.FS, name string) (*Forest, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	return parse(name, data)
}

// Parse reads a LightGBM text model from data, as LightGBM's
// Booster(model_str=...) does; name is the file it came from, for error
// messages (may be empty). It accepts the model files of LightGBM 3
// (version=v3) and 4 (version=v4), whose header and trees are written
// alike, with Unix or Windows line ends. It checks everything prediction
// relies on, so that a Forest it returns cannot index out of range or loop:
// the header's counts against the lists they size, every tree's arrays
// against num_leaves and num_cat, feature and child indices, categorical
// bitset ranges, that each tree is a binary tree rooted at node 0 (every
// node but the root the child of exactly one node, all reachable, hence no
// cycles), that the tree count is a multiple of num_tree_per_iteration and
// agrees with tree_sizes, and that the file is complete up to "end of
// trees" (and "end of parameters" when it has a parameters section). A
// problem is a [*FormatError]; an objective or version this package does
// not know wraps [errors.ErrUnsupported] as well.
//
// data is not retained.
func Parse(name string, data []byte) (*Forest, error) {
	return parse(name, data)
}

// Features is the number of input features a row has: the model's
// max_feature_idx + 1.
func (f *Forest) Features() int { return f.numFeatures }

// Outputs is the number of values Predict writes per row: num_class (1 for
// regression, binary classification and ranking, k for a k-class model).
func (f *Forest) Outputs() int { return f.numClass }

// Close does nothing and returns nil: a Forest holds only Go memory. It is
// safe to call more than once.
func (f *Forest) Close() error { return nil }

// Objective returns the model's objective= line as written ("binary
// sigmoid:1", "multiclass num_class:3"), or "" when the model has none (a
// custom objective), in which case Predict gives the raw scores.
func (f *Forest) Objective() string { return f.obj.name }

// Version returns the model format version of the header: "v3" or "v4".
func (f *Forest) Version() string { return f.version }

// FeatureNames returns a copy of the model's feature_names.
func (f *Forest) FeatureNames() []string { return slices.Clone(f.featureNames) }

// NumTrees is the number of trees: iterations × Outputs().
func (f *Forest) NumTrees() int { return len(f.trees) }

// tree is one Tree= block, checked. A tree of one leaf has no nodes.
type tree struct {
	nodes      []node    // internal nodes; node 0 is the root
	leafValue  []float64 // leaf_value
	leafCount  []float64 // leaf_count, for SHAP's cover (zeros when absent)
	innerCount []float64 // internal_count, for SHAP's cover
	catBits    []uint32  // cat_threshold: the categorical splits' bitsets, end to end
	linear     *linearLeaves
	depth      int // the deepest leaf; 0 for a tree of one leaf
}

// node is an internal node. A child ≥ 0 is a node index, < 0 the bitwise
// complement of a leaf index, as in LightGBM.
type node struct {
	threshold   float64 // numerical: go left when value <= threshold
	feature     int32   // split_feature, < Features()
	left, right int32
	categorical bool  // decision_type bit 0, and the tree has num_cat > 0
	defaultLeft bool  // decision_type bit 1: where a missing value goes
	missing     uint8 // decision_type bits 2–3: missingNone, missingZero or missingNaN
	catLo       int32 // categorical: the bitset is catBits[catLo:catHi]
	catHi       int32
}

// Missing types (LightGBM's MissingType).
const (
	missingNone = 0 // NaN is read as 0
	missingZero = 1 // 0 (|x| ≤ 1e-35) and NaN take the default direction
	missingNaN  = 2 // NaN takes the default direction
)

// linearLeaves holds a linear tree's leaf models: leaf i predicts
// konst[i] + Σ coeff[i][j]·x[features[i][j]], or leafValue[i] when one of
// those features is NaN.
type linearLeaves struct {
	konst    []float64
	features [][]int32
	coeff    [][]float64
}
