package tensor

import (
	"math"
	"strconv"
)

// Concat joins parts along dimension 0 into one tensor named name, the
// dynamic batcher's gather step: all parts must be valid and have the same
// data type, the same rank (at least 1) and the same dimensions after the
// first; the result's first dimension is the sum of theirs. [Bytes] tensors
// are joined too, since their framing concatenates.
//
// With two or more parts Concat copies the data into one new buffer of
// exactly the combined size (one allocation for the data, one for the
// shape); the result owns it and aliases no part. A single part is returned
// as is, renamed to name but not copied: it shares that part's Data and
// Shape.
//
// Errors wrap [ErrInvalid] (no parts, a part that fails [Tensor.Validate],
// mismatched types or shapes) or [ErrOverflow].
func Concat(name string, parts []Tensor) (Tensor, error) {
	if len(parts) == 0 {
		return Tensor{}, invalidf("tensor %s: concat of no parts", strconv.Quote(name))
	}
	first := parts[0]
	if len(first.Shape) == 0 {
		return Tensor{}, invalidf("tensor %s: concat part 0 (%s) is a scalar; need rank 1 or more", strconv.Quote(name), strconv.Quote(first.Name))
	}
	rows, size := int64(0), 0
	for i, p := range parts {
		if err := p.Validate(); err != nil {
			return Tensor{}, invalidf("tensor %s: concat part %d: %w", strconv.Quote(name), i, err)
		}
		if p.DataType != first.DataType {
			return Tensor{}, invalidf("tensor %s: concat part %d (%s) has data type %v, part 0 has %v",
				strconv.Quote(name), i, strconv.Quote(p.Name), p.DataType, first.DataType)
		}
		if len(p.Shape) != len(first.Shape) || !p.Shape[1:].Equal(first.Shape[1:]) {
			return Tensor{}, invalidf("tensor %s: concat part %d (%s) has shape %v, incompatible with part 0's %v",
				strconv.Quote(name), i, strconv.Quote(p.Name), p.Shape.String(), first.Shape.String())
		}
		if rows > math.MaxInt64-p.Shape[0] || size > math.MaxInt-len(p.Data) {
			return Tensor{}, invalidf("tensor %s: concat size %w", strconv.Quote(name), ErrOverflow)
		}
		rows += p.Shape[0]
		size += len(p.Data)
	}
	if len(parts) == 1 {
		first.Name = name
		return first, nil
	}
	shape := first.Shape.Clone()
	shape[0] = rows
	if _, err := shape.NumElements(); err != nil {
		return Tensor{}, named(name, err)
	}
	data := make([]byte, 0, size)
	for _, p := range parts {
		data = append(data, p.Data...)
	}
	return Tensor{Name: name, DataType: first.DataType, Shape: shape, Data: data}, nil
}

// SliceRows returns rows [start, end) of t along dimension 0, the batcher's
// scatter step: a tensor with the same name and type, shape
// [end-start, t.Shape[1:]...], and Data a sub-slice of t.Data — a view, not
// a copy, whose capacity is cut to its length so appending to it cannot
// overwrite the rows after it. Only the new shape is allocated.
//
// t must have rank at least 1 and 0 ≤ start ≤ end ≤ t.Shape[0]. For
// fixed-size types t must have the length its shape implies; for [Bytes]
// SliceRows walks the length prefixes up to row end to find the offsets and
// fails if that part of the framing is broken (it does not look past row
// end). Errors wrap [ErrInvalid].
func (t Tensor) SliceRows(start, end int64) (Tensor, error) {
	if len(t.Shape) == 0 {
		return Tensor{}, invalidf("tensor %s: cannot slice rows of a scalar", strconv.Quote(t.Name))
	}
	if !t.DataType.Valid() {
		return Tensor{}, invalidf("tensor %s: invalid data type %s", strconv.Quote(t.Name), dtName(t.DataType))
	}
	_, err := t.Shape.NumElements()
	var perRow int64
	if err == nil {
		perRow, err = t.Shape[1:].NumElements()
	}
	if err != nil {
		return Tensor{}, named(t.Name, err)
	}
	if start < 0 || start > end || end > t.Shape[0] {
		return Tensor{}, invalidf("tensor %s: row range [%d,%d) out of bounds for shape %v", strconv.Quote(t.Name), start, end, t.Shape.String())
	}
	var lo, hi int
	if t.DataType == Bytes {
		// Element counts fit: start*perRow ≤ end*perRow ≤ NumElements.
		lo, hi, err = walkBytes(t.Data, end*perRow, start*perRow)
		if err != nil {
			return Tensor{}, named(t.Name, err)
		}
	} else {
		if err := t.Validate(); err != nil {
			return Tensor{}, err
		}
		// end*rowBytes ≤ ByteSize, which Validate checked fits; with
		// t.Shape[0] == 0, start and end are 0 and so are the offsets.
		rowBytes := perRow * int64(t.DataType.Size())
		lo, hi = int(start*rowBytes), int(end*rowBytes)
	}
	shape := make(Shape, len(t.Shape))
	shape[0] = end - start
	copy(shape[1:], t.Shape[1:])
	return Tensor{Name: t.Name, DataType: t.DataType, Shape: shape, Data: t.Data[lo:hi:hi], mem: t.mem}, nil
}

// ConcatFlat concatenates every element of parts, whatever their shapes,
// into one rank-1 tensor: the gather step of a ragged batch (an input with
// allow_ragged_batch, whose requests have different shapes). All parts must
// have the same data type; one allocation of the exact size.
func ConcatFlat(name string, parts []Tensor) (Tensor, error) {
	if len(parts) == 0 {
		return Tensor{}, invalidf("tensor %s: concat of no parts", strconv.Quote(name))
	}
	var elems int64
	size := 0
	for i, p := range parts {
		if err := p.Validate(); err != nil {
			return Tensor{}, invalidf("tensor %s: concat part %d: %w", strconv.Quote(name), i, err)
		}
		if p.DataType != parts[0].DataType {
			return Tensor{}, invalidf("tensor %s: concat part %d (%s) has data type %v, part 0 has %v",
				strconv.Quote(name), i, strconv.Quote(p.Name), p.DataType, parts[0].DataType)
		}
		n, _ := p.Shape.NumElements() // Validate checked it
		if elems > math.MaxInt64-n || size > math.MaxInt-len(p.Data) {
			return Tensor{}, invalidf("tensor %s: concat size %w", strconv.Quote(name), ErrOverflow)
		}
		elems += n
		size += len(p.Data)
	}
	data := make([]byte, 0, size)
	for _, p := range parts {
		data = append(data, p.Data...)
	}
	return Tensor{Name: name, DataType: parts[0].DataType, Shape: Shape{elems}, Data: data}, nil
}
