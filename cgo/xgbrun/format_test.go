package xgbrun

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdata is where scripts/gen-fil-models.py writes the test models.
const testdata = "../../backend/fil/xgboost/testdata"

// modelFiles are the generated models, with their formats.
func modelFiles(tb testing.TB) map[string]Format {
	tb.Helper()
	exts := map[string]Format{".model": Legacy, ".json": JSON, ".ubj": UBJSON}
	entries, err := os.ReadDir(testdata)
	if err != nil {
		tb.Fatal(err)
	}
	files := map[string]Format{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".expect.json") {
			continue
		}
		if f, ok := exts[filepath.Ext(name)]; ok {
			files[filepath.Join(testdata, name)] = f
		}
	}
	if len(files) < 15 {
		tb.Fatalf("only %d models in %s; run scripts/gen-fil-models.py", len(files), testdata)
	}
	return files
}

func readFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestCheckAcceptsGeneratedModels(t *testing.T) {
	for path, f := range modelFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			if _, err := Check(readFile(t, path), f); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCheckWrongFormat loads every model as each other format: each must
// be refused before XGBoost sees it, naming both formats.
func TestCheckWrongFormat(t *testing.T) {
	for path, f := range modelFiles(t) {
		data := readFile(t, path)
		for _, g := range []Format{Legacy, JSON, UBJSON} {
			if g == f {
				continue
			}
			_, err := Check(data, g)
			if !errors.Is(err, ErrFormat) {
				t.Errorf("%s as %v: %v, want ErrFormat", path, g, err)
				continue
			}
			if msg := err.Error(); !strings.Contains(msg, f.String()) || !strings.Contains(msg, g.String()) {
				t.Errorf("%s as %v: %q does not name both formats", path, g, msg)
			}
		}
	}
}

// TestCheckTruncated checks proper prefixes of every model (every one of
// the first and last 300 bytes' and every 29th between; each check of a
// JSON prefix reads it whole): each is refused, so XGBoost never sees one.
func TestCheckTruncated(t *testing.T) {
	for path, f := range modelFiles(t) {
		data := readFile(t, path)
		for n := 0; n < len(data); n++ {
			if n >= 300 && n < len(data)-300 && n%29 != 0 {
				continue
			}
			if _, err := Check(data[:n], f); !errors.Is(err, ErrFormat) {
				t.Fatalf("%s cut to %d of %d bytes: %v, want ErrFormat", path, n, len(data), err)
			}
		}
	}
}

func TestCleanMsg(t *testing.T) {
	for in, want := range map[string]string{
		"[11:01:51] ./src/tree/tree_model.cc:869: Check failed: x: y\nStack trace:\n  [bt] (0) lib": "Check failed: x: y",
		"./src/objective/objective.cc:26: Unknown objective function: `a`":                          "Unknown objective function: `a`",
		"plain message: with colon": "plain message: with colon",
		"":                          "",
	} {
		if got := cleanMsg(in); got != want {
			t.Errorf("cleanMsg(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSniff(t *testing.T) {
	for _, c := range []struct {
		data string
		want Format
	}{
		{"", Legacy},
		{"binf\x00\x00", Legacy},
		{`{"learner":{}}`, JSON},
		{"{ \n\"a\":1}", JSON},
		{"{L\x00\x00\x00\x00\x00\x00\x00\x01a", UBJSON},
		{"{}", 0},
		{"{1", 0},
		{"{", 0},
	} {
		if got := sniff([]byte(c.data)); got != c.want {
			t.Errorf("sniff(%q) = %v, want %v", c.data, got, c.want)
		}
	}
}

func TestCheckMessages(t *testing.T) {
	for _, c := range []struct {
		name string
		data string
		f    Format
		want string
	}{
		{"empty json", "", JSON, "empty"},
		{"legacy as json", "binf\x00\x00\x00\x00", JSON, `it starts with "binf"`},
		{"garbage as ubj", "hello world", UBJSON, `starts with "hello wo"`},
		{"brace as legacy", "{}", Legacy, "starts with '{'"},
		{"bs64", "bs64AAAA", Legacy, "base64"},
		{"short legacy", "binf\x00", Legacy, "need 136 bytes"},
		{"json not object", "[1,2]", JSON, "not XGBoost JSON"},
		{"json no learner", `{"version":[1,7,4]}`, JSON, `has no "learner"`},
		{"unknown format", "{}", Format(9), "unknown format"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Check([]byte(c.data), c.f)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check: %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// ubjString is UBJSON's 'L'-length string body.
func ubjString(s string) []byte {
	b := []byte{'L'}
	b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

func TestDecodeUBJ(t *testing.T) {
	key := string(ubjString("k"))
	for _, c := range []struct {
		name, data string
		want       any    // when ok
		err        string // when not
	}{
		{"int8", "i\xff", int64(-1), ""},
		{"uint8", "U\xff", int64(255), ""},
		{"int16", "I\x01\x00", int64(256), ""},
		{"int32", "l\xff\xff\xff\xfe", int64(-2), ""},
		{"int64", "L\x00\x00\x00\x00\x00\x00\x00\x05", int64(5), ""},
		{"float32", "d\x3f\x80\x00\x00", float64(1), ""},
		{"F is true", "F", true, ""}, // XGBoost 1.7's reading
		{"null", "Z", nil, ""},
		{"string", "S" + string(ubjString("ab")), "ab", ""},
		{"object", "{" + key + "i\x01}", map[string]any{"k": int64(1)}, ""},
		{"duplicate key keeps the first", "{" + key + "i\x01" + key + "i\x02}", map[string]any{"k": int64(1)}, ""},
		{"typed array", "[$l#L\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x02", []int32{1, 2}, ""},
		{"counted array", "[#L\x00\x00\x00\x00\x00\x00\x00\x01i\x07", []any{int64(7)}, ""},
		{"plain array", "[i\x01i\x02]", []any{int64(1), int64(2)}, ""},
		{"empty array", "[]", []any{}, ""},
		{"string past the end", "SL\x00\x00\x00\x00\x00\x00\x00\x09ab", nil, "runs past the end"},
		{"negative length", "SL\xff\xff\xff\xff\xff\xff\xff\xff", nil, "negative length"},
		{"huge typed array", "[$d#L\x10\x00\x00\x00\x00\x00\x00\x00", nil, "runs past the end"},
		{"typed array of a bad type", "[$S#L\x00\x00\x00\x00\x00\x00\x00\x00", nil, "not supported"},
		{"counted array past the end", "[#L\x00\x00\x00\x00\x00\x00\x01\x00i\x01", nil, "runs past the end"},
		{"unterminated array", "[i\x01", nil, "unexpected end"},
		{"unterminated object", "{" + key + "i\x01", nil, "unexpected end"},
		{"key without L", "{i\x01}", nil, "expected 'L'"},
		{"float64", "D\x00\x00\x00\x00\x00\x00\x00\x00", nil, "float64"},
		{"high precision", "H", nil, "high-precision"},
		{"unknown marker", "?", nil, "unknown marker"},
		{"short int32", "l\x00\x00", nil, "needs 4 bytes"},
		{"empty", "", nil, "empty"},
		{"deep", strings.Repeat("[", maxDepth+1), nil, "nested more than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := decodeUBJ([]byte(c.data))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("decodeUBJ: %v, %v; want an error containing %q", got, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalDoc(got, c.want) {
				t.Fatalf("decodeUBJ = %#v, want %#v", got, c.want)
			}
		})
	}
}

func TestDecodeJSON(t *testing.T) {
	for _, c := range []struct {
		name, data string
		want       any
		err        string
	}{
		{"ints", "[1,-2, 3]", []int64{1, -2, 3}, ""},
		{"floats", "[1,2.5,-1e3]", []float64{1, 2.5, -1000}, ""},
		{"nan and infinity", "[NaN,Infinity,-Infinity]", []float64{math.NaN(), math.Inf(1), math.Inf(-1)}, ""},
		{"mixed", `[1,"a"]`, []any{int64(1), "a"}, ""},
		{"object", ` {"a" : {"b":[]} , "c":true,"d":null}`, map[string]any{"a": map[string]any{"b": []any{}}, "c": true, "d": nil}, ""},
		{"duplicate key keeps the last", `{"a":1,"a":2}`, map[string]any{"a": int64(2)}, ""},
		{"escapes", `"a\"\\\n\t\r\u00e9"`, "a\"\\\n\t\r\\u00e9", ""},
		{"trailing data ignored", `{"a":1} garbage`, map[string]any{"a": int64(1)}, ""},
		{"unknown escape", `"\b"`, nil, "not supported"},
		{"line break in string", "\"a\nb\"", nil, "line break"},
		{"unterminated string", `"abc`, nil, "unexpected end"},
		{"unterminated object", `{"a":1`, nil, "unexpected end"},
		{"missing colon", `{"a" 1}`, nil, "expected ':'"},
		{"bad number", `[-]`, nil, "expected a digit"},
		{"huge integer", `[99999999999999999999]`, nil, "does not fit"},
		{"bad word", `[tru]`, nil, "true"},
		{"empty", "  ", nil, "empty"},
		{"deep", strings.Repeat(`{"a":`, maxDepth+1), nil, "nested more than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := decodeJSON([]byte(c.data))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("decodeJSON: %v, %v; want an error containing %q", got, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalDoc(got, c.want) {
				t.Fatalf("decodeJSON = %#v, want %#v", got, c.want)
			}
		})
	}
}

// equalDoc compares decoded documents, NaN equal to NaN.
func equalDoc(a, b any) bool {
	switch x := a.(type) {
	case []float64:
		y, ok := b.([]float64)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] && !(math.IsNaN(x[i]) && math.IsNaN(y[i])) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !equalDoc(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalDoc(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb) && typeName(a) == typeName(b)
}

func typeName(v any) string {
	switch v.(type) {
	case []int32:
		return "i32"
	case []int64:
		return "i64"
	case []uint8:
		return "u8"
	case []float32:
		return "f32"
	}
	return "other"
}

// legacyModel is the legacy binary test model, for mutation.
func legacyModel(tb testing.TB) []byte {
	return readFile(tb, filepath.Join(testdata, "regression.model"))
}

func TestCheckLegacy(t *testing.T) {
	good := legacyModel(t)
	// Offsets in the file: "binf", the learner's parameters, then the
	// objective and booster names.
	const mparam = 4
	objLen := int(binary.LittleEndian.Uint64(good[mparam+136:]))
	booster := mparam + 136 + 8 + objLen
	gparam := booster + 8 + int(binary.LittleEndian.Uint64(good[booster:]))
	tree0 := gparam + 160
	for _, c := range []struct {
		name   string
		mutate func(b []byte) []byte
		want   string
	}{
		{"huge objective name", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[mparam+136:], 1<<62)
			return b
		}, "the objective's name"},
		{"negative tree count", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[gparam:], 0xffffffff)
			return b
		}, "negative tree count"},
		{"huge node count", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[tree0+4:], 0x7fffffff)
			return b
		}, "tree 0's 2147483647 nodes"},
		{"no nodes", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[tree0+4:], 0)
			return b
		}, "tree 0 has 0 nodes"},
		{"gblinear", func(b []byte) []byte {
			copy(b[booster+8:], "gblinear")
			binary.LittleEndian.PutUint64(b[booster:], 8)
			return b[:booster+16]
		}, "gblinear"},
		{"unknown booster", func(b []byte) []byte {
			copy(b[booster+8:], "gbfast")
			return b
		}, `unknown booster "gbfast"`},
		{"huge attribute count", func(b []byte) []byte {
			// The attributes come last: find their count by walking
			// the good file.
			r := legacyReader{data: b, pos: tree0}
			for range binary.LittleEndian.Uint32(b[gparam:]) {
				tp, _ := r.bytes(legacyTreeParamSize, "")
				r.bytes(int64(binary.LittleEndian.Uint32(tp[4:]))*36, "")
			}
			r.bytes(int64(binary.LittleEndian.Uint32(b[gparam:]))*4, "")
			binary.LittleEndian.PutUint64(b[r.pos:], 1<<40)
			return b
		}, "the attributes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkLegacy(c.mutate(bytes.Clone(good)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("checkLegacy: %v, want an error containing %q", err, c.want)
			}
		})
	}
	if err := checkLegacy(append(bytes.Clone(good), "trailing metrics"...)); err != nil {
		t.Errorf("trailing bytes: %v, want nil (XGBoost ignores them)", err)
	}
	if _, err := Check(legacyModel(t), Legacy); err != nil {
		t.Fatal(err)
	}
	if _, err := Check(func() []byte {
		b := bytes.Clone(good)
		copy(b[booster+8:], "gblinear")
		binary.LittleEndian.PutUint64(b[booster:], 8)
		return b[:booster+16]
	}(), Legacy); !errors.Is(err, errors.ErrUnsupported) || errors.Is(err, ErrFormat) {
		t.Errorf("gblinear: %v, want ErrUnsupported and not ErrFormat", err)
	}
}

// jsonModel decodes a JSON test model for mutation (with our decoder:
// the categorical model has NaN split conditions).
func jsonModel(tb testing.TB, name string) map[string]any {
	tb.Helper()
	doc, err := decodeJSON(readFile(tb, filepath.Join(testdata, name+".json")))
	if err != nil {
		tb.Fatal(err)
	}
	return doc.(map[string]any)
}

// path walks a decoded document along keys (string) and indices (int).
func path(doc any, steps ...any) any {
	for _, s := range steps {
		switch k := s.(type) {
		case string:
			doc = doc.(map[string]any)[k]
		case int:
			doc = doc.([]any)[k]
		}
	}
	return doc
}

func firstTree(doc map[string]any) map[string]any {
	return path(doc, "learner", "gradient_booster", "model", "trees", 0).(map[string]any)
}

// TestCheckLoadTrees mutates decoded models where XGBoost's loader indexes
// without checking; checkLoad must refuse each.
func TestCheckLoadTrees(t *testing.T) {
	for _, c := range []struct {
		name, model string
		mutate      func(doc map[string]any)
		want        string
	}{
		{"parent out of range", "regression", func(doc map[string]any) {
			firstTree(doc)["parents"].([]int64)[3] = 1000
		}, "parents[3] is 1000"},
		{"negative parent", "regression", func(doc map[string]any) {
			firstTree(doc)["parents"].([]int64)[1] = -1
		}, "parents[1] is -1"},
		{"short parents", "regression", func(doc map[string]any) {
			tr := firstTree(doc)
			tr["parents"] = tr["parents"].([]int64)[:2]
		}, "parents has 2 entries"},
		{"duplicate tree id", "regression", func(doc map[string]any) {
			path(doc, "learner", "gradient_booster", "model", "trees", 1).(map[string]any)["id"] = int64(0)
		}, "tree ids must be 0 to 7, each once"},
		{"num_trees disagrees", "regression", func(doc map[string]any) {
			path(doc, "learner", "gradient_booster", "model", "gbtree_model_param").(map[string]any)["num_trees"] = "9"
		}, "num_trees is 9, but there are 8 trees"},
		{"short tree_info", "regression", func(doc map[string]any) {
			m := path(doc, "learner", "gradient_booster", "model").(map[string]any)
			m["tree_info"] = m["tree_info"].([]int64)[:3]
		}, "tree_info has 3 entries for 8 trees"},
		{"gblinear", "regression", func(doc map[string]any) {
			path(doc, "learner", "gradient_booster").(map[string]any)["name"] = "gblinear"
		}, "gblinear"},
		{"negative category", "categorical", func(doc map[string]any) {
			firstTree(doc)["categories"].([]int64)[0] = -3
		}, "category -3"},
		{"category segment past the end", "categorical", func(doc map[string]any) {
			firstTree(doc)["categories_sizes"].([]int64)[0] = 100
		}, "outside the"},
		{"categorical node without categories", "categorical", func(doc map[string]any) {
			firstTree(doc)["categories_nodes"].([]int64)[1] = -16777211
		}, "categories_nodes must be increasing"},
		{"categorical split not listed", "categorical", func(doc map[string]any) {
			tr := firstTree(doc)
			tr["split_type"].([]int64)[1] = 1
		}, "node 1 is a categorical split without categories"},
		{"short split_type", "categorical", func(doc map[string]any) {
			tr := firstTree(doc)
			tr["split_type"] = tr["split_type"].([]int64)[:1]
		}, "split_type has 1 entries"},
		{"num_nodes not a number", "regression", func(doc map[string]any) {
			firstTree(doc)["tree_param"].(map[string]any)["num_nodes"] = "x"
		}, `num_nodes is "x"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := jsonModel(t, c.model)
			if err := checkLoad(doc); err != nil {
				t.Fatalf("unmutated: %v", err)
			}
			c.mutate(doc)
			err := checkLoad(doc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("checkLoad: %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestInspectTrees mutates decoded models where prediction indexes
// without checking; inspect must refuse each.
func TestInspectTrees(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(doc map[string]any)
		want   string
	}{
		{"left child out of range", func(doc map[string]any) {
			firstTree(doc)["left_children"].([]int64)[0] = 9999
		}, "node 0's children 9999"},
		{"left child is the last node", func(doc map[string]any) {
			tr := firstTree(doc)
			n := int64(len(tr["left_children"].([]int64)))
			tr["left_children"].([]int64)[0] = n - 1
		}, "not within the tree"},
		{"right child out of range", func(doc map[string]any) {
			firstTree(doc)["right_children"].([]int64)[0] = -5
		}, "node 0's children"},
		{"cycle", func(doc map[string]any) {
			tr := firstTree(doc)
			left := tr["left_children"].([]int64)
			// Node 1's left child becomes node 1 itself... which the
			// range check allows (1 ≥ 1), and the walk must catch.
			left[1] = 1
		}, "leads back to node 1"},
		{"split feature out of range", func(doc map[string]any) {
			firstTree(doc)["split_indices"].([]int64)[0] = 6
		}, "splits on feature 6, of 6"},
		{"group out of range", func(doc map[string]any) {
			path(doc, "learner", "gradient_booster", "model", "tree_info").([]int64)[2] = 1
		}, "tree 2 is in output group 1, of 1"},
		{"multi-target", func(doc map[string]any) {
			path(doc, "learner", "learner_model_param").(map[string]any)["num_target"] = "2"
		}, "multi-target"},
		{"no features", func(doc map[string]any) {
			path(doc, "learner", "learner_model_param").(map[string]any)["num_feature"] = "0"
		}, "0 features"},
		{"too many features", func(doc map[string]any) {
			path(doc, "learner", "learner_model_param").(map[string]any)["num_feature"] = "2000000000"
		}, "2000000000 features"},
		{"more classes than trees", func(doc map[string]any) {
			path(doc, "learner", "learner_model_param").(map[string]any)["num_class"] = "9"
		}, "9 classes but 8 trees"},
		{"negative classes", func(doc map[string]any) {
			path(doc, "learner", "learner_model_param").(map[string]any)["num_class"] = "-2"
		}, "-2 classes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := jsonModel(t, "regression")
			info, err := inspect(doc)
			if err != nil {
				t.Fatalf("unmutated: %v", err)
			}
			if info.Features != 6 || info.Groups != 1 || info.Trees != 8 || info.MaxDepth != 4 || info.Booster != "gbtree" {
				t.Fatalf("unmutated: %+v", info)
			}
			c.mutate(doc)
			_, err = inspect(doc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("inspect: %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestInspectInfo(t *testing.T) {
	for _, c := range []struct {
		model string
		want  Info
	}{
		{"softprob", Info{Features: 6, Classes: 3, Groups: 3, Objective: "multi:softprob", Booster: "gbtree", Trees: 18, MaxDepth: 3}},
		{"dart", Info{Features: 6, Groups: 1, Objective: "reg:squarederror", Booster: "dart", Trees: 6, MaxDepth: 3}},
		{"categorical", Info{Features: 6, Groups: 1, Objective: "reg:squarederror", Booster: "gbtree", Trees: 6, MaxDepth: 3, Categorical: true}},
	} {
		t.Run(c.model, func(t *testing.T) {
			got, err := inspect(jsonModel(t, c.model))
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("inspect = %+v, want %+v", got, c.want)
			}
		})
	}
}

// FuzzCheck feeds Check anything: it must not panic, and what it accepts
// must decode again (for JSON and UBJSON) to a document with trees.
func FuzzCheck(f *testing.F) {
	for path, format := range modelFiles(f) {
		data := readFile(f, path)
		f.Add(data, uint8(format))
		f.Add(data[:len(data)/2], uint8(format))
	}
	f.Fuzz(func(t *testing.T, data []byte, format uint8) {
		fm := Format(format%3 + 1)
		out, err := Check(data, fm)
		if err != nil {
			return
		}
		if fm == Legacy {
			return
		}
		var doc any
		if fm == JSON {
			doc, err = decodeJSON(out)
		} else {
			doc, err = decodeUBJ(out)
		}
		if err != nil {
			t.Fatalf("accepted, then not decoded: %v", err)
		}
		if _, err := readForest(doc); err != nil {
			t.Fatalf("accepted without trees: %v", err)
		}
	})
}
