// Package s3test starts a real S3-compatible server for tests: versitygw
// (github.com/versity/versitygw) with its posix back end over a test's
// temporary folder, listening on a free loopback port, plus a TCP [Proxy]
// that can cut connections part-way through a response to simulate a
// network drop, or hold them there to simulate a hung transfer.
//
// The versitygw binary is the one scripts/test-tools.sh installs into the
// checkout's .cache/bin (make test runs it). When it is missing, [Start]
// skips the test on a developer's machine and fails it under CI=true, as
// internal/testenv does for the other fetched files.
//
//	srv := s3test.Start(t)
//	srv.CreateBucket(t, "models")
//	srv.PutDir(t, "models", "repo", "testdata/repo")
//	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
//	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
//	url := srv.URL("models", "repo") // s3://127.0.0.1:PORT/models/repo
//
// # Ownership
//
// Every process, listener and goroutine started here is stopped and waited
// for in a t.Cleanup of the test that started it, so packages using it can
// run goleak. Helpers take the testing.TB to fail as their first argument,
// so that a subtest reports its own failures.
package s3test
