package xgbrun

import (
	"encoding/binary"
	"fmt"
)

// Sizes of the structs XGBoost 1.7 reads whole from a legacy binary model
// (static_asserts in its sources).
const (
	legacyLearnerParamSize = 136 // LearnerModelParamLegacy, src/learner.cc
	legacyGBTreeParamSize  = 160 // GBTreeModelParam, src/gbm/gbtree_model.h
	legacyTreeParamSize    = 148 // TreeParam, include/xgboost/tree_model.h
	legacyNodeSize         = 20  // RegTree::Node
	legacyStatSize         = 16  // RTreeNodeStat
)

// checkLegacy walks a legacy binary model the way XGBoost 1.7's
// LearnerImpl::LoadModel(dmlc::Stream*) reads it, and fails where XGBoost
// would read past the end or allocate from a count the file cannot hold.
// XGBoost checks most of its reads, but resizes vectors to counts read
// from the file before reading them (a few garbage bytes become an
// allocation of terabytes) and ignores a short read of the attributes at
// the end, so that a file truncated there loads without its objective's
// parameters. The layout:
//
//	["binf"]                          an old header, skipped
//	LearnerModelParamLegacy           136 bytes; contain_extra_attrs at 12
//	objective, booster                strings: uint64 length, bytes
//	GBTreeModelParam                  160 bytes; num_trees at 0
//	per tree: TreeParam               148 bytes; num_nodes at 4
//	          nodes, stats            num_nodes × 20, num_nodes × 16 bytes
//	tree_info                         num_trees × int32
//	dart only: weight_drop            uint64 count, count × float32
//	attributes, if contain_extra_attrs: uint64 count, count × (string, string)
//
// Bytes after that are ignored, as XGBoost ignores them (XGBoost before
// 1.0 wrote the evaluation metrics' names there). gblinear models are
// refused: they are not tree models.
func checkLegacy(data []byte) error {
	r := legacyReader{data: data}
	if len(data) >= 4 {
		switch string(data[:4]) {
		case "binf":
			r.pos = 4
		case "bs64":
			return fmt.Errorf("legacy binary: base64-encoded models (header \"bs64\") are not supported by XGBoost")
		}
	}
	mparam, err := r.bytes(legacyLearnerParamSize, "the learner's parameters")
	if err != nil {
		return err
	}
	extraAttrs := int32(binary.LittleEndian.Uint32(mparam[12:])) != 0
	if _, err := r.str("the objective's name"); err != nil {
		return err
	}
	booster, err := r.str("the booster's name")
	if err != nil {
		return err
	}
	switch booster {
	case "gbtree", "dart":
	case "gblinear":
		return errLinear
	default:
		return fmt.Errorf("legacy binary: unknown booster %q", booster)
	}
	gparam, err := r.bytes(legacyGBTreeParamSize, "the trees' parameters")
	if err != nil {
		return err
	}
	trees := int32(binary.LittleEndian.Uint32(gparam))
	if trees < 0 {
		return fmt.Errorf("legacy binary: negative tree count %d", trees)
	}
	for t := range trees {
		tparam, err := r.bytes(legacyTreeParamSize, fmt.Sprintf("tree %d's parameters", t))
		if err != nil {
			return err
		}
		nodes := int32(binary.LittleEndian.Uint32(tparam[4:]))
		if nodes <= 0 {
			return fmt.Errorf("legacy binary: tree %d has %d nodes", t, nodes)
		}
		if _, err := r.bytes(int64(nodes)*(legacyNodeSize+legacyStatSize), fmt.Sprintf("tree %d's %d nodes", t, nodes)); err != nil {
			return err
		}
	}
	if trees > 0 {
		if _, err := r.bytes(int64(trees)*4, "the trees' groups (tree_info)"); err != nil {
			return err
		}
		if booster == "dart" {
			if _, err := r.vector(4, "dart's weight_drop"); err != nil {
				return err
			}
		}
	}
	if extraAttrs {
		n, err := r.count(16, "the attributes")
		if err != nil {
			return err
		}
		for i := range n {
			for _, what := range []string{"name", "value"} {
				if _, err := r.str(fmt.Sprintf("attribute %d's %s", i, what)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

type legacyReader struct {
	data []byte
	pos  int
}

func (r *legacyReader) bytes(n int64, what string) ([]byte, error) {
	if left := int64(len(r.data) - r.pos); n > left {
		return nil, fmt.Errorf("legacy binary: %s need %d bytes at byte %d, %d are left (truncated, or not a legacy binary model)",
			what, n, r.pos, left)
	}
	b := r.data[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

// count reads a uint64 count of items of at least unit bytes each.
func (r *legacyReader) count(unit int64, what string) (int64, error) {
	b, err := r.bytes(8, "the count of "+what)
	if err != nil {
		return 0, err
	}
	n := binary.LittleEndian.Uint64(b)
	if left := uint64(len(r.data) - r.pos); n > left/uint64(unit) {
		size := fmt.Sprintf("%d items of %d bytes or more", n, unit)
		if unit == 1 {
			size = fmt.Sprintf("%d bytes", n)
		}
		return 0, fmt.Errorf("legacy binary: %s: %s at byte %d, %d bytes are left (truncated, or not a legacy binary model)",
			what, size, r.pos, left)
	}
	return int64(n), nil
}

func (r *legacyReader) vector(unit int64, what string) ([]byte, error) {
	n, err := r.count(unit, what)
	if err != nil {
		return nil, err
	}
	return r.bytes(n*unit, what)
}

func (r *legacyReader) str(what string) (string, error) {
	b, err := r.vector(1, what)
	return string(b), err
}
