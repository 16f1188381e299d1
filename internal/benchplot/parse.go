package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// A result is one line of `go test -bench` output.
type result struct {
	name   string             // without the -GOMAXPROCS suffix
	values map[string]float64 // by unit: "ns/op", "B/op", "req/s", ...
}

// procsSuffix is the -N that go test appends to a benchmark's name when
// GOMAXPROCS is not 1.
var procsSuffix = regexp.MustCompile(`-[0-9]+$`)

// parse reads benchmark results: lines that start with "Benchmark" and go
// on with an iteration count and value-unit pairs. Every other line is
// skipped, as is a benchmark's name alone on a line (go test prints one
// before a benchmark's log output).
func parse(r io.Reader) ([]result, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []result
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if len(f)%2 != 0 {
			return nil, fmt.Errorf("line %d: want a name, an iteration count and value-unit pairs, got %d fields", line, len(f))
		}
		if _, err := strconv.ParseUint(f[1], 10, 64); err != nil {
			return nil, fmt.Errorf("line %d: iteration count %q: %w", line, f[1], err)
		}
		res := result{name: procsSuffix.ReplaceAllString(f[0], ""), values: make(map[string]float64, (len(f)-2)/2)}
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: value of %s: %w", line, f[i+1], err)
			}
			res.values[f[i+1]] = v
		}
		out = append(out, res)
	}
	return out, sc.Err()
}
