package main

import (
	"cmp"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/triton-go/triton/internal/helmtest"
	"github.com/triton-go/triton/internal/testenv"
)

// parseDeployed parses args as the server does when a manifest starts
// it, failing t on an error or a flag that has no effect here.
func parseDeployed(t *testing.T, args []string) config {
	t.Helper()
	c, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatalf("args %q: %v", args, err)
	}
	if len(c.warnings) != 0 {
		t.Errorf("args %q: flags with no effect here: %v", args, c.warnings)
	}
	return c
}

// TestChartArgs renders deploy/helm/triton-go with its defaults and with
// each values file of deploy/helm/values, and parses the server
// container's arguments with the server's own parser: they must parse,
// without warnings, to the repository, model control and models the
// values name, --exit-on-error=false, the drain and exit timeout that
// terminationGracePeriodSeconds covers, and the ports the probes and the
// Service use.
func TestChartArgs(t *testing.T) {
	t.Parallel()
	root := testenv.RepoRoot(t)
	chart := filepath.Join(root, "deploy", "helm", "triton-go")
	type chartCase struct {
		values string // under deploy/helm/values; "" for the chart's defaults
		repo   string
		load   []string
	}
	cases := []chartCase{
		{"", "/models", []string{"*"}},
		{"many-models-pvc.yaml", "/models", []string{"*"}},
		{"per-model-object-storage.yaml", "s3://models-bucket/repository", []string{"resnet50"}},
		{"grouped-baked.yaml", "/models", []string{"text_classifier", "language_id", "tokenizer"}},
	}
	files, _ := filepath.Glob(filepath.Join(chart, "..", "values", "*.yaml"))
	for _, f := range files {
		if !slices.ContainsFunc(cases, func(c chartCase) bool { return c.values == filepath.Base(f) }) {
			t.Errorf("deploy/helm/values/%s has no case here", filepath.Base(f))
		}
	}
	for _, tc := range cases {
		t.Run(cmp.Or(tc.values, "defaults"), func(t *testing.T) {
			t.Parallel()
			var values []string
			if tc.values != "" {
				values = append(values, filepath.Join(chart, "..", "values", tc.values))
			}
			var d appsv1.Deployment
			helmtest.Decode(t, helmtest.Template(t, chart, values...).Only(t, "Deployment"), &d)
			spec := d.Spec.Template.Spec
			for _, ctr := range spec.Containers {
				c := parseDeployed(t, ctr.Args)
				if !slices.Equal(c.repositories, []string{tc.repo}) || c.controlMode != "explicit" || !slices.Equal(c.loadModels, tc.load) {
					t.Errorf("repositories %q, mode %s, models %q; want %s, explicit, %q", c.repositories, c.controlMode, c.loadModels, tc.repo, tc.load)
				}
				if c.exitOnError {
					t.Error("--exit-on-error is true: a model that fails to load would take the pod down")
				}
				grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
				if c.exitDrain != 5*time.Second || c.exitTimeout != 30*time.Second || grace < c.exitDrain+c.exitTimeout {
					t.Errorf("drain %v, exit timeout %v, grace period %v: want 5s and 30s within the grace period", c.exitDrain, c.exitTimeout, grace)
				}
				ports := map[string]int{}
				for _, p := range ctr.Ports {
					ports[p.Name] = int(p.ContainerPort)
				}
				if !c.allowHTTP || !c.allowGRPC || !c.allowMetrics || ports["http"] != c.httpPort || ports["grpc"] != c.grpcPort || ports["metrics"] != c.metricsPort {
					t.Errorf("the server listens on %d, %d, %d; the container declares %v", c.httpPort, c.grpcPort, c.metricsPort, ports)
				}
			}
		})
	}
}

// TestKServeArgs parses the arguments KServe gives the server: the
// runtime's (deploy/kserve's ServingRuntime and ClusterServingRuntime,
// starting with "tritonserver" as KServe's Triton runtime writes them),
// followed by each InferenceService's, as KServe appends them. They must
// parse to the storage initializer's /mnt/models, the ports KServe routes
// to, and exit windows within the pod's grace period.
func TestKServeArgs(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join(testenv.RepoRoot(t), "deploy", "kserve", "*.yaml"))
	// Only the fields read here; deploy's tests decode these files strictly.
	type manifest struct {
		Kind string `json:"kind"`
		Spec struct {
			Containers []struct {
				Args []string `json:"args"`
			} `json:"containers"`
			Predictor struct {
				TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds"`
				Model                         struct {
					Args []string `json:"args"`
				} `json:"model"`
			} `json:"predictor"`
		} `json:"spec"`
	}
	var runtimes, services []manifest
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var m manifest
		if err := yaml.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		switch m.Kind {
		case "ServingRuntime", "ClusterServingRuntime":
			runtimes = append(runtimes, m)
		case "InferenceService":
			services = append(services, m)
		}
	}
	if len(runtimes) != 2 || len(services) == 0 {
		t.Fatalf("%d runtimes and %d InferenceServices in deploy/kserve", len(runtimes), len(services))
	}
	for _, rt := range runtimes {
		for _, isvc := range append([]manifest{{}}, services...) {
			args := slices.Concat(rt.Spec.Containers[0].Args, isvc.Spec.Predictor.Model.Args)
			c := parseDeployed(t, args)
			if !slices.Equal(c.repositories, []string{"/mnt/models"}) || c.httpPort != 8080 || c.grpcPort != 9000 ||
				c.metricsPort != 8002 || !c.allowHTTP || !c.allowGRPC {
				t.Errorf("args %q: repositories %q, ports %d/%d/%d; want /mnt/models, HTTP 8080, gRPC 9000, metrics 8002", args,
					c.repositories, c.httpPort, c.grpcPort, c.metricsPort)
			}
			grace := 30 * time.Second
			if g := isvc.Spec.Predictor.TerminationGracePeriodSeconds; g != nil {
				grace = time.Duration(*g) * time.Second
			}
			if c.exitDrain+c.exitTimeout >= grace {
				t.Errorf("args %q: drain %v + exit timeout %v do not fit the grace period %v", args, c.exitDrain, c.exitTimeout, grace)
			}
			if len(isvc.Spec.Predictor.Model.Args) > 0 && (c.controlMode != "explicit" || len(c.loadModels) == 0) {
				t.Errorf("args %q: model control %s, models %q; the repository example loads its models explicitly", args, c.controlMode, c.loadModels)
			}
		}
	}
}
