package ppocr

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// KeysFile is the name of PP-OCR's recogniser dictionary.
const KeysFile = "ppocr_keys_v1.txt"

// ParseKeys splits a dictionary file such as ppocr_keys_v1.txt into its
// entries, one a line, keeping no empty last entry when the file ends in a
// newline (and accepting "\r\n" line ends).
func ParseKeys(data []byte) []string {
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// ReadKeys reads a dictionary file from the local file system; see
// [ParseKeys].
func ReadKeys(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseKeys(b), nil
}

// ReadKeysFS is [ReadKeys] on fsys.
func ReadKeysFS(fsys fs.FS, name string) ([]string, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	return ParseKeys(b), nil
}

// CTCDecode greedily decodes one line of recogniser output, probs being
// [T, C] row-major: argmax per step, repeats collapsed, blanks (index 0)
// dropped; index i in 1..len(keys) is keys[i-1] and index len(keys)+1 is a
// space. conf is the mean probability of the kept steps (0 for an empty
// line).
func CTCDecode(probs []float32, T, C int, keys []string) (text string, conf float32, err error) {
	if T < 0 || len(probs) != T*C {
		return "", 0, fmt.Errorf("ctc: %d probabilities for [%d, %d]", len(probs), T, C)
	}
	if C != len(keys)+2 {
		return "", 0, fmt.Errorf("ctc: %d classes for %d keys (want keys+2)", C, len(keys))
	}
	var sb strings.Builder
	var sum float64
	prev, kept := -1, 0
	for t := range T {
		row := probs[t*C : (t+1)*C]
		best := 0
		for c := 1; c < C; c++ {
			if row[c] > row[best] {
				best = c
			}
		}
		if best != prev && best != 0 {
			if best == C-1 {
				sb.WriteByte(' ')
			} else {
				sb.WriteString(keys[best-1])
			}
			sum += float64(row[best])
			kept++
		}
		prev = best
	}
	if kept > 0 {
		conf = float32(sum / float64(kept))
	}
	return sb.String(), conf, nil
}
