//go:build cgo && (linux || darwin)

package ortrun

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// ortModule is the module whose ORT C API header the slots are counted in.
const ortModule = "github.com/yalue/onnxruntime_go"

// apiHeader returns the folder of the onnxruntime_go module this package
// builds against and the text of its onnxruntime_c_api.h.
func apiHeader(t *testing.T) (dir, header string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		skipOrFail(t, fmt.Sprintf("no go command to locate the %s module: %v", ortModule, err))
	}
	out, err := exec.Command(goTool, "list", "-m", "-f", "{{.Dir}}", ortModule).Output()
	dir = strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		skipOrFail(t, fmt.Sprintf("cannot locate the %s module (go list: %v)", ortModule, err))
	}
	h, err := os.ReadFile(filepath.Join(dir, "onnxruntime_c_api.h"))
	if err != nil {
		skipOrFail(t, err.Error())
	}
	return dir, string(h)
}

func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// apiSlot is one function pointer of struct OrtApi.
type apiSlot struct {
	name  string
	since int // the minor version from a "\since Version 1.N" note in its comment, or 0
}

var (
	reStatus  = regexp.MustCompile(`^ORT_API2_STATUS\(\s*(\w+)`)
	reRelease = regexp.MustCompile(`^ORT_CLASS_RELEASE\(\s*(\w+)\s*\)`)
	reAPIT    = regexp.MustCompile(`^ORT_API_T\([^,]+,\s*(\w+)`)
	rePointer = regexp.MustCompile(`\(\s*ORT_API_CALL\s*\*\s*(\w+)\s*\)`)
	reSince   = regexp.MustCompile(`\\since\s+(?:Version\s+)?1\.(\d+)`)
)

// countSlots lists the members of struct OrtApi in header order: one per
// top-level ';' in the struct body, with comments set aside (each member's
// doc comment precedes it).
func countSlots(t *testing.T, header string) []apiSlot {
	t.Helper()
	start := strings.Index(header, "\nstruct OrtApi {")
	if start < 0 {
		t.Fatal("no struct OrtApi in the header")
	}
	body := header[start+len("\nstruct OrtApi {"):]
	var (
		slots    []apiSlot
		stmt     strings.Builder
		comments strings.Builder
		parens   int
	)
	for i := 0; i < len(body); i++ {
		switch {
		case strings.HasPrefix(body[i:], "//"):
			end := strings.IndexByte(body[i:], '\n')
			if end < 0 {
				end = len(body) - i
			}
			comments.WriteString(body[i : i+end])
			i += end
		case strings.HasPrefix(body[i:], "/*"):
			end := strings.Index(body[i+2:], "*/")
			if end < 0 {
				t.Fatal("unterminated comment in struct OrtApi")
			}
			comments.WriteString(body[i : i+2+end+2])
			i += 2 + end + 1
		case body[i] == '#':
			t.Fatalf("preprocessor line inside struct OrtApi: %.40q", body[i:])
		case body[i] == '(':
			parens++
			stmt.WriteByte('(')
		case body[i] == ')':
			parens--
			stmt.WriteByte(')')
		case body[i] == '}' && parens == 0:
			if s := strings.TrimSpace(stmt.String()); s != "" {
				t.Fatalf("struct OrtApi ends after an unterminated member %q", s)
			}
			return slots
		case body[i] == ';' && parens == 0:
			s := strings.Join(strings.Fields(stmt.String()), " ")
			var name string
			for _, re := range []*regexp.Regexp{reStatus, reAPIT, rePointer} {
				if m := re.FindStringSubmatch(s); m != nil {
					name = m[1]
					break
				}
			}
			if m := reRelease.FindStringSubmatch(s); m != nil {
				name = "Release" + m[1]
			}
			if name == "" {
				t.Fatalf("cannot name OrtApi member %d: %q", len(slots), s)
			}
			since := 0
			if m := reSince.FindStringSubmatch(comments.String()); m != nil {
				since, _ = strconv.Atoi(m[1])
			}
			slots = append(slots, apiSlot{name, since})
			stmt.Reset()
			comments.Reset()
		default:
			stmt.WriteByte(body[i])
		}
	}
	t.Fatal("struct OrtApi has no end")
	return nil
}

// TestSlots recounts, from the header, the OrtApi slot of every function
// the shim calls, and checks that apiVersion is the lowest OrtApi version
// that has them all.
func TestSlots(t *testing.T) {
	_, header := apiHeader(t)
	all := countSlots(t, header)
	if m := regexp.MustCompile(`#define ORT_API_VERSION (\d+)`).FindStringSubmatch(header); m == nil {
		t.Error("the header does not define ORT_API_VERSION")
	} else if v, _ := strconv.Atoi(m[1]); v < apiVersion {
		t.Errorf("the header is for OrtApi version %d, older than the %d we request", v, apiVersion)
	}

	index := map[string]int{}
	for i, s := range all {
		if _, dup := index[s.name]; dup {
			t.Errorf("OrtApi member %s appears twice", s.name)
		}
		index[s.name] = i
	}
	// The table is append-only, so a slot was introduced no earlier than the
	// latest "since" note at or before it, and no later than the earliest
	// note at or after it.
	lower, upper := make([]int, len(all)), make([]int, len(all))
	for i, s := range all {
		lower[i] = s.since
		if i > 0 {
			lower[i] = max(lower[i], lower[i-1])
		}
	}
	for i := len(all) - 1; i >= 0; i-- {
		upper[i] = 1 << 30
		if all[i].since > 0 {
			upper[i] = all[i].since
		}
		if i+1 < len(all) {
			upper[i] = min(upper[i], upper[i+1])
		}
	}
	needed := 1
	for name, slot := range slots {
		got, ok := index[name]
		if !ok {
			t.Errorf("%s is not in struct OrtApi", name)
			continue
		}
		if got != slot {
			t.Errorf("%s is in slot %d of OrtApi, the shim uses %d", name, got, slot)
		}
		if upper[got] > apiVersion {
			t.Errorf("%s (slot %d) may be newer than the OrtApi version %d we request (first note after it: 1.%d)",
				name, got, apiVersion, upper[got])
		}
		needed = max(needed, lower[got])
		t.Logf("%-36s slot %3d, introduced in ORT 1.%d–1.%d", name, got, lower[got], min(upper[got], 99))
	}
	if needed != apiVersion {
		t.Errorf("the functions we call need OrtApi version %d; we request %d", needed, apiVersion)
	}
}

// TestSlotsCompiler cross-checks TestSlots' counting with the C compiler:
// offsetof(OrtApi, F) / sizeof(void *) for every function the shim calls,
// and sizeof(OrtApi) / sizeof(void *) against the number of members counted.
func TestSlotsCompiler(t *testing.T) {
	hdir, header := apiHeader(t)
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		skipOrFail(t, fmt.Sprintf("no C compiler %q: %v", cc, err))
	}
	dir := t.TempDir()
	var src strings.Builder
	src.WriteString("#include <stddef.h>\n#include <stdio.h>\n#include \"onnxruntime_c_api.h\"\nint main(void) {\n")
	for name := range slots {
		fmt.Fprintf(&src, "\tprintf(\"%s %%zu\\n\", offsetof(OrtApi, %s) / sizeof(void *));\n", name, name)
	}
	src.WriteString("\tprintf(\"sizeof %zu\\n\", sizeof(OrtApi) / sizeof(void *));\n\treturn 0;\n}\n")
	if err := os.WriteFile(filepath.Join(dir, "slots.c"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "slots")
	if out, err := exec.Command(cc, "-I", hdir, "-o", exe, filepath.Join(dir, "slots.c")).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	out, err := exec.Command(exe).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var name string
		var slot int
		if _, err := fmt.Sscanf(line, "%s %d", &name, &slot); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if name == "sizeof" {
			if n := len(countSlots(t, header)); slot != n {
				t.Errorf("the compiler sees %d OrtApi members, countSlots %d", slot, n)
			}
			continue
		}
		if slots[name] != slot {
			t.Errorf("the compiler puts %s in slot %d, the shim uses %d", name, slot, slots[name])
		}
	}
}
