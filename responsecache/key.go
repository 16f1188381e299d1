package responsecache

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/triton-go/triton/tensor"
	"github.com/zeebo/xxh3"
)

// The key of a request is the byte string
//
//	header ‖ data₀ ‖ data₁ ‖ … ‖ dataₙ₋₁
//
// where, with inputs sorted by name (stably, so inputs that share a name
// keep their request order),
//
//	header = uvarint(len(model)) model  varint(version)  uvarint(n)
//	         per input: uvarint(len(name)) name  dtype (one byte)
//	                    uvarint(rank) varint(dim)…  uvarint(len(data))
//
// Every variable-length field is preceded by its length and varints are
// self-delimiting, so the header parses in exactly one way and tells where
// each dataᵢ starts and ends: two different requests never have the same
// key. Entries and flights keep their key in full and a hit compares it
// byte for byte; the digest only picks the candidates.
//
// The digest is XXH3-128 over header ‖ XXH3-128(data₀) ‖ … ‖
// XXH3-128(dataₙ₋₁) (each inner digest as Hi then Lo, little-endian): a
// two-level hash, so that large inputs go through the one-shot XXH3 routine
// straight from the caller's memory (no copy, no streaming buffer) and the
// key is never materialised on a hit.

// probe is the key of one call, computed from the caller's borrowed inputs
// without copying their data. It is only valid while the inputs are.
type probe struct {
	model  string
	hdr    []byte          // canonical header
	inputs []tensor.Tensor // the caller's inputs, borrowed
	order  []int           // indexes into inputs, in key order
	size   int             // length of the full key: len(hdr) + Σ len(data)
	digest xxh3.Uint128
}

// hashFunc is the 128-bit hash of the key; nil means xxh3.Hash128, the
// only one outside tests.
type hashFunc func([]byte) xxh3.Uint128

func (sum hashFunc) hash(b []byte) xxh3.Uint128 {
	if sum != nil {
		// Cloning keeps b from escaping through the indirect call, so
		// that the common path can hash a buffer on the caller's stack.
		return sum(bytes.Clone(b))
	}
	return xxh3.Hash128(b)
}

// newProbe computes the header and digest of (model, version, inputs) with
// the hash function sum. It reads but does not retain or modify inputs.
// buf and order are scratch space the probe may use (it allocates when
// they are too small), so that a caller can keep small probes off the heap.
func newProbe(sum hashFunc, buf []byte, order []int, model string, version int64, inputs []tensor.Tensor) probe {
	order = order[:0]
	for i := range inputs {
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(inputs[a].Name, inputs[b].Name) })

	// An upper bound on the header, plus 16 bytes per input for the inner
	// digests that follow it in the hashed buffer.
	n := 3*binary.MaxVarintLen64 + len(model)
	for i := range inputs {
		n += (3+len(inputs[i].Shape))*binary.MaxVarintLen64 + 1 + len(inputs[i].Name) + 16
	}
	b := buf[:0]
	if cap(b) < n {
		b = make([]byte, 0, n)
	}
	b = appendString(b, model)
	b = binary.AppendVarint(b, version)
	b = binary.AppendUvarint(b, uint64(len(inputs)))
	size := 0
	for _, i := range order {
		t := &inputs[i]
		b = appendString(b, t.Name)
		b = append(b, byte(t.DataType))
		b = binary.AppendUvarint(b, uint64(len(t.Shape)))
		for _, d := range t.Shape {
			b = binary.AppendVarint(b, d)
		}
		b = binary.AppendUvarint(b, uint64(len(t.Data)))
		size += len(t.Data)
	}
	hdr := b[:len(b):len(b)]
	for _, i := range order {
		d := sum.hash(inputs[i].Data)
		b = binary.LittleEndian.AppendUint64(b, d.Hi)
		b = binary.LittleEndian.AppendUint64(b, d.Lo)
	}
	return probe{
		model:  model,
		hdr:    hdr,
		inputs: inputs,
		order:  order,
		size:   len(hdr) + size,
		digest: sum.hash(b),
	}
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// matches reports whether key, a full key made by [probe.key], is the key
// of p. It compares every byte.
func (p *probe) matches(key []byte) bool {
	if len(key) != p.size || !bytes.Equal(key[:len(p.hdr)], p.hdr) {
		return false
	}
	// Equal headers mean equal data lengths, so the offsets line up.
	off := len(p.hdr)
	for _, i := range p.order {
		d := p.inputs[i].Data
		if !bytes.Equal(key[off:off+len(d)], d) {
			return false
		}
		off += len(d)
	}
	return true
}

// key returns the full key of p in a fresh buffer that owns a copy of the
// inputs' data.
func (p *probe) key() []byte {
	k := make([]byte, p.size)
	off := copy(k, p.hdr)
	for _, i := range p.order {
		off += copy(k[off:], p.inputs[i].Data)
	}
	return k
}
