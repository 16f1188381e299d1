package xgbrun

import (
	"errors"
	"fmt"
	"strconv"
)

// errLinear refuses gblinear models.
var errLinear = fmt.Errorf("the model's booster is gblinear, a linear model: only tree models (gbtree, dart) are supported: %w",
	errors.ErrUnsupported)

// maxCategory bounds the categories of a categorical split: XGBoost makes a
// bit set as large as the largest, and its training refuses categories of
// 2^24 and more.
const maxCategory = 1 << 24

// MaxSHAPDepth is the deepest tree (edges from the root to its deepest
// leaf) [Booster.Contributions] accepts. XGBoost's TreeSHAP recurses once
// per level and allocates depth²/2 path elements per row and tree, so a
// degenerate tree thousands of levels deep would take gigabytes, or the
// stack. Prediction has no such limit.
const MaxSHAPDepth = 256

// MaxFeatures is the most features a model may have. Rows are dense: a
// row of the largest is 64 MiB, and XGBoost makes a buffer of this size
// per thread for each call.
const MaxFeatures = 1 << 24

// Info describes a loaded model as XGBoost holds it (read from the model
// XGBoost saves back after loading it, so whatever the file's format).
type Info struct {
	Features  int    // learner_model_param.num_feature: values per input row
	Classes   int    // learner_model_param.num_class: 0 unless multi-class
	Groups    int    // output groups (margins per row): Classes, or 1
	Objective string // the objective's name, as "binary:logistic"
	Booster   string // "gbtree" or "dart"
	Trees     int    // number of trees
	MaxDepth  int    // edges from a root to its deepest reachable leaf, over all trees
	// Categorical reports whether some split is categorical (XGBoost's
	// enable_categorical); its feature's values are category numbers.
	Categorical bool
	// ValueWidth and MarginWidth are the values per row that
	// [Booster.Predict] writes for [Values] and [Margins]: Groups, except
	// that multi:softmax's values are one class number per row.
	ValueWidth, MarginWidth int
}

// doc is a decoded JSON or UBJSON model (see ubj.go) with accessors that
// name the path of what they miss.
type docObj struct {
	m    map[string]any
	path string
}

func (o docObj) obj(key string) (docObj, error) {
	v, ok := o.m[key].(map[string]any)
	if !ok {
		return docObj{}, o.missing(key, "an object")
	}
	return docObj{v, o.path + "." + key}, nil
}

func (o docObj) str(key string) (string, error) {
	v, ok := o.m[key].(string)
	if !ok {
		return "", o.missing(key, "a string")
	}
	return v, nil
}

// param reads an integer parameter, which XGBoost writes as a string.
func (o docObj) param(key string) (int64, error) {
	s, err := o.str(key)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s.%s is %q, not an integer", o.path, key, s)
	}
	return n, nil
}

// ints reads an array of integers, typed or not.
func (o docObj) ints(key string) ([]int64, error) {
	v, ok := o.m[key]
	if !ok {
		return nil, o.missing(key, "an array of integers")
	}
	switch a := v.(type) {
	case []int64:
		return a, nil
	case []int32:
		r := make([]int64, len(a))
		for i, x := range a {
			r[i] = int64(x)
		}
		return r, nil
	case []uint8:
		r := make([]int64, len(a))
		for i, x := range a {
			r[i] = int64(x)
		}
		return r, nil
	case []any:
		r := make([]int64, len(a))
		for i, x := range a {
			n, ok := x.(int64)
			if !ok {
				return nil, fmt.Errorf("%s.%s[%d] is %T, not an integer", o.path, key, i, x)
			}
			r[i] = n
		}
		return r, nil
	}
	return nil, o.missing(key, "an array of integers")
}

func (o docObj) missing(key, what string) error {
	if _, ok := o.m[key]; ok {
		return fmt.Errorf("%s.%s is %T, not %s", o.path, key, o.m[key], what)
	}
	return fmt.Errorf("%s has no %q (%s)", o.path, key, what)
}

// forest is the part of a model document the checks read.
type forest struct {
	learner docObj
	booster string
	trees   []docObj // in id order
	info    []int64  // tree_info: each tree's output group
}

// readForest finds the trees of a model document and checks what XGBoost
// 1.7's GBTreeModel::LoadModel relies on without checking: the trees' ids
// are 0 to n-1, each once (a missing one would stay a null pointer that
// prediction dereferences), and num_trees and tree_info agree with the
// trees.
func readForest(doc any) (*forest, error) {
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the document is %T, not an object: not an XGBoost model", doc)
	}
	root := docObj{m, "model"}
	learner, err := root.obj("learner")
	if err != nil {
		return nil, err
	}
	gb, err := learner.obj("gradient_booster")
	if err != nil {
		return nil, err
	}
	name, err := gb.str("name")
	if err != nil {
		return nil, err
	}
	var model docObj
	switch name {
	case "gbtree":
		model, err = gb.obj("model")
	case "dart":
		var inner docObj
		if inner, err = gb.obj("gbtree"); err == nil {
			model, err = inner.obj("model")
		}
	case "gblinear":
		return nil, errLinear
	default:
		return nil, fmt.Errorf("unknown booster %q", name)
	}
	if err != nil {
		return nil, err
	}
	gparam, err := model.obj("gbtree_model_param")
	if err != nil {
		return nil, err
	}
	numTrees, err := gparam.param("num_trees")
	if err != nil {
		return nil, err
	}
	list, ok := model.m["trees"].([]any)
	if !ok {
		return nil, model.missing("trees", "an array")
	}
	if int64(len(list)) != numTrees {
		return nil, fmt.Errorf("%s.gbtree_model_param.num_trees is %d, but there are %d trees", model.path, numTrees, len(list))
	}
	info, err := model.ints("tree_info")
	if err != nil {
		return nil, err
	}
	if len(info) != len(list) {
		return nil, fmt.Errorf("%s.tree_info has %d entries for %d trees", model.path, len(info), len(list))
	}
	f := &forest{learner: learner, booster: name, trees: make([]docObj, len(list)), info: info}
	for i, t := range list {
		tm, ok := t.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s.trees[%d] is %T, not an object", model.path, i, t)
		}
		tree := docObj{tm, fmt.Sprintf("%s.trees[%d]", model.path, i)}
		id, ok := tm["id"].(int64)
		if !ok {
			return nil, tree.missing("id", "an integer")
		}
		if id < 0 || id >= int64(len(list)) || f.trees[id].m != nil {
			return nil, fmt.Errorf("%s.id is %d: tree ids must be 0 to %d, each once", tree.path, id, len(list)-1)
		}
		f.trees[id] = tree
	}
	return f, nil
}

// checkLoad checks a JSON or UBJSON model before XGBoost loads it, for what
// XGBoost 1.7's RegTree::LoadModel and LoadCategoricalSplit index without
// checking: every node but the root has a parent in range; split_type, when
// present, has an entry per node; categories_nodes are increasing node
// numbers and include every categorical split (split_type 1); each
// categorical split's categories lie within the categories array and are
// between 0 and 2^24. (XGBoost checks
// the other arrays' lengths itself; [inspect] checks the rest after
// loading, on XGBoost's own copy.)
func checkLoad(doc any) error {
	f, err := readForest(doc)
	if err != nil {
		return err
	}
	for _, t := range f.trees {
		if _, err := checkTreeLoad(t); err != nil {
			return err
		}
	}
	return nil
}

// checkTreeLoad is checkLoad's check of one tree; it returns num_nodes.
func checkTreeLoad(t docObj) (int, error) {
	tparam, err := t.obj("tree_param")
	if err != nil {
		return 0, err
	}
	n64, err := tparam.param("num_nodes")
	if err != nil {
		return 0, err
	}
	if n64 < 1 || n64 > 1<<31-1 {
		return 0, fmt.Errorf("%s.tree_param.num_nodes is %d", t.path, n64)
	}
	n := int(n64)
	parents, err := t.ints("parents")
	if err != nil {
		return 0, err
	}
	if len(parents) != n {
		return 0, fmt.Errorf("%s.parents has %d entries for %d nodes", t.path, len(parents), n)
	}
	for i := 1; i < n; i++ {
		if p := parents[i]; p < 0 || p >= int64(n) {
			return 0, fmt.Errorf("%s.parents[%d] is %d, outside the tree's %d nodes", t.path, i, p, n)
		}
	}
	if _, ok := t.m["split_type"]; !ok {
		return n, nil
	}
	types, err := t.ints("split_type")
	if err != nil {
		return 0, err
	}
	if len(types) != n {
		return 0, fmt.Errorf("%s.split_type has %d entries for %d nodes", t.path, len(types), n)
	}
	segs, err := t.ints("categories_segments")
	if err != nil {
		return 0, err
	}
	sizes, err := t.ints("categories_sizes")
	if err != nil {
		return 0, err
	}
	nodes, err := t.ints("categories_nodes")
	if err != nil {
		return 0, err
	}
	cats, err := t.ints("categories")
	if err != nil {
		return 0, err
	}
	// XGBoost gives category sets to the nodes of categories_nodes in one
	// pass over the nodes, so they must come in increasing order; a
	// categorical node left without one makes XGBoost's Span check call
	// std::terminate when the node is predicted or saved.
	listed := make(map[int64]bool, len(nodes))
	for k, nd := range nodes {
		if nd < 0 || nd >= int64(n) || (k > 0 && nd <= nodes[k-1]) {
			return 0, fmt.Errorf("%s.categories_nodes must be increasing node numbers below %d; [%d] is %d", t.path, n, k, nd)
		}
		listed[nd] = true
	}
	for i, ty := range types {
		if ty == 1 && !listed[int64(i)] {
			return 0, fmt.Errorf("%s: node %d is a categorical split without categories", t.path, i)
		}
	}
	if len(segs) < len(nodes) || len(sizes) < len(nodes) {
		return 0, fmt.Errorf("%s: %d categorical nodes, but %d categories_segments and %d categories_sizes",
			t.path, len(nodes), len(segs), len(sizes))
	}
	for k := range nodes {
		beg, size := segs[k], sizes[k]
		if beg < 0 || size < 1 || beg > int64(len(cats)) || size > int64(len(cats))-beg {
			return 0, fmt.Errorf("%s: categorical node %d's categories [%d, %d+%d) are outside the %d categories",
				t.path, nodes[k], beg, beg, size, len(cats))
		}
		for _, c := range cats[beg : beg+size] {
			if c < 0 || c >= maxCategory {
				return 0, fmt.Errorf("%s: categorical node %d has category %d, outside [0, 2^24)", t.path, nodes[k], c)
			}
		}
	}
	return n, nil
}

// inspect checks the model XGBoost saved back after loading, for what
// prediction and SHAP index without checking, and describes it. Beyond
// checkLoad: num_feature is at least 1 and num_target 1 (multi-target
// models are refused, as FIL refuses them); each tree's output group is
// below the number of groups; from each root, every split's children are
// in the tree (prediction goes to left+1 for "not less than", SHAP to
// right, so all three), its feature is below num_feature, and no path
// comes back to a node it has passed (a cycle would never end). The
// widths are left for the caller.
func inspect(doc any) (Info, error) {
	f, err := readForest(doc)
	if err != nil {
		return Info{}, err
	}
	lmp, err := f.learner.obj("learner_model_param")
	if err != nil {
		return Info{}, err
	}
	features, err := lmp.param("num_feature")
	if err != nil {
		return Info{}, err
	}
	if features < 1 || features > MaxFeatures {
		return Info{}, fmt.Errorf("the model has %d features; between 1 and %d are supported", features, MaxFeatures)
	}
	classes, err := lmp.param("num_class")
	if err != nil {
		return Info{}, err
	}
	if classes < 0 || classes > 1<<31-1 {
		return Info{}, fmt.Errorf("the model has %d classes", classes)
	}
	if _, ok := lmp.m["num_target"]; ok {
		targets, err := lmp.param("num_target")
		if err != nil {
			return Info{}, err
		}
		if targets > 1 {
			return Info{}, fmt.Errorf("the model has %d targets: multi-target models are not supported: %w", targets, errors.ErrUnsupported)
		}
	}
	obj, err := f.learner.obj("objective")
	if err != nil {
		return Info{}, err
	}
	objective, err := obj.str("name")
	if err != nil {
		return Info{}, err
	}
	info := Info{
		Features:  int(features),
		Classes:   int(classes),
		Groups:    max(int(classes), 1),
		Objective: objective,
		Booster:   f.booster,
		Trees:     len(f.trees),
	}
	// A multi-class model has a tree per class and round: more groups
	// than trees is not a model XGBoost trained (and its outputs would be
	// sized by a number the file made up).
	if info.Groups > 1 && info.Groups > info.Trees {
		return Info{}, fmt.Errorf("the model has %d classes but %d trees", info.Groups, info.Trees)
	}
	for i, g := range f.info {
		if g < 0 || g >= int64(info.Groups) {
			return Info{}, fmt.Errorf("tree %d is in output group %d, of %d", i, g, info.Groups)
		}
	}
	for _, t := range f.trees {
		depth, cat, err := checkTree(t, info.Features)
		if err != nil {
			return Info{}, err
		}
		info.MaxDepth = max(info.MaxDepth, depth)
		info.Categorical = info.Categorical || cat
	}
	return info, nil
}

// checkTree is inspect's check of one tree; it returns the tree's depth and
// whether it has a categorical split.
func checkTree(t docObj, features int) (depth int, categorical bool, err error) {
	n, err := checkTreeLoad(t)
	if err != nil {
		return 0, false, err
	}
	arrays := map[string][]int64{"left_children": nil, "right_children": nil, "split_indices": nil}
	for k := range arrays {
		a, err := t.ints(k)
		if err != nil {
			return 0, false, err
		}
		if len(a) != n {
			return 0, false, fmt.Errorf("%s.%s has %d entries for %d nodes", t.path, k, len(a), n)
		}
		arrays[k] = a
	}
	left, right, split := arrays["left_children"], arrays["right_children"], arrays["split_indices"]
	var types []int64
	if _, ok := t.m["split_type"]; ok {
		types, _ = t.ints("split_type") // checked by checkTreeLoad
	}
	// Depth-first from the root, iteratively; state[i] is 0 before node i
	// is reached, 1 while it is on the path, 2 once its subtree is done.
	state := make([]uint8, n)
	type frame struct {
		node int
		next int // the next of the node's three edges to follow
	}
	stack := []frame{{0, 0}}
	state[0] = 1
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		i := top.node
		l := left[i]
		if l == -1 || top.next == 3 {
			state[i] = 2
			stack = stack[:len(stack)-1]
			continue
		}
		if top.next == 0 {
			r := right[i]
			if l < 1 || l+1 >= int64(n) || r < 1 || r >= int64(n) {
				return 0, false, fmt.Errorf("%s: node %d's children %d and %d are not within the tree's %d nodes", t.path, i, l, r, n)
			}
			if s := split[i]; s < 0 || s >= int64(features) {
				return 0, false, fmt.Errorf("%s: node %d splits on feature %d, of %d", t.path, i, s, features)
			}
			if types != nil && types[i] != 0 {
				categorical = true
			}
			depth = max(depth, len(stack))
		}
		c := [3]int64{l, l + 1, right[i]}[top.next]
		top.next++
		switch state[c] {
		case 1:
			return 0, false, fmt.Errorf("%s: node %d leads back to node %d", t.path, i, c)
		case 0:
			state[c] = 1
			stack = append(stack, frame{int(c), 0})
		}
	}
	return depth, categorical, nil
}
