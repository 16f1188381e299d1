package lightgbm

// pathElement is Tree::PathElement: one feature on the path TreeSHAP
// follows, with the fractions of the paths through it that the "zero"
// (feature absent) and "one" (feature present) cases keep.
type pathElement struct {
	feature int32
	zero    float64
	one     float64
	// pweight of element i is the permutation weight of the paths with
	// i-1 ones in them; it is not tied to the other fields.
	pweight float64
}

// extendPath is Tree::ExtendPath.
func extendPath(path []pathElement, depth int, zero, one float64, feature int32) {
	path[depth] = pathElement{feature: feature, zero: zero, one: one}
	if depth == 0 {
		path[depth].pweight = 1
	}
	for i := depth - 1; i >= 0; i-- {
		path[i+1].pweight += one * path[i].pweight * float64(i+1) / float64(depth+1)
		path[i].pweight = zero * path[i].pweight * float64(depth-i) / float64(depth+1)
	}
}

// unwindPath is Tree::UnwindPath: undoes the extension by element index.
func unwindPath(path []pathElement, depth, index int) {
	one, zero := path[index].one, path[index].zero
	nextOne := path[depth].pweight
	for i := depth - 1; i >= 0; i-- {
		if one != 0 {
			tmp := path[i].pweight
			path[i].pweight = nextOne * float64(depth+1) / (float64(i+1) * one)
			nextOne = tmp - path[i].pweight*zero*float64(depth-i)/float64(depth+1)
		} else {
			path[i].pweight = (path[i].pweight * float64(depth+1)) / (zero * float64(depth-i))
		}
	}
	for i := index; i < depth; i++ {
		path[i].feature = path[i+1].feature
		path[i].zero = path[i+1].zero
		path[i].one = path[i+1].one
	}
}

// unwoundPathSum is Tree::UnwoundPathSum: the total permutation weight if
// element index were unwound.
func unwoundPathSum(path []pathElement, depth, index int) float64 {
	one, zero := path[index].one, path[index].zero
	nextOne := path[depth].pweight
	var total float64
	for i := depth - 1; i >= 0; i-- {
		if one != 0 {
			tmp := nextOne * float64(depth+1) / (float64(i+1) * one)
			total += tmp
			nextOne = path[i].pweight - float64(tmp*zero*(float64(depth-i)/float64(depth+1)))
		} else {
			total += (path[i].pweight / zero) / (float64(depth-i) / float64(depth+1))
		}
	}
	return total
}

// The float64(...) around products that are then added keep Go from
// fusing them into one multiply-add (which it may do on arm64, or amd64
// with GOAMD64=v3): LightGBM rounds each product.

// shap is Tree::TreeSHAP, the recursion over the tree from node. parent
// is the parent's path (its first depth elements); this call's path
// starts right after it, which is why the buffer holds
// (maxDepth+1)(maxDepth+2)/2 elements.
func (t *tree) shap(x []float32, phi []float64, node int32, depth int, parent []pathElement, parentZero, parentOne float64, parentFeature int32) {
	path := parent[depth:]
	if depth > 0 {
		copy(path[:depth], parent[:depth])
	}
	extendPath(path, depth, parentZero, parentOne, parentFeature)

	if node < 0 {
		leaf := t.leafValue[^node]
		for i := 1; i <= depth; i++ {
			w := unwoundPathSum(path, depth, i)
			el := &path[i]
			phi[el.feature] += float64(w * (el.one - el.zero) * leaf)
		}
		return
	}

	nd := &t.nodes[node]
	hot := t.next(nd, value(x, nd.feature))
	cold := nd.left
	if hot == nd.left {
		cold = nd.right
	}
	w := t.count(node)
	hotZero := t.count(hot) / w
	coldZero := t.count(cold) / w
	incomingZero, incomingOne := 1.0, 1.0

	// If the path already split on this feature, undo that split so that
	// this node redoes it.
	index := 0
	for ; index <= depth; index++ {
		if path[index].feature == nd.feature {
			break
		}
	}
	if index != depth+1 {
		incomingZero, incomingOne = path[index].zero, path[index].one
		unwindPath(path, depth, index)
		depth--
	}
	t.shap(x, phi, hot, depth+1, path, hotZero*incomingZero, incomingOne, nd.feature)
	t.shap(x, phi, cold, depth+1, path, coldZero*incomingZero, 0, nd.feature)
}
