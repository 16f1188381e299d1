// Package loadtest drives a request function from many goroutines inside a
// benchmark and reports what load generators report: requests per second
// and latency percentiles. The protocol benchmarks of httpapi and grpcapi
// use it, so that their figures are measured the same way.
//
//	func BenchmarkInfer(b *testing.B) {
//		loadtest.Run(b, 16, func() error {
//			_, err := srv.Infer(ctx, req)
//			return err
//		})
//	}
package loadtest
