module github.com/triton-go/triton

go 1.26.0

require (
	github.com/x448/float16 v0.8.4
	github.com/yalue/onnxruntime_go v1.27.0
	go.uber.org/goleak v1.3.0
	go.uber.org/zap v1.28.0
	golang.org/x/image v0.48.0
	golang.org/x/sync v0.25.0
	google.golang.org/protobuf v1.36.12
)

require (
	go.uber.org/multierr v1.10.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
)
