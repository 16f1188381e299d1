package tracetest

import (
	"encoding/json"
	"os"
	"testing"
)

// Trace is one id of a trace file.
type Trace struct {
	ID, Parent uint64
	// Model, Version and RequestID are the model record's (Version nil
	// when the record has none; Model "" when there is no model record).
	Model     string
	Version   *int64
	RequestID string
	// Names are the id's records in file order: "model" for the model
	// record, a stamp's name for each timestamp; Ns the stamps' ns, in the
	// same order (the model record has none).
	Names []string
	Ns    []int64
}

// Read parses the trace file at path, failing tb when it is not one: the
// traces in the order their ids first appear.
func Read(tb testing.TB, path string) []*Trace {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var recs []struct {
		ID         uint64  `json:"id"`
		ModelName  *string `json:"model_name"`
		Version    *int64  `json:"model_version"`
		RequestID  string  `json:"request_id"`
		ParentID   uint64  `json:"parent_id"`
		Timestamps []struct {
			Name string `json:"name"`
			Ns   int64  `json:"ns"`
		} `json:"timestamps"`
	}
	if err := json.Unmarshal(b, &recs); err != nil {
		tb.Fatalf("trace file %s is not a JSON array of records: %v\n%s", path, err, b)
	}
	var order []*Trace
	byID := map[uint64]*Trace{}
	for _, r := range recs {
		x := byID[r.ID]
		if x == nil {
			x = &Trace{ID: r.ID}
			byID[r.ID] = x
			order = append(order, x)
		}
		if r.ModelName != nil {
			x.Model, x.Version, x.RequestID, x.Parent = *r.ModelName, r.Version, r.RequestID, r.ParentID
			x.Names = append(x.Names, "model")
			continue
		}
		for _, s := range r.Timestamps {
			x.Names = append(x.Names, s.Name)
			x.Ns = append(x.Ns, s.Ns)
		}
	}
	return order
}
