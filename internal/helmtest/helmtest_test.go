package helmtest_test

import (
	"strings"
	"testing"

	"github.com/triton-go/triton/internal/helmtest"
)

func TestSplit(t *testing.T) {
	docs, err := helmtest.Split([]byte(`---
# Source: c/templates/a.yaml
apiVersion: v1
kind: Service
metadata:
  name: a
---
# Source: c/templates/empty.yaml
# nothing rendered
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: b
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].String() != "v1 Service/a (c/templates/a.yaml)" || docs[1].String() != "apps/v1 Deployment/b (document)" {
		t.Fatalf("%v", docs)
	}
	if d := docs.Kind("Deployment"); len(d) != 1 || d[0].Name != "b" {
		t.Errorf("Kind(Deployment) = %v", d)
	}
	if _, err := helmtest.Split([]byte("metadata:\n  name: x\n")); err == nil {
		t.Error("a manifest without apiVersion and kind split without an error")
	}
}

func TestDecodeStrict(t *testing.T) {
	type spec struct {
		RunAsUser *int64 `json:"runAsUser,omitempty"`
		Name      string `json:"name"`
	}
	var ok spec
	if err := helmtest.DecodeStrict([]byte("name: x\nrunAsUser: 1000\n"), &ok); err != nil || ok.Name != "x" || *ok.RunAsUser != 1000 {
		t.Fatalf("%+v %v", ok, err)
	}
	for name, tc := range map[string]struct{ yaml, want string }{
		"unknown field":   {"name: x\nrunAsGroup: 0\n", `unknown field "runAsGroup"`},
		"case mismatch":   {"name: x\nRunAsUser: 1000\n", `unknown field "RunAsUser"`},
		"duplicate key":   {"name: x\nname: y\n", `key "name" already set`},
		"wrong type":      {"name: x\nrunAsUser: \"1000\"\n", "cannot unmarshal string"},
		"yaml 1.1 on/off": {"name: on\n", "cannot unmarshal bool"},
	} {
		t.Run(name, func(t *testing.T) {
			var v spec
			err := helmtest.DecodeStrict([]byte(tc.yaml), &v)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%q: %v, want an error with %q", tc.yaml, err, tc.want)
			}
		})
	}
}
