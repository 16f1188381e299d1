package repository_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton/repository"
)

// pinned is what Normalize adds to every non-ensemble optimization block.
const pinned = `input_pinned_memory { enable: true } output_pinned_memory { enable: true }`

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		opts repository.NormalizeOptions
		in   string
		want string
	}{
		{
			name: "platform fills backend, file, policy, pinned memory, CPU group of 2",
			in:   `name: "m" platform: "onnxruntime_onnx"`,
			want: `name: "m" platform: "onnxruntime_onnx" backend: "onnxruntime" default_model_filename: "model.onnx"
				version_policy { latest { num_versions: 1 } }
				optimization { ` + pinned + ` }
				instance_group { name: "m" kind: KIND_CPU count: 2 }`,
		},
		{
			name: "backend fills platform",
			in:   `name: "m" backend: "tensorrt"`,
			want: `name: "m" platform: "tensorrt_plan" backend: "tensorrt" default_model_filename: "model.plan"
				version_policy { latest { num_versions: 1 } }
				optimization { ` + pinned + ` }
				instance_group { name: "m" kind: KIND_CPU count: 1 }`,
		},
		{
			name: "tensorflow platform follows the file name",
			in:   `name: "m" backend: "tensorflow" default_model_filename: "model.graphdef"`,
			want: `name: "m" platform: "tensorflow_graphdef" backend: "tensorflow" default_model_filename: "model.graphdef"
				version_policy { latest { num_versions: 1 } }
				optimization { ` + pinned + ` }
				instance_group { name: "m" kind: KIND_CPU count: 2 }`,
		},
		{
			name: "tensorflow defaults to savedmodel",
			in:   `name: "m" backend: "tensorflow"`,
			want: `name: "m" platform: "tensorflow_savedmodel" backend: "tensorflow" default_model_filename: "model.savedmodel"
				version_policy { latest { num_versions: 1 } }
				optimization { ` + pinned + ` }
				instance_group { name: "m" kind: KIND_CPU count: 2 }`,
		},
		{
			name: "pytorch aoti from platform",
			in:   `name: "m" platform: "torch_aoti"`,
			want: `name: "m" platform: "torch_aoti" backend: "pytorch" default_model_filename: "model.pt2"
				version_policy { latest { num_versions: 1 } }
				optimization { ` + pinned + ` }
				instance_group { name: "m" kind: KIND_CPU count: 1 }`,
		},
		{
			name: "pytorch libtorch alias",
			in:   `name: "m" platform: "libtorch"`,
			want: `name: "m" platform: "libtorch" backend: "pytorch" default_model_filename: "model.pt"
				version_policy { latest { num_versions: 1 } }
				optimization { ` + pinned + ` }
				instance_group { name: "m" kind: KIND_CPU count: 1 }`,
		},
		{
			name: "backend without platform",
			in:   `name: "m" backend: "python"`,
			want: `name: "m" backend: "python" default_model_filename: "model.py"
				version_policy { latest { num_versions: 1 } }
				optimization { ` + pinned + ` }
				instance_group { name: "m" kind: KIND_CPU count: 1 }`,
		},
		{
			name: "custom backend gets no file",
			in:   `name: "m" backend: "gofunc"`,
			want: `name: "m" backend: "gofunc"
				version_policy { latest { num_versions: 1 } }
				optimization { ` + pinned + ` }
				instance_group { name: "m" kind: KIND_CPU count: 1 }`,
		},
		{
			name: "GPUs resolve AUTO and fill gpus",
			opts: repository.NormalizeOptions{GPUs: 2},
			in:   `name: "m" backend: "onnxruntime" platform: "onnxruntime_onnx" default_model_filename: "x.onnx"`,
			want: `name: "m" platform: "onnxruntime_onnx" backend: "onnxruntime" default_model_filename: "x.onnx"
				version_policy { latest { num_versions: 1 } }
				optimization { ` + pinned + ` }
				instance_group { name: "m" kind: KIND_GPU count: 1 gpus: [ 0, 1 ] }`,
		},
		{
			name: "groups: names, kinds and counts",
			opts: repository.NormalizeOptions{GPUs: 2},
			in: `name: "m" backend: "onnxruntime"
				instance_group [
					{ count: 3 },
					{ kind: KIND_AUTO gpus: [ 1 ] },
					{ kind: KIND_AUTO gpus: [ 5 ] },
					{ name: "cpus" kind: KIND_CPU },
					{ kind: KIND_MODEL },
					{ kind: KIND_GPU gpus: [ 1 ] count: 4 }
				]`,
			want: `name: "m" backend: "onnxruntime" platform: "onnxruntime_onnx" default_model_filename: "model.onnx"
				version_policy { latest { num_versions: 1 } }
				optimization { ` + pinned + ` }
				instance_group [
					{ name: "m_0" kind: KIND_GPU count: 3 gpus: [ 0, 1 ] },
					{ name: "m_1" kind: KIND_GPU count: 1 gpus: [ 1 ] },
					{ name: "m_2" kind: KIND_CPU count: 2 gpus: [ 5 ] },
					{ name: "cpus" kind: KIND_CPU count: 2 },
					{ name: "m_4" kind: KIND_MODEL count: 1 },
					{ name: "m_5" kind: KIND_GPU count: 4 gpus: [ 1 ] }
				]`,
		},
		{
			name: "pytorch: AUTO is CPU with GPUs, unless the group lists GPUs",
			opts: repository.NormalizeOptions{GPUs: 2},
			in: `name: "m" platform: "pytorch_libtorch"
				instance_group [ { count: 2 }, { kind: KIND_AUTO gpus: [ 1 ] }, { kind: KIND_GPU } ]`,
			want: `name: "m" platform: "pytorch_libtorch" backend: "pytorch" default_model_filename: "model.pt"
				version_policy { latest { num_versions: 1 } }
				optimization { ` + pinned + ` }
				instance_group [
					{ name: "m_0" kind: KIND_CPU count: 2 },
					{ name: "m_1" kind: KIND_GPU count: 1 gpus: [ 1 ] },
					{ name: "m_2" kind: KIND_GPU count: 1 gpus: [ 0, 1 ] }
				]`,
		},
		{
			name: "pytorch without instance_group is one CPU instance on a GPU machine",
			opts: repository.NormalizeOptions{GPUs: 1},
			in:   `name: "m" backend: "pytorch"`,
			want: `name: "m" platform: "pytorch_libtorch" backend: "pytorch" default_model_filename: "model.pt"
				version_policy { latest { num_versions: 1 } }
				optimization { ` + pinned + ` }
				instance_group { name: "m" kind: KIND_CPU count: 1 }`,
		},
		{
			name: "KIND_GPU without GPUs keeps an empty gpus list",
			in:   `name: "m" backend: "b" instance_group { kind: KIND_GPU }`,
			want: `name: "m" backend: "b"
				version_policy { latest { num_versions: 1 } }
				optimization { ` + pinned + ` }
				instance_group { name: "m_0" kind: KIND_GPU count: 1 }`,
		},
		{
			name: "dynamic batching preferred size from max_batch_size",
			in:   `name: "m" backend: "b" max_batch_size: 8 dynamic_batching { max_queue_delay_microseconds: 10 }`,
			want: `name: "m" backend: "b" max_batch_size: 8
				dynamic_batching { preferred_batch_size: [ 8 ] max_queue_delay_microseconds: 10 }
				version_policy { latest { num_versions: 1 } }
				optimization { ` + pinned + ` }
				instance_group { name: "m" kind: KIND_CPU count: 1 }`,
		},
		{
			name: "dynamic batching keeps explicit sizes and adds none without batching",
			in:   `name: "m" backend: "b" dynamic_batching { }`,
			want: `name: "m" backend: "b" dynamic_batching { }
				version_policy { latest { num_versions: 1 } }
				optimization { ` + pinned + ` }
				instance_group { name: "m" kind: KIND_CPU count: 1 }`,
		},
		{
			name: "sequence oldest and idle default",
			in:   `name: "m" backend: "b" max_batch_size: 4 sequence_batching { oldest { max_candidate_sequences: 4 } }`,
			want: `name: "m" backend: "b" max_batch_size: 4
				sequence_batching { max_sequence_idle_microseconds: 1000000 oldest { max_candidate_sequences: 4 preferred_batch_size: [ 4 ] } }
				version_policy { latest { num_versions: 1 } }
				optimization { ` + pinned + ` }
				instance_group { name: "m" kind: KIND_CPU count: 1 }`,
		},
		{
			name: "sequence direct keeps explicit idle time",
			in:   `name: "m" backend: "b" max_batch_size: 4 sequence_batching { max_sequence_idle_microseconds: 7 direct { } }`,
			want: `name: "m" backend: "b" max_batch_size: 4
				sequence_batching { max_sequence_idle_microseconds: 7 direct { } }
				version_policy { latest { num_versions: 1 } }
				optimization { ` + pinned + ` }
				instance_group { name: "m" kind: KIND_CPU count: 1 }`,
		},
		{
			name: "explicit policies and pinned memory are kept",
			in: `name: "m" backend: "b" version_policy { specific { versions: [ 2 ] } }
				optimization { input_pinned_memory { enable: false } graph { level: 1 } }`,
			want: `name: "m" backend: "b" version_policy { specific { versions: [ 2 ] } }
				optimization { graph { level: 1 } input_pinned_memory { enable: false } output_pinned_memory { enable: true } }
				instance_group { name: "m" kind: KIND_CPU count: 1 }`,
		},
		{
			name: "latest 0 means 1",
			in:   `name: "m" backend: "b" version_policy { latest { } }`,
			want: `name: "m" backend: "b" version_policy { latest { num_versions: 1 } }
				optimization { ` + pinned + ` }
				instance_group { name: "m" kind: KIND_CPU count: 1 }`,
		},
		{
			name: "ensemble gets only the version policy",
			opts: repository.NormalizeOptions{GPUs: 1},
			in:   `name: "e" platform: "ensemble" max_batch_size: 4 ensemble_scheduling { step { model_name: "a" } }`,
			want: `name: "e" platform: "ensemble" max_batch_size: 4 ensemble_scheduling { step { model_name: "a" } }
				version_policy { latest { num_versions: 1 } }`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustParse(t, tt.in)
			want := mustParse(t, tt.want)
			repository.Normalize(cfg, tt.opts)
			if !proto.Equal(cfg, want) {
				t.Fatalf("Normalize:\n got  {%s}\n want {%s}", text(cfg), text(want))
			}
			again := proto.CloneOf(cfg)
			repository.Normalize(cfg, tt.opts)
			if !proto.Equal(cfg, again) {
				t.Errorf("Normalize is not idempotent:\n once  {%s}\n twice {%s}", text(again), text(cfg))
			}
		})
	}
	t.Run("nil config", func(t *testing.T) {
		repository.Normalize(nil, repository.NormalizeOptions{})
	})
}
