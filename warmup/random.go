package warmup

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"

	"github.com/triton-go/triton/tensor"
)

// seed returns the random_data seed of one input of one sample: a hash of
// both names, so that each input's data is fixed by the config alone.
func seed(sample, input string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(sample))
	h.Write([]byte{0})
	h.Write([]byte(input))
	return h.Sum64()
}

// pcgStream is the second PCG seed word; any fixed value will do.
const pcgStream = 0x7472_6974_6f6e_676f // "tritongo"

// randomRow returns one row of n random elements of the fixed-size type
// dt, from a PCG generator seeded with s. Every value is valid for dt:
// BOOL bytes are 0 or 1, floating-point values are finite and spread
// uniformly over [-1, 1) on a grid the type represents exactly (steps of
// 2^-10 for FP16, 2^-7 for BF16, 2^-23 for FP32, 2^-52 for FP64), and
// integers take any value. The generator is used through its Uint64
// method only, whose output PCG's definition fixes, so the data does not
// change between Go releases.
func randomRow(dt tensor.DataType, n int64, s uint64) ([]byte, error) {
	size, err := rowBytes(dt, n)
	if err != nil {
		return nil, err
	}
	row := make([]byte, size)
	r := rand.NewPCG(s, pcgStream)
	le := binary.LittleEndian
	switch dt {
	case tensor.Bool:
		for i := range row {
			row[i] = byte(r.Uint64() >> 63)
		}
	case tensor.FP16:
		for i := 0; i < len(row); i += 2 {
			f := float32(int64(r.Uint64()>>53)-1<<10) / (1 << 10)
			le.PutUint16(row[i:], uint16(tensor.Float16FromFloat32(f)))
		}
	case tensor.BF16:
		for i := 0; i < len(row); i += 2 {
			f := float32(int64(r.Uint64()>>56)-1<<7) / (1 << 7)
			le.PutUint16(row[i:], uint16(tensor.BFloat16FromFloat32(f)))
		}
	case tensor.FP32:
		for i := 0; i < len(row); i += 4 {
			f := float32(int64(r.Uint64()>>40)-1<<23) / (1 << 23)
			le.PutUint32(row[i:], math.Float32bits(f))
		}
	case tensor.FP64:
		for i := 0; i < len(row); i += 8 {
			f := float64(int64(r.Uint64()>>11)-1<<52) / (1 << 52)
			le.PutUint64(row[i:], math.Float64bits(f))
		}
	default: // integers: any bit pattern is a valid value
		i := 0
		for ; i+8 <= len(row); i += 8 {
			le.PutUint64(row[i:], r.Uint64())
		}
		if i < len(row) {
			var tail [8]byte
			le.PutUint64(tail[:], r.Uint64())
			copy(row[i:], tail[:])
		}
	}
	return row, nil
}
