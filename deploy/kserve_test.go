package deploy_test

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/triton-go/triton/internal/helmtest"
)

// The KServe types below mirror github.com/kserve/kserve's API (v0.20,
// pkg/apis/serving/v1alpha1/servingruntime_types.go and
// pkg/apis/serving/v1beta1/{inference_service,predictor,predictor_model,
// component}.go) with KServe's JSON field names, so that deploy/kserve's
// files decode as strictly as the Kubernetes ones do; KServe's module is
// not on the Go module proxy these tests build from. Containers, volumes
// and pod fields are k8s.io/api's, as in KServe (its v1beta1.PodSpec is a
// field-for-field copy of corev1.PodSpec). Fields whose types are not
// mirrored (workerSpec, the predictor's framework shorthands such as
// triton:, explainer, transformer, canary, logger, batcher, autoScaling,
// storage, confidential) are left out on purpose: a file that uses one
// fails to decode rather than passing unchecked.

// servingRuntime is v1alpha1.ServingRuntime and ClusterServingRuntime.
type servingRuntime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              servingRuntimeSpec `json:"spec,omitempty"`
	Status            struct{}           `json:"status,omitempty"`
}

// servingRuntimeSpec is v1alpha1.ServingRuntimeSpec, less workerSpec.
type servingRuntimeSpec struct {
	SupportedModelFormats []supportedModelFormat `json:"supportedModelFormats,omitempty"`
	MultiModel            *bool                  `json:"multiModel,omitempty"`
	Disabled              *bool                  `json:"disabled,omitempty"`
	ProtocolVersions      []string               `json:"protocolVersions,omitempty"`
	servingRuntimePodSpec `json:",inline"`
	GRPCEndpoint          *string `json:"grpcEndpoint,omitempty"`
	GRPCDataEndpoint      *string `json:"grpcDataEndpoint,omitempty"`
	HTTPDataEndpoint      *string `json:"httpDataEndpoint,omitempty"`
	Replicas              *uint16 `json:"replicas,omitempty"`
	StorageHelper         *struct {
		Disabled bool `json:"disabled,omitempty"`
	} `json:"storageHelper,omitempty"`
	BuiltInAdapter *struct {
		ServerType                string          `json:"serverType,omitempty"`
		RuntimeManagementPort     int             `json:"runtimeManagementPort,omitempty"`
		MemBufferBytes            int             `json:"memBufferBytes,omitempty"`
		ModelLoadingTimeoutMillis int             `json:"modelLoadingTimeoutMillis,omitempty"`
		Env                       []corev1.EnvVar `json:"env,omitempty"`
	} `json:"builtInAdapter,omitempty"`
}

// servingRuntimePodSpec is v1alpha1.ServingRuntimePodSpec.
type servingRuntimePodSpec struct {
	Containers       []corev1.Container            `json:"containers"`
	Volumes          []corev1.Volume               `json:"volumes,omitempty"`
	NodeSelector     map[string]string             `json:"nodeSelector,omitempty"`
	Affinity         *corev1.Affinity              `json:"affinity,omitempty"`
	Tolerations      []corev1.Toleration           `json:"tolerations,omitempty"`
	Labels           map[string]string             `json:"labels,omitempty"`
	Annotations      map[string]string             `json:"annotations,omitempty"`
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	HostIPC          bool                          `json:"hostIPC,omitempty"`
	SchedulerName    string                        `json:"schedulerName,omitempty"`
	ResourceClaims   []corev1.PodResourceClaim     `json:"resourceClaims,omitempty"`
}

// supportedModelFormat is v1alpha1.SupportedModelFormat.
type supportedModelFormat struct {
	Name       string  `json:"name"`
	Version    *string `json:"version,omitempty"`
	AutoSelect *bool   `json:"autoSelect,omitempty"`
	Priority   *int32  `json:"priority,omitempty"`
}

// inferenceService is v1beta1.InferenceService; its spec has only the
// predictor.
type inferenceService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Predictor predictorSpec `json:"predictor"`
	} `json:"spec,omitempty"`
}

// predictorSpec is v1beta1.PredictorSpec with the model spec, the pod
// spec and the component extension's scalar fields.
type predictorSpec struct {
	Name        string     `json:"name,omitempty"`
	Model       *modelSpec `json:"model,omitempty"`
	StorageURIs []struct {
		URI       string `json:"uri"`
		MountPath string `json:"mountPath"`
	} `json:"storageUris,omitempty"`
	StorageContainerName   *string `json:"storageContainerName,omitempty"`
	corev1.PodSpec         `json:",inline"`
	componentExtensionSpec `json:",inline"`
}

// componentExtensionSpec is v1beta1.ComponentExtensionSpec less logger,
// batcher and autoScaling.
type componentExtensionSpec struct {
	MinReplicas          *int32                     `json:"minReplicas,omitempty"`
	MaxReplicas          int32                      `json:"maxReplicas,omitempty"`
	ScaleTarget          *int32                     `json:"scaleTarget,omitempty"`
	ScaleMetric          *string                    `json:"scaleMetric,omitempty"`
	ScaleMetricType      *string                    `json:"scaleMetricType,omitempty"`
	ContainerConcurrency *int64                     `json:"containerConcurrency,omitempty"`
	TimeoutSeconds       *int64                     `json:"timeout,omitempty"`
	CanaryTrafficPercent *int64                     `json:"canaryTrafficPercent,omitempty"`
	Labels               map[string]string          `json:"labels,omitempty"`
	Annotations          map[string]string          `json:"annotations,omitempty"`
	DeploymentStrategy   *appsv1.DeploymentStrategy `json:"deploymentStrategy,omitempty"`
}

// modelSpec is v1beta1.ModelSpec: the format, the runtime and the inline
// PredictorExtensionSpec (storageUri, runtimeVersion, protocolVersion and
// an inline corev1.Container).
type modelSpec struct {
	ModelFormat struct {
		Name    string  `json:"name"`
		Version *string `json:"version,omitempty"`
	} `json:"modelFormat"`
	Runtime          *string `json:"runtime,omitempty"`
	StorageURI       *string `json:"storageUri,omitempty"`
	RuntimeVersion   *string `json:"runtimeVersion,omitempty"`
	ProtocolVersion  *string `json:"protocolVersion,omitempty"`
	corev1.Container `json:",inline"`
}

// kserveTritonFormats are the formats of KServe's own kserve-tritonserver
// runtime (config/runtimes/kserve-tritonserver.yaml): version, and
// autoSelect with priority 1 or neither. Ours must select the formats it
// shares with it the same way.
var kserveTritonFormats = map[string]struct {
	version    string
	autoSelect bool
}{
	"onnx":    {"1", true},
	"pytorch": {"1", false},
	"triton":  {"2", true},
}

// kserveFiles decodes every file of kserve/ strictly, by kind.
func kserveFiles(t *testing.T) (runtimes []servingRuntime, services map[string]inferenceService) {
	t.Helper()
	files, _ := filepath.Glob("kserve/*.yaml")
	services = map[string]inferenceService{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := helmtest.Split(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, d := range docs {
			d.Source = f
			switch d.APIVersion + " " + d.Kind {
			case "serving.kserve.io/v1alpha1 ServingRuntime", "serving.kserve.io/v1alpha1 ClusterServingRuntime":
				runtimes = append(runtimes, decode[servingRuntime](t, d))
			case "serving.kserve.io/v1beta1 InferenceService":
				services[f] = decode[inferenceService](t, d)
			default:
				t.Errorf("%v: not a KServe resource this test knows", d)
			}
		}
	}
	return runtimes, services
}

// TestKServeRuntime: deploy/kserve's ClusterServingRuntime and
// ServingRuntime are one runtime (same name and spec) that selects
// models as KServe's own Triton runtime does, starts tritonserver with
// the arguments that runtime passes, probes the server's health, mounts
// /dev/shm in memory, runs unprivileged, and exits within the pod's
// default grace period.
func TestKServeRuntime(t *testing.T) {
	t.Parallel()
	runtimes, _ := kserveFiles(t)
	kinds := map[string]servingRuntime{}
	for _, r := range runtimes {
		kinds[r.Kind] = r
	}
	cluster, namespaced := kinds["ClusterServingRuntime"], kinds["ServingRuntime"]
	if len(runtimes) != 2 || cluster.Name == "" || namespaced.Name == "" {
		t.Fatalf("%d runtimes, want one ClusterServingRuntime and one ServingRuntime", len(runtimes))
	}
	if cluster.Name != namespaced.Name || !reflect.DeepEqual(cluster.Spec, namespaced.Spec) {
		t.Errorf("the ClusterServingRuntime (%s) and the ServingRuntime (%s) differ; they are one runtime at two scopes", cluster.Name, namespaced.Name)
	}
	spec := cluster.Spec

	formats := map[string]supportedModelFormat{}
	for _, f := range spec.SupportedModelFormats {
		formats[f.Name] = f
	}
	if names := slices.Sorted(maps.Keys(formats)); !slices.Equal(names, []string{"onnx", "python", "pytorch", "triton"}) {
		t.Errorf("formats %v, want onnx, python, pytorch, triton", names)
	}
	for name, want := range kserveTritonFormats {
		f := formats[name]
		if ptrValue(f.Version) != want.version || ptrValue(f.AutoSelect) != want.autoSelect ||
			(want.autoSelect && ptrValue(f.Priority) != 1) || (!want.autoSelect && f.Priority != nil) {
			t.Errorf("format %s: version %q autoSelect %v priority %v, want kserve-tritonserver's: version %q, autoSelect %v (priority 1 when selected)",
				name, ptrValue(f.Version), f.AutoSelect, f.Priority, want.version, want.autoSelect)
		}
	}
	if f := formats["python"]; f.AutoSelect != nil && *f.AutoSelect {
		t.Errorf("python is auto-selected; only an InferenceService that names the runtime should get it")
	}
	if !slices.Equal(spec.ProtocolVersions, []string{"v2", "grpc-v2"}) {
		t.Errorf("protocolVersions %v, want v2 and grpc-v2", spec.ProtocolVersions)
	}
	if spec.Annotations["prometheus.kserve.io/port"] != "8002" || spec.Annotations["prometheus.kserve.io/path"] != "/metrics" {
		t.Errorf("annotations %v, want prometheus.kserve.io/port 8002 and path /metrics (the server's metrics port)", spec.Annotations)
	}

	if len(spec.Containers) != 1 || spec.Containers[0].Name != "kserve-container" {
		t.Fatalf("containers %v, want kserve-container alone (InferenceServices merge into it by that name)", spec.Containers)
	}
	c := spec.Containers[0]
	want := []string{"tritonserver", "--model-store=/mnt/models", "--grpc-port=9000", "--http-port=8080", "--allow-grpc=true", "--allow-http=true"}
	if len(c.Args) < len(want) || !slices.Equal(c.Args[:len(want)], want) {
		t.Errorf("args %q, want kserve-tritonserver's %q first", c.Args, want)
	}
	if _, ok := flag(c.Args, "metrics-port"); ok {
		t.Errorf("args %q move the metrics port away from the annotation's 8002", c.Args)
	}
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		path := map[string]string{"readiness": "/v2/health/ready", "liveness": "/v2/health/live"}[name]
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.IntValue() != 8080 {
			t.Errorf("%s probe %s, want GET %s on the HTTP port 8080", name, jsonOf(p), path)
		}
	}
	sc := c.SecurityContext
	if sc == nil || ptrValue(sc.RunAsUser) != 1000 || !ptrValue(sc.RunAsNonRoot) || sc.AllowPrivilegeEscalation == nil ||
		*sc.AllowPrivilegeEscalation || ptrValue(sc.Privileged) || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("securityContext %s, want kserve-tritonserver's: user 1000, non-root, no escalation, unprivileged, all capabilities dropped", jsonOf(sc))
	}
	shm := ""
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/dev/shm" {
			shm = m.Name
		}
	}
	var memory bool
	for _, v := range spec.Volumes {
		memory = memory || v.Name == shm && v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory && v.EmptyDir.SizeLimit != nil
	}
	if !memory {
		t.Errorf("/dev/shm is not a memory emptyDir with a size limit: mounts %s, volumes %s", jsonOf(c.VolumeMounts), jsonOf(spec.Volumes))
	}
	if drain, timeout := seconds(t, c.Args, "exit-drain-secs", 5), seconds(t, c.Args, "exit-timeout-secs", 30); drain+timeout >= 30 {
		t.Errorf("drain %d s + exit timeout %d s: want less than the pod's default grace period of 30 s, which a runtime cannot change", drain, timeout)
	}
}

// TestKServeInferenceServices: each InferenceService example names a
// format and protocol the runtime supports, the runtime itself, and a
// storage URI the storage initializer takes; the gRPC one exposes the
// runtime's gRPC port as h2c; with the runtime's arguments before its
// own, each fits its exit windows in its grace period. Together they
// cover ONNX over HTTP, ONNX over gRPC and a triton-format repository.
func TestKServeInferenceServices(t *testing.T) {
	t.Parallel()
	runtimes, services := kserveFiles(t)
	if len(runtimes) == 0 {
		t.Fatal("no runtime")
	}
	rt := runtimes[0]
	runtimeArgs := rt.Spec.Containers[0].Args
	grpcPort, _ := flag(runtimeArgs, "grpc-port")
	covered := map[string]bool{}
	for file, isvc := range services {
		m := isvc.Spec.Predictor.Model
		if m == nil {
			t.Errorf("%s: no predictor.model", file)
			continue
		}
		if ptrValue(m.Runtime) != rt.Name {
			t.Errorf("%s: runtime %q, want %q (KServe's own Triton runtime auto-selects the same formats)", file, ptrValue(m.Runtime), rt.Name)
		}
		var format *supportedModelFormat
		for i, f := range rt.Spec.SupportedModelFormats {
			if f.Name == m.ModelFormat.Name {
				format = &rt.Spec.SupportedModelFormats[i]
			}
		}
		if format == nil || (m.ModelFormat.Version != nil && *m.ModelFormat.Version != ptrValue(format.Version)) {
			t.Errorf("%s: model format %s %v is not the runtime's (KServe matches the version string exactly)", file, m.ModelFormat.Name, ptrValue(m.ModelFormat.Version))
		}
		protocol := ptrValue(m.ProtocolVersion)
		if !slices.Contains(rt.Spec.ProtocolVersions, protocol) {
			t.Errorf("%s: protocolVersion %q, want one of the runtime's %v", file, protocol, rt.Spec.ProtocolVersions)
		}
		scheme, _, ok := strings.Cut(ptrValue(m.StorageURI), "://")
		if !ok || !slices.Contains([]string{"gs", "s3", "pvc", "https", "hf", "oci"}, scheme) {
			t.Errorf("%s: storageUri %q, want one the storage initializer takes", file, ptrValue(m.StorageURI))
		}
		grpc := slices.IndexFunc(m.Ports, func(p corev1.ContainerPort) bool {
			return strings.Contains(p.Name, "h2c") || strings.Contains(p.Name, "grpc")
		})
		if protocol == "grpc-v2" && (grpc != 0 || grpcPort != "9000" || m.Ports[0].ContainerPort != 9000) {
			t.Errorf("%s: gRPC with ports %s, want the first port named h2c on the runtime's --grpc-port %s (KServe's Service routes to the first port)", file, jsonOf(m.Ports), grpcPort)
		}
		if protocol != "grpc-v2" && len(m.Ports) != 0 {
			t.Errorf("%s: HTTP with ports %s, want none (KServe then routes to 8080)", file, jsonOf(m.Ports))
		}
		args := slices.Concat(runtimeArgs, m.Args)
		for _, a := range m.Args {
			if !strings.HasPrefix(a, "--") {
				t.Errorf("%s: arg %q: an InferenceService's args come after the runtime's, so each must be a --flag", file, a)
			}
		}
		grace := ptrValue(isvc.Spec.Predictor.TerminationGracePeriodSeconds)
		if grace == 0 {
			grace = 30
		}
		if drain, timeout := seconds(t, args, "exit-drain-secs", 5), seconds(t, args, "exit-timeout-secs", 30); drain+timeout >= grace {
			t.Errorf("%s: drain %d s + exit timeout %d s do not fit the grace period of %d s", file, drain, timeout, grace)
		}
		covered[m.ModelFormat.Name+" "+protocol] = true
	}
	for _, want := range []string{"onnx v2", "onnx grpc-v2", "triton v2"} {
		if !covered[want] {
			t.Errorf("no InferenceService example for %s (have %v)", want, slices.Sorted(maps.Keys(covered)))
		}
	}
}
