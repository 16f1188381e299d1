package deploy_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/triton-go/triton/internal/helmtest"
)

const chart = "helm/triton-go"

// renderCase is one render of the chart: the values files given to helm
// after the chart's own values.yaml, relative to deploy/.
type renderCase struct {
	name  string
	files []string
}

// renderCases are the chart's defaults, every deployment shape of
// helm/values/, and the overlays of testdata/chart/ that turn on what the
// shapes leave off (all optional resources, KEDA, GCS key files).
func renderCases(t *testing.T) []renderCase {
	t.Helper()
	cases := []renderCase{{name: "defaults"}}
	shapes, _ := filepath.Glob("helm/values/*.yaml")
	overlays, _ := filepath.Glob("testdata/chart/*.yaml")
	if len(shapes) != 3 {
		t.Errorf("helm/values holds %d values files, want the three deployment shapes: %v", len(shapes), shapes)
	}
	for _, f := range slices.Concat(shapes, overlays) {
		cases = append(cases, renderCase{name: strings.TrimSuffix(filepath.Base(f), ".yaml"), files: []string{f}})
	}
	return cases
}

// rendered is one render, each manifest decoded strictly into its
// upstream Go type (KEDA's ScaledObject into a mirror, scaledObject).
type rendered struct {
	deployments []appsv1.Deployment
	services    []corev1.Service
	configMaps  []corev1.ConfigMap
	pdbs        []policyv1.PodDisruptionBudget
	hpas        []autoscalingv2.HorizontalPodAutoscaler
	podMonitors []monitoringv1.PodMonitor
	rules       []monitoringv1.PrometheusRule
	scaled      []scaledObject
}

func decodeAll(t *testing.T, docs helmtest.Docs) rendered {
	t.Helper()
	var r rendered
	for _, d := range docs {
		switch d.APIVersion + " " + d.Kind {
		case "apps/v1 Deployment":
			r.deployments = append(r.deployments, decode[appsv1.Deployment](t, d))
		case "v1 Service":
			r.services = append(r.services, decode[corev1.Service](t, d))
		case "v1 ConfigMap":
			r.configMaps = append(r.configMaps, decode[corev1.ConfigMap](t, d))
		case "policy/v1 PodDisruptionBudget":
			r.pdbs = append(r.pdbs, decode[policyv1.PodDisruptionBudget](t, d))
		case "autoscaling/v2 HorizontalPodAutoscaler":
			r.hpas = append(r.hpas, decode[autoscalingv2.HorizontalPodAutoscaler](t, d))
		case "monitoring.coreos.com/v1 PodMonitor":
			r.podMonitors = append(r.podMonitors, decode[monitoringv1.PodMonitor](t, d))
		case "monitoring.coreos.com/v1 PrometheusRule":
			r.rules = append(r.rules, decode[monitoringv1.PrometheusRule](t, d))
		case "keda.sh/v1alpha1 ScaledObject":
			r.scaled = append(r.scaled, decode[scaledObject](t, d))
		default:
			t.Errorf("%v: a kind the chart test does not know; add it to decodeAll", d)
		}
	}
	return r
}

func decode[T any](t *testing.T, d helmtest.Doc) T {
	t.Helper()
	var v T
	helmtest.Decode(t, d, &v)
	return v
}

// values are the chart's values.yaml with the files laid over it, as helm
// merges them (maps merge, everything else is replaced).
func values(t *testing.T, files []string) map[string]any {
	t.Helper()
	merged := map[string]any{}
	for _, f := range append([]string{filepath.Join(chart, "values.yaml")}, files...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		mergeValues(merged, m)
	}
	return merged
}

func mergeValues(dst, src map[string]any) {
	for k, v := range src {
		if sv, ok := v.(map[string]any); ok {
			if dv, ok := dst[k].(map[string]any); ok {
				mergeValues(dv, sv)
				continue
			}
		}
		dst[k] = v
	}
}

// value is the value at path, nil if absent.
func value(m map[string]any, path ...string) any {
	var v any = m
	for _, k := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

func number(t *testing.T, m map[string]any, path ...string) int64 {
	t.Helper()
	f, ok := value(m, path...).(float64)
	if !ok {
		t.Fatalf("values %s: %v is not a number", strings.Join(path, "."), value(m, path...))
	}
	return int64(f)
}

// flag is the value of the last --name=value of args, as tritonserver
// reads repeated flags, and whether there is one.
func flag(args []string, name string) (string, bool) {
	v, found := "", false
	for _, a := range args {
		if after, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			v, found = after, true
		}
	}
	return v, found
}

// seconds is the flag's value in seconds, or def when it is absent.
func seconds(t *testing.T, args []string, name string, def int64) int64 {
	t.Helper()
	v, ok := flag(args, name)
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("--%s=%s: %v", name, v, err)
	}
	return n
}

// TestChartLint runs helm lint --strict over the chart with its defaults
// and with each values file.
func TestChartLint(t *testing.T) {
	t.Parallel()
	for _, c := range renderCases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"lint", "--strict", chart}
			for _, f := range c.files {
				args = append(args, "--values", f)
			}
			if out, err := helmtest.Run(t, args...); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}

// TestChartRender renders the chart with its defaults and with each values
// file, decodes every manifest strictly into the Kubernetes and Prometheus
// Operator Go types, and checks what a deployment depends on: the
// server's arguments, the three probes and their ports, the startup
// window, /dev/shm and the other writable volumes, the security contexts,
// a grace period that covers the drain and the exit timeout, the Service
// ports, and each optional resource when it is on.
func TestChartRender(t *testing.T) {
	t.Parallel()
	adapterMetrics := adapterMetricNames(t)
	for _, c := range renderCases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			vals := values(t, c.files)
			r := decodeAll(t, helmtest.Template(t, chart, c.files...))
			if len(r.deployments) != 1 || len(r.services) != 1 {
				t.Fatalf("%d Deployments and %d Services, want one of each", len(r.deployments), len(r.services))
			}
			d := r.deployments[0]
			pod := d.Spec.Template
			checkDeployment(t, d, vals)
			checkService(t, r.services[0], pod.Labels)

			on := func(key string) bool { return value(vals, key, "enabled") == true }
			count := func(key string, n int) {
				t.Helper()
				if want := map[bool]int{true: 1, false: 0}[on(key)]; n != want {
					t.Errorf("%s.enabled is %v: %d manifests, want %d", key, on(key), n, want)
				}
			}
			count("podDisruptionBudget", len(r.pdbs))
			count("podMonitor", len(r.podMonitors))
			count("prometheusRule", len(r.rules))
			count("grafanaDashboard", len(r.configMaps))
			for _, p := range r.pdbs {
				if !subset(p.Spec.Selector.MatchLabels, pod.Labels) {
					t.Errorf("the PodDisruptionBudget selects %v, not the pods (%v)", p.Spec.Selector.MatchLabels, pod.Labels)
				}
			}
			for _, pm := range r.podMonitors {
				checkPodMonitor(t, pm, pod.Labels)
			}
			for _, pr := range r.rules {
				checkPrometheusRule(t, pr)
			}
			for _, cm := range r.configMaps {
				checkDashboard(t, cm, value(vals, "grafanaDashboard", "datasourceUid").(string))
			}

			autoscaling := on("autoscaling")
			engine := value(vals, "autoscaling", "engine")
			if autoscaling != (d.Spec.Replicas == nil) {
				t.Errorf("autoscaling %v, Deployment replicas %v: the Deployment must leave replicas to the autoscaler exactly when there is one", autoscaling, d.Spec.Replicas)
			}
			if n, want := len(r.hpas), autoscaling && engine == "hpa"; (n == 1) != want || n > 1 {
				t.Errorf("%d HPAs with autoscaling %v, engine %v", n, autoscaling, engine)
			}
			if n, want := len(r.scaled), autoscaling && engine == "keda"; (n == 1) != want || n > 1 {
				t.Errorf("%d ScaledObjects with autoscaling %v, engine %v", n, autoscaling, engine)
			}
			for _, h := range r.hpas {
				checkHPA(t, h, d.Name, adapterMetrics)
			}
			for _, s := range r.scaled {
				checkScaledObject(t, s, d.Name)
			}
		})
	}
}

func subset(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func checkDeployment(t *testing.T, d appsv1.Deployment, vals map[string]any) {
	spec := d.Spec.Template.Spec
	if !subset(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
		t.Errorf("the Deployment's selector %v does not select its pods (%v)", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}
	if s := d.Spec.Strategy.RollingUpdate; s == nil || s.MaxUnavailable == nil || s.MaxUnavailable.IntValue() != 0 {
		t.Errorf("rolling update %+v: want maxUnavailable 0, so that a new version that never gets ready leaves the old pods serving", s)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want the server alone", len(spec.Containers))
	}
	c := spec.Containers[0]

	// The arguments: the repository the values name, and the exit windows.
	source := value(vals, "modelRepository", "source")
	wantRepo := value(vals, "modelRepository", "path")
	if source == "objectStorage" {
		wantRepo = value(vals, "modelRepository", "objectStorage", "url")
	}
	if repo, _ := flag(c.Args, "model-repository"); repo != wantRepo {
		t.Errorf("--model-repository=%s, want %v (%v)", repo, wantRepo, source)
	}
	if v, _ := flag(c.Args, "exit-on-error"); v != "false" {
		t.Errorf("--exit-on-error=%s, want false: a model that fails to load must not take the server down", v)
	}
	drain := seconds(t, c.Args, "exit-drain-secs", 5)
	timeout := seconds(t, c.Args, "exit-timeout-secs", 30)
	if drain != number(t, vals, "server", "exitDrainSecs") || timeout != number(t, vals, "server", "exitTimeoutSecs") {
		t.Errorf("args %q: drain %d s, exit timeout %d s, want the values' %v and %v", c.Args, drain, timeout,
			value(vals, "server", "exitDrainSecs"), value(vals, "server", "exitTimeoutSecs"))
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g < drain+timeout {
		t.Errorf("terminationGracePeriodSeconds %d, want at least --exit-drain-secs + --exit-timeout-secs = %d", ptrValue(g), drain+timeout)
	} else if *g < drain+timeout+number(t, vals, "terminationGraceMarginSeconds") {
		t.Errorf("terminationGracePeriodSeconds %d leaves less than the margin after drain %d s and exit timeout %d s", *g, drain, timeout)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		t.Errorf("a preStop hook %+v: the server drains itself, and the hook's time would count against the grace period", c.Lifecycle.PreStop)
	}

	// Ports and probes.
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if want := map[string]int32{"http": 8000, "grpc": 8001, "metrics": 8002}; !maps.Equal(ports, want) {
		t.Errorf("container ports %v, want %v", ports, want)
	}
	probe := func(name string, p *corev1.Probe, path string) {
		t.Helper()
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s probe %+v, want an HTTP GET of %s", name, p, path)
			return
		}
		port := p.HTTPGet.Port
		if port.Type == intstr.String {
			port = intstr.FromInt32(ports[port.StrVal])
		}
		if p.HTTPGet.Path != path || port.IntValue() != 8000 {
			t.Errorf("%s probe GET %s on port %s, want %s on the HTTP port 8000", name, p.HTTPGet.Path, p.HTTPGet.Port.String(), path)
		}
	}
	probe("startup", c.StartupProbe, "/v2/health/ready")
	probe("readiness", c.ReadinessProbe, "/v2/health/ready")
	probe("liveness", c.LivenessProbe, "/v2/health/live")
	if p := c.StartupProbe; p != nil {
		window := int64(p.FailureThreshold) * int64(p.PeriodSeconds)
		if want := number(t, vals, "probes", "startupSeconds"); window < want || window >= want+int64(p.PeriodSeconds) {
			t.Errorf("startup window %d × %d s = %d s, want probes.startupSeconds (%d) rounded up to a period", p.FailureThreshold, p.PeriodSeconds, window, want)
		}
	}

	// Volumes: /dev/shm in memory with a size, and every place the server
	// writes an emptyDir, since the root file system is read-only.
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	mounts := map[string]corev1.Volume{}
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			t.Errorf("mount %s of a missing volume %s", m.MountPath, m.Name)
		}
		mounts[m.MountPath] = v
	}
	shm := mounts["/dev/shm"].EmptyDir
	if shm == nil || shm.Medium != corev1.StorageMediumMemory || shm.SizeLimit == nil || shm.SizeLimit.IsZero() ||
		shm.SizeLimit.String() != value(vals, "shm", "sizeLimit") {
		t.Errorf("/dev/shm %+v, want an emptyDir in memory of shm.sizeLimit %v", mounts["/dev/shm"], value(vals, "shm", "sizeLimit"))
	}
	if tmp := mounts["/tmp"].EmptyDir; tmp == nil || tmp.SizeLimit == nil {
		t.Errorf("/tmp %+v, want an emptyDir with a size limit (the root file system is read-only)", mounts["/tmp"])
	}
	checkRepositoryVolumes(t, c, mounts, vals)

	// Security contexts.
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 1000 ||
		psc.RunAsGroup == nil || *psc.RunAsGroup != 0 || psc.FSGroup == nil || *psc.FSGroup == 0 ||
		psc.FSGroupChangePolicy == nil || *psc.FSGroupChangePolicy != corev1.FSGroupChangeOnRootMismatch ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %s, want runAsNonRoot, user 1000, group 0 (the image's), a non-root fsGroup changed OnRootMismatch, seccomp RuntimeDefault", jsonOf(psc))
	}
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil ||
		!*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		sc.Privileged != nil && *sc.Privileged {
		t.Errorf("container securityContext %s, want no privilege escalation, a read-only root file system, all capabilities dropped", jsonOf(sc))
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %s, want cpu and memory requests and a memory limit", jsonOf(c.Resources))
	}
}

// checkRepositoryVolumes checks the volumes of the repository's source:
// none for a repository in the image; the claim, mounted where
// --model-repository points, for a PVC; for object storage a writable
// cache emptyDir with a size limit, the provider's mount-directory
// variable pointing at it, and the credentials.
func checkRepositoryVolumes(t *testing.T, c corev1.Container, mounts map[string]corev1.Volume, vals map[string]any) {
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	repo, _ := flag(c.Args, "model-repository")
	switch source := value(vals, "modelRepository", "source"); source {
	case "image":
		if len(mounts) != 2 {
			t.Errorf("a repository in the image, and mounts %v: want /tmp and /dev/shm only", slices.Collect(maps.Keys(mounts)))
		}
	case "pvc":
		v := mounts[repo]
		if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != value(vals, "modelRepository", "pvc", "claimName") {
			t.Errorf("%s is mounted from %+v, want the claim %v", repo, v, value(vals, "modelRepository", "pvc", "claimName"))
		}
	case "objectStorage":
		scheme, _, _ := strings.Cut(repo, "://")
		name := map[string]string{"s3": "TRITON_AWS_MOUNT_DIRECTORY", "gs": "TRITON_GCS_MOUNT_DIRECTORY", "as": "TRITON_AZURE_MOUNT_DIRECTORY"}[scheme]
		dir, ok := env[name]
		cache := mounts[dir].EmptyDir
		if !ok || cache == nil || cache.SizeLimit == nil || cache.SizeLimit.String() != value(vals, "modelRepository", "objectStorage", "cacheSizeLimit") {
			t.Errorf("%s: %s=%q on %+v, want the mount directory of %s:// on an emptyDir of cacheSizeLimit", repo, name, dir, mounts[dir], scheme)
		}
		if s := value(vals, "modelRepository", "objectStorage", "credentialsSecret"); s != "" {
			if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != s {
				t.Errorf("envFrom %s, want the Secret %v", jsonOf(c.EnvFrom), s)
			}
		}
		if s := value(vals, "modelRepository", "objectStorage", "credentialFilesSecret"); s != "" {
			v := mounts["/etc/triton-go/credentials"]
			if v.Secret == nil || v.Secret.SecretName != s {
				t.Errorf("/etc/triton-go/credentials is %+v, want the Secret %v", v, s)
			}
		}
	default:
		t.Errorf("modelRepository.source %v", source)
	}
	for path := range mounts {
		for _, m := range c.VolumeMounts {
			if m.MountPath == path && !m.ReadOnly && mounts[path].EmptyDir == nil {
				t.Errorf("%s is writable and not an emptyDir", path)
			}
		}
	}
}

func checkService(t *testing.T, s corev1.Service, podLabels map[string]string) {
	if !subset(s.Spec.Selector, podLabels) {
		t.Errorf("the Service selects %v, not the pods (%v)", s.Spec.Selector, podLabels)
	}
	type port struct {
		port        int32
		target      string
		appProtocol string
	}
	got := map[string]port{}
	for _, p := range s.Spec.Ports {
		got[p.Name] = port{p.Port, p.TargetPort.String(), ptrValue(p.AppProtocol)}
	}
	want := map[string]port{
		"http":    {8000, "http", "http"},
		"grpc":    {8001, "grpc", "kubernetes.io/h2c"},
		"metrics": {8002, "metrics", "http"},
	}
	if !maps.Equal(got, want) {
		t.Errorf("Service ports %+v, want %+v", got, want)
	}
}

func checkPodMonitor(t *testing.T, pm monitoringv1.PodMonitor, podLabels map[string]string) {
	if !subset(pm.Spec.Selector.MatchLabels, podLabels) {
		t.Errorf("the PodMonitor selects %v, not the pods (%v)", pm.Spec.Selector.MatchLabels, podLabels)
	}
	if len(pm.Spec.PodMetricsEndpoints) != 1 {
		t.Fatalf("%d pod metrics endpoints, want 1", len(pm.Spec.PodMetricsEndpoints))
	}
	e := pm.Spec.PodMetricsEndpoints[0]
	if ptrValue(e.Port) != "metrics" || e.Path != "/metrics" {
		t.Errorf("scrapes port %q path %q, want the metrics port's /metrics", ptrValue(e.Port), e.Path)
	}
	interval, err1 := model.ParseDuration(string(e.Interval))
	timeout, err2 := model.ParseDuration(string(e.ScrapeTimeout))
	if err1 != nil || err2 != nil || timeout == 0 || timeout > interval {
		t.Errorf("interval %q, scrapeTimeout %q (%v, %v): want both, the timeout no longer than the interval", e.Interval, e.ScrapeTimeout, err1, err2)
	}
}

// checkPrometheusRule: the rule's spec is examples/monitoring/alerts.yml,
// every group, expression, duration, label and annotation.
func checkPrometheusRule(t *testing.T, pr monitoringv1.PrometheusRule) {
	data, err := os.ReadFile("../examples/monitoring/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var want monitoringv1.PrometheusRuleSpec
	if err := helmtest.DecodeStrict(data, &want); err != nil {
		t.Fatalf("examples/monitoring/alerts.yml as a PrometheusRule spec: %v", err)
	}
	var gotExprs, wantExprs []string
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			gotExprs = append(gotExprs, r.Expr.String())
		}
	}
	for _, g := range want.Groups {
		for _, r := range g.Rules {
			wantExprs = append(wantExprs, r.Expr.String())
		}
	}
	if len(wantExprs) == 0 || !slices.Equal(gotExprs, wantExprs) {
		t.Errorf("the PrometheusRule's expressions\n%q\nwant alerts.yml's\n%q", gotExprs, wantExprs)
	}
	if !reflect.DeepEqual(pr.Spec, want) {
		t.Errorf("the PrometheusRule's spec differs from examples/monitoring/alerts.yml:\n%s\nwant\n%s", jsonOf(pr.Spec), jsonOf(want))
	}
}

// checkDashboard: the ConfigMap holds examples/monitoring's dashboard with
// its data source input replaced by the values' data source UID, and the
// label Grafana's sidecar looks for.
func checkDashboard(t *testing.T, cm corev1.ConfigMap, uid string) {
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v, want grafana_dashboard: \"1\"", cm.Labels)
	}
	if len(cm.Data) != 1 {
		t.Fatalf("dashboard ConfigMap keys %v, want one JSON file", slices.Collect(maps.Keys(cm.Data)))
	}
	raw, err := os.ReadFile("../examples/monitoring/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(raw), "${DS_PROMETHEUS}", uid)), &want); err != nil {
		t.Fatal(err)
	}
	for _, v := range cm.Data {
		if err := json.Unmarshal([]byte(v), &got); err != nil {
			t.Fatalf("the dashboard is not JSON: %v", err)
		}
		if strings.Contains(v, "${DS_PROMETHEUS}") {
			t.Errorf("the dashboard still has ${DS_PROMETHEUS}, which a provisioned dashboard cannot resolve")
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the dashboard differs from examples/monitoring/grafana-dashboard.json (data source %q)", uid)
	}
}

func checkHPA(t *testing.T, h autoscalingv2.HorizontalPodAutoscaler, deployment string, adapterMetrics []string) {
	if r := h.Spec.ScaleTargetRef; r.APIVersion != "apps/v1" || r.Kind != "Deployment" || r.Name != deployment {
		t.Errorf("the HPA scales %+v, want Deployment %s", r, deployment)
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
		t.Errorf("replicas %v..%d", h.Spec.MinReplicas, h.Spec.MaxReplicas)
	}
	if len(h.Spec.Metrics) != 1 {
		t.Fatalf("%d metrics, want 1", len(h.Spec.Metrics))
	}
	m := h.Spec.Metrics[0]
	if m.Type != autoscalingv2.PodsMetricSourceType || m.Pods == nil || m.Pods.Target.Type != autoscalingv2.AverageValueMetricType ||
		m.Pods.Target.AverageValue == nil || m.Pods.Target.AverageValue.Sign() <= 0 {
		t.Fatalf("metric %s, want a Pods metric with a positive average value target", jsonOf(m))
	}
	if !slices.Contains(adapterMetrics, m.Pods.Metric.Name) {
		t.Errorf("the HPA scales on %q, which helm/prometheus-adapter-values.yaml does not define (%v)", m.Pods.Metric.Name, adapterMetrics)
	}
}

func checkScaledObject(t *testing.T, s scaledObject, deployment string) {
	if s.Spec.ScaleTargetRef == nil || s.Spec.ScaleTargetRef.Name != deployment {
		t.Errorf("the ScaledObject scales %+v, want %s", s.Spec.ScaleTargetRef, deployment)
	}
	if len(s.Spec.Triggers) != 1 {
		t.Fatalf("%d triggers, want 1", len(s.Spec.Triggers))
	}
	tr := s.Spec.Triggers[0]
	q := tr.Metadata["query"]
	if tr.Type != "prometheus" || tr.MetricType != autoscalingv2.ValueMetricType || tr.Metadata["serverAddress"] == "" ||
		!strings.Contains(q, "nv_inference_queue_duration_us") || !strings.Contains(q, `namespace="test"`) || tr.Metadata["threshold"] == "" {
		t.Errorf("trigger %s, want a prometheus query of this release's queue time per request, compared as a Value", jsonOf(tr))
	}
}

// scaledObject mirrors KEDA's keda.sh/v1alpha1 ScaledObject
// (github.com/kedacore/keda/v2 apis/keda/v1alpha1: ScaledObjectSpec,
// ScaleTarget, AdvancedConfig, HorizontalPodAutoscalerConfig,
// ScaleTriggers), with the JSON names of KEDA's types, for strict
// decoding without KEDA's module. Fallback, scaling modifiers and
// authentication are left out: the chart sets none, and a mirror without
// them rejects them.
type scaledObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	} `json:"metadata"`
	Spec struct {
		ScaleTargetRef *struct {
			Name                   string `json:"name"`
			APIVersion             string `json:"apiVersion,omitempty"`
			Kind                   string `json:"kind,omitempty"`
			EnvSourceContainerName string `json:"envSourceContainerName,omitempty"`
		} `json:"scaleTargetRef"`
		PollingInterval       *int32 `json:"pollingInterval,omitempty"`
		InitialCooldownPeriod *int32 `json:"initialCooldownPeriod,omitempty"`
		CooldownPeriod        *int32 `json:"cooldownPeriod,omitempty"`
		IdleReplicaCount      *int32 `json:"idleReplicaCount,omitempty"`
		MinReplicaCount       *int32 `json:"minReplicaCount,omitempty"`
		MaxReplicaCount       *int32 `json:"maxReplicaCount,omitempty"`
		Advanced              *struct {
			HorizontalPodAutoscalerConfig *struct {
				Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
				Name     string                                         `json:"name,omitempty"`
			} `json:"horizontalPodAutoscalerConfig,omitempty"`
			RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
		} `json:"advanced,omitempty"`
		Triggers []struct {
			Type             string                         `json:"type"`
			Name             string                         `json:"name,omitempty"`
			UseCachedMetrics bool                           `json:"useCachedMetrics,omitempty"`
			Metadata         map[string]string              `json:"metadata"`
			MetricType       autoscalingv2.MetricTargetType `json:"metricType,omitempty"`
		} `json:"triggers"`
	} `json:"spec"`
}

// adapterMetricNames are the custom metrics
// helm/prometheus-adapter-values.yaml makes prometheus-adapter serve,
// after checking its rules: each series carries namespace and pod, maps
// them to those resources, and no query pins a namespace (Triton's
// k8s-onprem chart hard-codes namespace="default").
func adapterMetricNames(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("helm/prometheus-adapter-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The prometheus-adapter chart's values, as far as this file uses them
	// (its rules are the adapter's config.DiscoveryRule).
	var v struct {
		Prometheus struct {
			URL  string `json:"url"`
			Port int    `json:"port"`
		} `json:"prometheus"`
		Rules struct {
			Default bool `json:"default"`
			Custom  []struct {
				SeriesQuery string `json:"seriesQuery"`
				Resources   struct {
					Overrides map[string]struct {
						Resource string `json:"resource"`
					} `json:"overrides"`
				} `json:"resources"`
				Name struct {
					Matches string `json:"matches"`
					As      string `json:"as"`
				} `json:"name"`
				MetricsQuery string `json:"metricsQuery"`
			} `json:"custom"`
		} `json:"rules"`
	}
	if err := helmtest.DecodeStrict(data, &v); err != nil {
		t.Fatalf("helm/prometheus-adapter-values.yaml: %v", err)
	}
	var names []string
	for _, r := range v.Rules.Custom {
		names = append(names, r.Name.As)
		if !strings.Contains(r.SeriesQuery, `namespace!=""`) || !strings.Contains(r.SeriesQuery, `pod!=""`) ||
			r.Resources.Overrides["namespace"].Resource != "namespace" || r.Resources.Overrides["pod"].Resource != "pod" {
			t.Errorf("rule %s: series %s and overrides %v, want namespace and pod labels mapped to those resources", r.Name.As, r.SeriesQuery, r.Resources.Overrides)
		}
		if strings.Contains(r.SeriesQuery+r.MetricsQuery, `namespace="`) {
			t.Errorf("rule %s pins a namespace: %s %s", r.Name.As, r.SeriesQuery, r.MetricsQuery)
		}
		if !strings.Contains(r.MetricsQuery, "<<.LabelMatchers>>") || !strings.Contains(r.MetricsQuery, "by (<<.GroupBy>>)") {
			t.Errorf("rule %s: %s, want the adapter's label matchers and grouping", r.Name.As, r.MetricsQuery)
		}
	}
	if len(names) == 0 || v.Prometheus.URL == "" {
		t.Fatalf("helm/prometheus-adapter-values.yaml: no Prometheus URL or no custom rules")
	}
	return names
}

// TestChartRefuses: values that would break the server's shutdown, its
// scrapes or its command line fail the render with a message that says
// what to change.
func TestChartRefuses(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		set  string
		want string
	}{
		"grace period below drain and exit timeout": {"terminationGracePeriodSeconds=30",
			"terminationGracePeriodSeconds 30 is less than server.exitDrainSecs (5) + server.exitTimeoutSecs (30) + terminationGraceMarginSeconds (10) = 45"},
		"grace period below a longer exit timeout": {"server.exitTimeoutSecs=120,terminationGracePeriodSeconds=60",
			"terminationGracePeriodSeconds 60 is less than server.exitDrainSecs (5) + server.exitTimeoutSecs (120)"},
		"scrape timeout above the interval": {"podMonitor.enabled=true,podMonitor.interval=15s,podMonitor.scrapeTimeout=1m",
			"podMonitor.scrapeTimeout 1m is longer than podMonitor.interval 15s"},
		"not a duration": {"podMonitor.enabled=true,podMonitor.scrapeTimeout=10",
			`"10" is not a Prometheus duration`},
		"a chart flag in extraArgs": {"server.extraArgs={--exit-timeout-secs=90}",
			`"--exit-timeout-secs=90" names --exit-timeout-secs, which the chart sets`},
		"an abbreviated chart flag in extraArgs": {"server.extraArgs={--model-repo=/x}",
			`"--model-repo=/x" names --model-repository, which the chart sets`},
		"load-model without explicit control": {"server.modelControlMode=poll,server.loadModels={a}",
			"server.loadModels [a] needs server.modelControlMode=explicit"},
		"object storage without a URL": {"modelRepository.source=objectStorage",
			"modelRepository.objectStorage.url is required"},
		"an unknown scheme": {"modelRepository.source=objectStorage,modelRepository.objectStorage.url=https://bucket/models",
			`modelRepository.objectStorage.url "https://bucket/models": want s3://, gs:// or as://`},
		"a PVC without a claim": {"modelRepository.source=pvc",
			"modelRepository.pvc.claimName is required"},
		"an unknown source": {"modelRepository.source=nfs",
			`modelRepository.source "nfs": want image, pvc or objectStorage`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := helmtest.Run(t, helmtest.TemplateArgs(chart, nil, "--set", tc.set)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("--set %s: %v, want a failure saying %q", tc.set, err, tc.want)
			}
		})
	}
	// A larger grace period than needed is kept as it is.
	out, err := helmtest.Run(t, helmtest.TemplateArgs(chart, nil, "--set", "terminationGracePeriodSeconds=120")...)
	if err != nil || !strings.Contains(out, "terminationGracePeriodSeconds: 120\n") {
		t.Errorf("terminationGracePeriodSeconds=120: %v", err)
	}
}

// TestChartMonitoringFiles: helm reads only files inside the chart, so the
// chart keeps copies of examples/monitoring's alerts and dashboard; they
// must stay the same files.
func TestChartMonitoringFiles(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"alerts.yml", "grafana-dashboard.json"} {
		orig, err := os.ReadFile(filepath.Join("..", "examples", "monitoring", name))
		if err != nil {
			t.Fatal(err)
		}
		cp, err := os.ReadFile(filepath.Join(chart, "files", name))
		if err != nil {
			t.Fatal(err)
		}
		if string(orig) != string(cp) {
			t.Errorf("deploy/%s/files/%s differs from examples/monitoring/%s; copy it: cp examples/monitoring/%s deploy/%s/files/",
				chart, name, name, name, chart)
		}
	}
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
