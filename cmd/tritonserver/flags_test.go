package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{
		"--model-repository=/a", "--model-store", "/b", "--model-control-mode=explicit", "--load-model=m1", "--load-model", "m2",
		"--exit-timeout-secs=5", "--http-port=9000", "--allow-grpc=false", "--metrics-config=summary_latencies=true",
		"--http-restricted-api=model-repository,statistics:admin-key=secret", "--backend-config=onnxruntime,default-max-batch-size=8",
		"--backend-config=default-max-batch-size=2", "--rate-limit=execution_count", "--rate-limit-resource=R1:4:0", "--log-format=ISO8601",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.repositories, ",") != "/a,/b" || c.controlMode != "explicit" || strings.Join(c.loadModels, ",") != "m1,m2" ||
		c.exitTimeout != 5*time.Second || c.httpPort != 9000 || c.allowGRPC || !c.allowHTTP || c.metricsPort != 8002 ||
		c.metricsConfig["summary_latencies"] != "true" || c.rateLimit != "execution_count" || c.logFormat != "ISO8601" {
		t.Errorf("parsed %+v", c)
	}
	if len(c.restrictedAPIs) != 1 || strings.Join(c.restrictedAPIs[0].categories, ",") != "model-repository,statistics" ||
		c.restrictedAPIs[0].key != "admin-key" || c.restrictedAPIs[0].value != "secret" {
		t.Errorf("restricted APIs %+v", c.restrictedAPIs)
	}
	if n, ok, err := c.backendInt("onnxruntime", "default-max-batch-size"); n != 8 || !ok || err != nil {
		t.Errorf("onnxruntime default-max-batch-size %d %v %v", n, ok, err)
	}
	if n, ok, _ := c.backendInt("other", "default-max-batch-size"); n != 2 || !ok {
		t.Errorf("global backend config %d %v", n, ok)
	}
	defaults, err := parseFlags([]string{"--model-repository=/m"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if defaults.httpPort != 8000 || defaults.grpcPort != 8001 || defaults.metricsPort != 8002 || !defaults.exitOnError ||
		!defaults.strictReadiness || defaults.strictModelConfig || defaults.exitTimeout != 30*time.Second || defaults.controlMode != "none" {
		t.Errorf("defaults %+v", defaults)
	}
}

func TestParseFlagErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"no repository":         {},
		"bad mode":              {"--model-repository=/m", "--model-control-mode=sometimes"},
		"load without explicit": {"--model-repository=/m", "--load-model=x"},
		"bad rate limit":        {"--model-repository=/m", "--rate-limit=always"},
		"bad metrics config":    {"--model-repository=/m", "--metrics-config=summary_latencies"},
		"bad backend config":    {"--model-repository=/m", "--backend-config=onnxruntime"},
		"bad restricted api":    {"--model-repository=/m", "--http-restricted-api=admin"},
		"bad log format":        {"--model-repository=/m", "--log-format=json"},
		"unknown flag":          {"--model-repository=/m", "--no-such-flag"},
		"stray argument":        {"--model-repository=/m", "extra"},
		"poll without interval": {"--model-repository=/m", "--model-control-mode=poll", "--repository-poll-secs=0"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := parseFlags(args, io.Discard); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestParseQuantiles(t *testing.T) {
	q, err := parseQuantiles("0.5:0.05,0.99:0.001")
	if err != nil || q[0.5] != 0.05 || q[0.99] != 0.001 || len(q) != 2 {
		t.Fatalf("%v %v", q, err)
	}
	for _, bad := range []string{"0.5", "1.5:0.1", "x:0.1", "0.5:-1"} {
		if _, err := parseQuantiles(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
