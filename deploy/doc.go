// Package deploy holds what runs the server outside a Go program; it has
// no Go code of its own, only tests of these files (docs/deploy.md is the
// guide to them):
//
//   - Dockerfile: the container image, built from the repository root with
//     .dockerignore beside it.
//   - helm/triton-go: the Helm chart: a Deployment with tritonserver's
//     flags built from values, the three probes, /dev/shm, a read-only
//     root file system and a grace period derived from the server's own
//     drain (--exit-drain-secs) and exit timeout; a Service, a
//     PodDisruptionBudget, and behind enabled flags a PodMonitor, a
//     PrometheusRule and a Grafana dashboard ConfigMap (copies of
//     examples/monitoring's files under files/), and an HPA on a
//     prometheus-adapter metric or a KEDA ScaledObject. helm/values holds
//     the three deployment shapes, helm/prometheus-adapter-values.yaml the
//     adapter's rules.
//   - kserve: a ClusterServingRuntime and a ServingRuntime for KServe, and
//     InferenceService examples.
//
// The tests check the Dockerfile as BuildKit parses it (stages, the
// scripts shared with make deps, entry point, user, ports); run helm lint
// --strict and helm template (the helm that make test-tools installs, via
// internal/helmtest) over the chart's defaults, every values file and the
// overlays in testdata/chart, and decode every manifest strictly (unknown,
// miscased or duplicate fields fail) into the types of k8s.io/api and the
// Prometheus Operator, checking what a deployment depends on; check that
// renders with unsafe values fail and that the chart's copies of the
// monitoring files match examples/monitoring. KServe's Go module is not on
// the module proxy these tests build from, so kserve_test.go decodes the
// KServe files into mirrors of KServe's v1alpha1 and v1beta1 types with
// KServe's JSON names (corev1.Container and PodSpec where KServe embeds
// them), and KEDA's ScaledObject is mirrored the same way. These modules
// are test-only: no package of the library or its commands imports them
// (internal/lint checks).
package deploy
