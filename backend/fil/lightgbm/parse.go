package lightgbm

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The text format, as LightGBM 4 writes it (GBDT::SaveModelToString and
// Tree::ToString in LightGBM's source); LightGBM 3 writes the same up to
// "end of trees" and differs only after it ("feature importances:" for
// "feature_importances:", no parser: section):
//
//	tree
//	version=v4
//	num_class=1
//	num_tree_per_iteration=1
//	label_index=0
//	max_feature_idx=27
//	objective=binary sigmoid:1
//	[average_output]
//	feature_names=Column_0 Column_1 ...
//	[monotone_constraints=...]
//	feature_infos=[0.27:6.69] -1:3:8 none ...
//	tree_sizes=750 774 ...
//
//	Tree=0
//	num_leaves=7
//	num_cat=0
//	split_feature=25 25 ...          (num_leaves-1 of each node array)
//	split_gain=70.4 39.4 ...
//	threshold=1.28 0.66 ...
//	decision_type=10 10 ...
//	left_child=1 -1 ...
//	right_child=-2 2 ...
//	leaf_value=0.52 0.50 ...         (num_leaves of each leaf array)
//	leaf_weight=...
//	leaf_count=...
//	internal_value=...
//	internal_weight=...
//	internal_count=...
//	[cat_boundaries=...]             (num_cat+1, when num_cat > 0)
//	[cat_threshold=...]              (cat_boundaries[num_cat])
//	is_linear=0
//	[leaf_const=... num_features=... leaf_features=... leaf_coeff=...]
//	shrinkage=1
//
//	Tree=1
//	...
//	end of trees
//
//	feature_importances:
//	...
//	parameters:
//	[boosting: gbdt]
//	...
//	end of parameters

// maxSplits bounds num_leaves (and so a tree's depth): LightGBM's own
// num_leaves limit is 131072.
const maxSplits = 1 << 20

// parser walks the lines of one file.
type parser struct {
	path  string
	lines []string
	next  int // index of the next line to read
}

// errorf returns a FormatError for line (1-based; 0 for the whole file).
func (p *parser) errorf(line int, format string, args ...any) error {
	return &FormatError{Path: p.path, Line: line, Err: fmt.Errorf(format, args...)}
}

// wrap returns a FormatError with cause err.
func (p *parser) wrap(line int, err error) error {
	return &FormatError{Path: p.path, Line: line, Err: err}
}

// field is a key=value line.
type field struct {
	value string
	line  int
}

func parse(path string, data []byte) (*Forest, error) {
	p := &parser{path: path}
	if err := p.sniff(data); err != nil {
		return nil, err
	}
	p.lines = strings.Split(string(data), "\n")
	for i, l := range p.lines {
		p.lines[i] = strings.TrimSuffix(l, "\r")
	}
	p.next = 1 // line 1 is "tree", checked by sniff
	f, want, err := p.header()
	if err != nil {
		return nil, err
	}
	if err := p.treesAndTail(f, want); err != nil {
		return nil, err
	}
	return f, nil
}

// sniff checks the first line is "tree", and says what the file looks
// like when it is not.
func (p *parser) sniff(data []byte) error {
	first, _, _ := bytes.Cut(data, []byte("\n"))
	first = bytes.TrimSuffix(first, []byte("\r"))
	if string(first) == "tree" {
		return nil
	}
	var hint string
	head := data[:min(len(data), 512)]
	switch trimmed := bytes.TrimLeft(head, " \t\r\n"); {
	case len(data) == 0:
		return p.errorf(0, "empty file: not a LightGBM text model")
	case bytes.IndexByte(head, 0) >= 0 || !isText(head):
		hint = " (binary data: an XGBoost binary or UBJSON model, or a LightGBM model saved in another form?)"
	case len(trimmed) > 0 && trimmed[0] == '{':
		hint = " (JSON: an XGBoost JSON model, or LightGBM's dump_model output?)"
	}
	if len(first) > 40 {
		first = first[:40]
	}
	return p.errorf(1, "first line is %q, not \"tree\": not a LightGBM text model%s", first, hint)
}

// isText reports whether b is mostly printable ASCII or UTF-8 text.
func isText(b []byte) bool {
	bad := 0
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' {
			bad++
		}
	}
	return bad*10 <= len(b)
}

// header reads the key=value lines up to the first Tree= (or "end of
// trees" for a model without trees). want is the number of trees
// tree_sizes lists, -1 without tree_sizes.
func (p *parser) header() (f *Forest, want int, err error) {
	kv := map[string]field{}
	for ; p.next < len(p.lines); p.next++ {
		l := p.lines[p.next]
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "Tree=") || l == "end of trees" {
			break
		}
		k, v, _ := strings.Cut(l, "=")
		if _, dup := kv[k]; dup {
			return nil, 0, p.errorf(p.next+1, "%s appears twice in the header", k)
		}
		kv[k] = field{v, p.next + 1}
	}
	if p.next == len(p.lines) {
		return nil, 0, p.errorf(0, "no Tree= block nor \"end of trees\" after the header: truncated file?")
	}
	f = &Forest{}

	v, ok := kv["version"]
	switch {
	case !ok:
		return nil, 0, p.errorf(0, "the header has no version= line")
	case v.value == "v3" || v.value == "v4":
		f.version = v.value
	default:
		return nil, 0, p.wrap(v.line, errUnsupported("model format version %q (this reader knows v3 and v4, written by LightGBM 3 and 4)", v.value))
	}

	integer := func(key string, lo, hi int) (int, error) {
		fl, ok := kv[key]
		if !ok {
			return 0, p.errorf(0, "the header has no %s= line", key)
		}
		n, err := strconv.Atoi(fl.value)
		if err != nil || n < lo || n > hi {
			return 0, p.errorf(fl.line, "%s=%s: want an integer in [%d, %d]", key, fl.value, lo, hi)
		}
		return n, nil
	}
	if f.numClass, err = integer("num_class", 1, 1<<16); err != nil {
		return nil, 0, err
	}
	perIter := f.numClass
	if _, ok := kv["num_tree_per_iteration"]; ok {
		if perIter, err = integer("num_tree_per_iteration", 1, 1<<16); err != nil {
			return nil, 0, err
		}
	}
	if perIter != f.numClass {
		return nil, 0, p.errorf(kv["num_tree_per_iteration"].line, "num_tree_per_iteration=%d differs from num_class=%d", perIter, f.numClass)
	}
	if _, err := integer("label_index", -1, math.MaxInt32); err != nil {
		return nil, 0, err
	}
	maxFeature, err := integer("max_feature_idx", 0, math.MaxInt32-1)
	if err != nil {
		return nil, 0, err
	}
	f.numFeatures = maxFeature + 1

	names, ok := kv["feature_names"]
	if !ok {
		return nil, 0, p.errorf(0, "the header has no feature_names= line")
	}
	f.featureNames = strings.Fields(names.value)
	if len(f.featureNames) != f.numFeatures {
		return nil, 0, p.errorf(names.line, "feature_names has %d names, max_feature_idx=%d wants %d", len(f.featureNames), maxFeature, f.numFeatures)
	}
	infos, ok := kv["feature_infos"]
	if !ok {
		return nil, 0, p.errorf(0, "the header has no feature_infos= line")
	}
	if n := len(strings.Fields(infos.value)); n != f.numFeatures {
		return nil, 0, p.errorf(infos.line, "feature_infos has %d entries, max_feature_idx=%d wants %d", n, maxFeature, f.numFeatures)
	}
	if mc, ok := kv["monotone_constraints"]; ok {
		if n := len(strings.Fields(mc.value)); n != f.numFeatures {
			return nil, 0, p.errorf(mc.line, "monotone_constraints has %d entries, max_feature_idx=%d wants %d", n, maxFeature, f.numFeatures)
		}
	}

	// Without an objective LightGBM predicts the raw scores.
	f.obj = objective{kind: identity, numClass: f.numClass}
	if o, ok := kv["objective"]; ok {
		if f.obj, err = parseObjective(o.value, f.numClass); err != nil {
			return nil, 0, p.wrap(o.line, err)
		}
	}
	if _, ok := kv["average_output"]; ok {
		f.averageOutput = true
	}

	// tree_sizes gives each Tree= block's length in bytes, which LightGBM
	// uses to parse the trees in parallel. Reading them in order needs no
	// offsets: the count is checked against the trees found.
	want = -1
	if ts, ok := kv["tree_sizes"]; ok {
		sizes := strings.Fields(ts.value)
		for _, s := range sizes {
			if n, err := strconv.ParseUint(s, 10, 63); err != nil || n == 0 {
				return nil, 0, p.errorf(ts.line, "tree_sizes: %q is not a size", clip(s))
			}
		}
		want = len(sizes)
		f.trees = make([]tree, 0, min(want, len(p.lines)))
	}
	return f, want, nil
}

// treesAndTail reads the Tree= blocks, "end of trees" and what follows.
func (p *parser) treesAndTail(f *Forest, want int) error {
	for {
		for p.next < len(p.lines) && p.lines[p.next] == "" {
			p.next++
		}
		if p.next == len(p.lines) {
			return p.errorf(0, "the file ends after %d trees without \"end of trees\": truncated?", len(f.trees))
		}
		l := p.lines[p.next]
		if l == "end of trees" {
			p.next++
			break
		}
		idx, ok := strings.CutPrefix(l, "Tree=")
		if !ok {
			return p.errorf(p.next+1, "%q where a Tree= block or \"end of trees\" should be", clip(l))
		}
		if n, err := strconv.Atoi(idx); err != nil || n != len(f.trees) {
			return p.errorf(p.next+1, "%q: want Tree=%d", clip(l), len(f.trees))
		}
		if len(f.trees) >= maxTrees {
			return p.errorf(p.next+1, "more than %d trees", maxTrees)
		}
		p.next++
		t, err := p.tree(f)
		if err != nil {
			return err
		}
		f.trees = append(f.trees, t)
	}
	if want >= 0 && want != len(f.trees) {
		return p.errorf(0, "tree_sizes lists %d trees but the file has %d", want, len(f.trees))
	}
	if len(f.trees) == 0 {
		return p.errorf(0, "the model has no trees")
	}
	if len(f.trees)%f.numClass != 0 {
		return p.errorf(0, "%d trees is not a multiple of num_tree_per_iteration=%d", len(f.trees), f.numClass)
	}
	f.iterations = len(f.trees) / f.numClass
	for i := range f.trees {
		f.linear = f.linear || f.trees[i].linear != nil
		f.maxDepth = max(f.maxDepth, f.trees[i].depth)
	}

	// After the trees: feature importances (ignored), then optionally the
	// training parameters and the parser config, each closed by an "end
	// of" line. Of all that, prediction uses only [linear_tree: 1]; a
	// section that is opened and never closed means a truncated file.
	open, opened := "", 0
	for ; p.next < len(p.lines); p.next++ {
		switch l := p.lines[p.next]; {
		case open == "" && (l == "parameters:" || l == "parser:"):
			open, opened = strings.TrimSuffix(l, ":"), p.next+1
		case open != "" && l == "end of "+open:
			open = ""
		case open == "parameters" && strings.HasPrefix(l, "[linear_tree: "):
			// LightGBM decides whether the model is linear (and so
			// refuses SHAP) from this line, not from the trees.
			f.linear = f.linear || strings.HasPrefix(l, "[linear_tree: 1")
		}
	}
	if open != "" {
		return p.errorf(opened, "the %s section has no \"end of %s\": truncated file?", open, open)
	}
	return nil
}

// maxTrees bounds the number of trees (LightGBM's num_iterations times
// num_class is far below it in practice).
const maxTrees = 1 << 24

// clip shortens a line for an error message.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// tree reads the key=value lines of one Tree= block (p.next is the line
// after Tree=) and checks them.
func (p *parser) tree(f *Forest) (tree, error) {
	start := p.next // for errors about the whole block
	kv := map[string]field{}
	for ; p.next < len(p.lines); p.next++ {
		l := p.lines[p.next]
		if l == "" || strings.HasPrefix(l, "Tree=") || l == "end of trees" {
			break
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return tree{}, p.errorf(p.next+1, "Tree=%d: %q: want key=value", len(f.trees), clip(l))
		}
		if _, dup := kv[k]; dup {
			return tree{}, p.errorf(p.next+1, "Tree=%d: %s appears twice", len(f.trees), k)
		}
		kv[k] = field{v, p.next + 1}
	}
	tp := treeParser{p: p, kv: kv, start: start, index: len(f.trees)}
	return tp.build(f)
}

// treeParser turns one block's fields into a checked tree.
type treeParser struct {
	p     *parser
	kv    map[string]field
	start int // 0-based index of the block's first line
	index int // the tree's number (Tree=index)
}

func (tp *treeParser) errorf(key string, format string, args ...any) error {
	line := tp.start // the Tree= line, 1-based
	if fl, ok := tp.kv[key]; ok {
		line = fl.line
	}
	return tp.p.errorf(line, "Tree=%d: "+format, append([]any{tp.index}, args...)...)
}

// tokens returns the fields of key's value, checking there are n of them
// (before anything of size n is allocated). A missing key is an error when
// required, else nil.
func (tp *treeParser) tokens(key string, n int, required bool) ([]string, error) {
	fl, ok := tp.kv[key]
	if !ok {
		if required && n > 0 {
			return nil, tp.errorf(key, "no %s= line", key)
		}
		return nil, nil
	}
	toks := strings.Fields(fl.value)
	if len(toks) != n {
		return nil, tp.errorf(key, "%s has %d values, want %d", key, len(toks), n)
	}
	return toks, nil
}

func (tp *treeParser) floats(key string, n int, required bool) ([]float64, error) {
	toks, err := tp.tokens(key, n, required)
	if err != nil || toks == nil {
		return nil, err
	}
	out := make([]float64, n)
	for i, s := range toks {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, tp.errorf(key, "%s[%d]=%q is not a number", key, i, clip(s))
		}
		out[i] = v
	}
	return out, nil
}

func (tp *treeParser) ints(key string, n int, required bool, lo, hi int64) ([]int64, error) {
	toks, err := tp.tokens(key, n, required)
	if err != nil || toks == nil {
		return nil, err
	}
	out := make([]int64, n)
	for i, s := range toks {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < lo || v > hi {
			return nil, tp.errorf(key, "%s[%d]=%q: want an integer in [%d, %d]", key, i, clip(s), lo, hi)
		}
		out[i] = v
	}
	return out, nil
}

func (tp *treeParser) scalar(key string, lo, hi int64, def int64, required bool) (int64, error) {
	fl, ok := tp.kv[key]
	switch {
	case !ok && !required:
		return def, nil
	case !ok:
		return 0, tp.errorf(key, "no %s= line", key)
	}
	v, err := strconv.ParseInt(fl.value, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, tp.errorf(key, "%s=%s: want an integer in [%d, %d]", key, clip(fl.value), lo, hi)
	}
	return v, nil
}

func (tp *treeParser) build(f *Forest) (tree, error) {
	var t tree
	nl, err := tp.scalar("num_leaves", 1, maxSplits, 0, true)
	if err != nil {
		return t, err
	}
	numCat, err := tp.scalar("num_cat", 0, maxSplits, 0, true)
	if err != nil {
		return t, err
	}
	n := int(nl)
	if t.leafValue, err = tp.floats("leaf_value", n, true); err != nil {
		return t, err
	}
	isLinear, err := tp.scalar("is_linear", 0, 1, 0, false)
	if err != nil {
		return t, err
	}
	if n == 1 && isLinear == 0 {
		// LightGBM reads nothing more of a one-leaf tree.
		t.leafCount = []float64{0}
		return t, nil
	}
	if numCat > int64(n-1) {
		return t, tp.errorf("num_cat", "num_cat=%d but the tree has %d splits", numCat, n-1)
	}

	features, err := tp.ints("split_feature", n-1, true, 0, int64(f.numFeatures-1))
	if err != nil {
		return t, err
	}
	thresholds, err := tp.floats("threshold", n-1, true)
	if err != nil {
		return t, err
	}
	left, err := tp.ints("left_child", n-1, true, int64(-n), int64(n-2))
	if err != nil {
		return t, err
	}
	right, err := tp.ints("right_child", n-1, true, int64(-n), int64(n-2))
	if err != nil {
		return t, err
	}
	decision, err := tp.ints("decision_type", n-1, false, 0, 15)
	if err != nil {
		return t, err
	}
	leafCount, err := tp.ints("leaf_count", n, false, math.MinInt32, math.MaxInt32)
	if err != nil {
		return t, err
	}
	innerCount, err := tp.ints("internal_count", n-1, false, math.MinInt32, math.MaxInt32)
	if err != nil {
		return t, err
	}
	if _, err := tp.floats("leaf_weight", n, false); err != nil {
		return t, err
	}
	t.leafCount = make([]float64, n)
	for i, c := range leafCount {
		t.leafCount[i] = float64(c)
	}
	t.innerCount = make([]float64, n-1)
	for i, c := range innerCount {
		t.innerCount[i] = float64(c)
	}

	if numCat > 0 {
		bounds, err := tp.ints("cat_boundaries", int(numCat)+1, true, 0, math.MaxInt32)
		if err != nil {
			return t, err
		}
		if bounds[0] != 0 {
			return t, tp.errorf("cat_boundaries", "cat_boundaries[0]=%d, want 0", bounds[0])
		}
		for i := 1; i < len(bounds); i++ {
			if bounds[i] < bounds[i-1] {
				return t, tp.errorf("cat_boundaries", "cat_boundaries decreases at %d", i)
			}
		}
		bits, err := tp.ints("cat_threshold", int(bounds[numCat]), true, 0, math.MaxUint32)
		if err != nil {
			return t, err
		}
		t.catBits = make([]uint32, len(bits))
		for i, b := range bits {
			t.catBits[i] = uint32(b)
		}
		t.nodes = make([]node, n-1)
		for i := range t.nodes {
			t.nodes[i].catLo, t.nodes[i].catHi = -1, -1
		}
		for i := range n - 1 {
			if decision != nil && decision[i]&1 != 0 {
				c := thresholds[i]
				if c != math.Trunc(c) || c < 0 || c >= float64(numCat) {
					return t, tp.errorf("threshold", "threshold[%d]=%v of a categorical split is not a category set index below num_cat=%d", i, c, numCat)
				}
				t.nodes[i].catLo, t.nodes[i].catHi = int32(bounds[int(c)]), int32(bounds[int(c)+1])
			}
		}
	} else {
		t.nodes = make([]node, n-1)
	}

	for i := range t.nodes {
		nd := &t.nodes[i]
		nd.feature = int32(features[i])
		nd.threshold = thresholds[i]
		nd.left, nd.right = int32(left[i]), int32(right[i])
		if decision != nil {
			d := decision[i]
			// LightGBM tests the categorical bit only in trees with
			// num_cat > 0 (Tree::GetLeaf); elsewhere every split is
			// numerical.
			nd.categorical = numCat > 0 && d&1 != 0
			nd.defaultLeft = d&2 != 0
			nd.missing = uint8(d>>2) & 3
			if nd.missing == 3 {
				return t, tp.errorf("decision_type", "decision_type[%d]=%d has missing type 3, which LightGBM does not define", i, d)
			}
		}
	}
	if n > 1 {
		if t.depth, err = tp.checkShape(t.nodes, n); err != nil {
			return t, err
		}
	}

	if isLinear == 1 {
		if t.linear, err = tp.linear(f, n); err != nil {
			return t, err
		}
	}
	return t, nil
}

// checkShape checks that the child links form a binary tree rooted at node
// 0 holding every node and leaf once, and returns its depth (the longest
// root-to-leaf path, in edges).
func (tp *treeParser) checkShape(nodes []node, n int) (int, error) {
	// Every node but the root, and every leaf, must be some node's child
	// exactly once; then the links from the root reach everything without
	// a cycle iff a walk from the root visits n-1 nodes.
	nodeParents := make([]int32, n-1)
	leafParents := make([]int32, n)
	for i, nd := range nodes {
		for side, c := range [2]int32{nd.left, nd.right} {
			key := [2]string{"left_child", "right_child"}[side]
			switch {
			case c == 0:
				return 0, tp.errorf(key, "node %d has the root (node 0) as a child", i)
			case c > 0:
				nodeParents[c]++
				if nodeParents[c] > 1 {
					return 0, tp.errorf(key, "node %d is the child of more than one node", c)
				}
			default:
				leafParents[^c]++
				if leafParents[^c] > 1 {
					return 0, tp.errorf(key, "leaf %d is the child of more than one node", ^c)
				}
			}
		}
	}
	for l, c := range leafParents {
		if c == 0 {
			return 0, tp.errorf("left_child", "leaf %d is no node's child", l)
		}
	}
	// Walk from the root (iteratively: depth is bounded only by n).
	type item struct{ node, depth int32 }
	stack := []item{{0, 0}}
	visited, depth := 0, 0
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		visited++
		for _, c := range [2]int32{nodes[it.node].left, nodes[it.node].right} {
			if c > 0 {
				stack = append(stack, item{c, it.depth + 1})
			} else {
				depth = max(depth, int(it.depth)+1)
			}
		}
	}
	if visited != n-1 {
		return 0, tp.errorf("left_child", "the child links hold a cycle: %d of %d nodes are reachable from the root", visited, n-1)
	}
	return depth, nil
}

// linear reads a linear tree's leaf models (Tree::Tree(const char*, ...)
// for is_linear=1).
func (tp *treeParser) linear(f *Forest, n int) (*linearLeaves, error) {
	lin := &linearLeaves{features: make([][]int32, n), coeff: make([][]float64, n)}
	var err error
	if lin.konst, err = tp.floats("leaf_const", n, false); err != nil {
		return nil, err
	}
	if lin.konst == nil {
		lin.konst = make([]float64, n)
	}
	counts, err := tp.ints("num_features", n, false, 0, int64(f.numFeatures))
	if err != nil || counts == nil {
		return lin, err
	}
	total := 0
	for _, c := range counts {
		total += int(c)
	}
	if total == 0 {
		return lin, nil
	}
	feats, err := tp.ints("leaf_features", total, true, 0, int64(f.numFeatures-1))
	if err != nil {
		return nil, err
	}
	coeffs, err := tp.floats("leaf_coeff", total, true)
	if err != nil {
		return nil, err
	}
	at := 0
	for i, c := range counts {
		lin.features[i] = make([]int32, c)
		for j := range lin.features[i] {
			lin.features[i][j] = int32(feats[at+j])
		}
		lin.coeff[i] = coeffs[at : at+int(c) : at+int(c)]
		at += int(c)
	}
	return lin, nil
}
