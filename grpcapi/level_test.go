package grpcapi

import (
	"bytes"
	"io"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/grpc/encoding"
)

// TestCompressionLevelAlgorithm checks grpc-core's choice of an encoding
// for a level among the client's accepted ones, including clients that
// accept one of gzip and deflate, or neither.
func TestCompressionLevelAlgorithm(t *testing.T) {
	both := []string{"identity", "deflate", "gzip"}
	for _, tc := range []struct {
		level    compressionLevel
		accepted []string
		want     string
	}{
		{levelNone, both, "identity"},
		{levelLow, both, "gzip"},
		{levelMedium, both, "deflate"},
		{levelHigh, both, "deflate"},
		{levelLow, []string{"gzip"}, "gzip"},
		{levelHigh, []string{"gzip"}, "gzip"},
		{levelLow, []string{"deflate"}, "deflate"},
		{levelMedium, []string{"deflate", "snappy"}, "deflate"},
		{levelHigh, []string{"identity"}, "identity"},
		{levelHigh, nil, "identity"},
	} {
		if got := tc.level.algorithm(tc.accepted); got != tc.want {
			t.Errorf("level %d, client accepting %v: %q, want %q", tc.level, tc.accepted, got, tc.want)
		}
	}
	for s, want := range map[string]compressionLevel{"none": levelNone, "LOW": levelLow, "Medium": levelMedium, "high": levelHigh} {
		if got, err := parseCompressionLevel(s); err != nil || got != want {
			t.Errorf("parse %q: %v, %v", s, got, err)
		}
	}
	if _, err := parseCompressionLevel("max"); err == nil {
		t.Error(`level "max" accepted`)
	}
}

// TestLargeInflations checks that at most maxLargeInflations messages
// inflate past the gate's size at once: a third waits until one of the
// first two is closed, for either encoding; and that pooled readers and
// writers are reset clean.
func TestLargeInflations(t *testing.T) {
	const small = 1 << 20
	for _, name := range []string{"gzip", "deflate"} {
		// The registered compressor with a gate of its own, at 1 MiB.
		reg := encoding.GetCompressor(name).(*compressor)
		g := newGate(small, maxLargeInflations)
		c := &compressor{name: reg.name, newWriter: reg.newWriter, newReader: reg.newReader, reset: reg.reset, gate: g}
		var blob bytes.Buffer
		w, _ := c.Compress(&blob)
		w.Write(make([]byte, 2*small))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		// Past the threshold: a slot each.
		open := func() io.Reader {
			r, err := c.Decompress(bytes.NewReader(blob.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.CopyN(io.Discard, r, small+1); err != nil {
				t.Fatal(err)
			}
			return r
		}
		r1, r2 := open(), open()
		if n := len(g.slots); n != 2 {
			t.Fatalf("%s: %d slots taken, want 2", name, n)
		}
		done := make(chan io.Reader)
		go func() { done <- open() }()
		for g.waiting.Load() != 1 {
			runtime.Gosched() // until the third waits for a slot
		}
		select {
		case <-done:
			t.Fatalf("%s: a third large inflation did not wait", name)
		default:
		}
		r1.(io.Closer).Close()
		r3 := <-done
		for _, r := range []io.Reader{r2, r3} {
			if n, err := io.Copy(io.Discard, r); err != nil || n != small-1 {
				t.Errorf("%s: the rest: %d bytes, %v", name, n, err)
			}
			r.(io.Closer).Close()
		}
		if n := len(g.slots); n != 0 {
			t.Errorf("%s: %d slots still taken", name, n)
		}
		// Pooled readers were reset over an empty stream of their format.
		r, err := c.Decompress(bytes.NewReader(blob.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		pr := r.(*pooledReader)
		if err := c.reset(pr.r, strings.NewReader(map[string]string{"gzip": emptyGzip, "deflate": emptyZlib}[name])); err != nil {
			t.Errorf("%s: the empty stream: %v", name, err)
		}
		pr.Close()
	}
}
