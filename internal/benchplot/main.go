package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	in := flag.String("in", "docs/bench", "folder of the benchmark output files")
	out := flag.String("out", "docs", "folder the PNG files are written to")
	flag.Parse()
	written, err := drawAll(*in, *out, specs)
	for _, path := range written {
		fmt.Println(path)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchplot:", err)
		os.Exit(1)
	}
}
