// Package helmtest renders Helm charts in tests and decodes the manifests
// strictly into Go types: the chart tests of package deploy and the tests
// that feed the rendered container arguments to cmd/tritonserver's flag
// parser use it.
//
// Helm is the one scripts/test-tools.sh installs (make test-tools) into
// the checkout's .cache/bin; a test that needs it and finds none is skipped
// on a developer's machine and fails under CI=true ([testenv.Need]).
//
//	docs := helmtest.Template(t, chart, "values/many-models-pvc.yaml")
//	var d appsv1.Deployment
//	helmtest.Decode(t, docs.Only(t, "Deployment"), &d)
//
// Decoding is strict as the API server's strict field validation is: an
// unknown field, a field spelt in another case, a duplicate key or a value
// of the wrong type fails the test. Only _test.go files may import this
// package, so that its Kubernetes modules stay out of the library's
// import graph.
package helmtest
