// Package warmup turns the model_warmup entries of a model configuration
// into requests ready to run.
//
// Triton runs the warm-up samples listed in a model's config.pbtxt through
// every instance of a model version before the version takes traffic, and
// a failing warm-up fails the load. Building those samples is this
// package's job; running them is the server's. [Samples] reads a config
// and the model's folder and returns one [Sample] per model_warmup entry:
// a name, a batch size, a repeat count and the input tensors, with data
// generated (zero_data, random_data) or read from the model's warmup/
// folder (input_data_file).
//
// # Rules
//
// Samples applies Triton's rules (model_config.proto's ModelWarmup and
// Triton's warm-up documentation) and checks each sample as a request to
// the model would be checked, so that a bad entry fails with an error that
// names the sample, the input and the problem rather than somewhere inside
// a backend:
//
//   - batch_size is at least 1; exactly 1 for a model without batching
//     (max_batch_size 0), at most max_batch_size otherwise. A batching
//     model's inputs get shape [batch_size] + dims, their one-row data
//     repeated batch_size times; other models' inputs get shape dims.
//   - Every non-optional input of the config is given, and every given
//     input is a config input, or one the sequence batcher would supply
//     (a sequence_batching control_input or the input_name of an implicit
//     state): warm-up requests go straight to the instances, so sequence
//     models warm up with their control and state tensors given
//     explicitly. Those are never required.
//   - data_type is valid and equals the input's; dims are concrete (no -1)
//     and match the input's dims, where the config's -1 matches any size.
//     Control inputs have dims [1] and the type their controls imply.
//   - zero_data is zero bytes (for BYTES, every element empty);
//     random_data is valid random values (see [Samples]), BYTES falling
//     back to zero data as in Triton; input_data_file names a file in the
//     warmup/ folder holding exactly one row: the element count times the
//     element size for fixed-size types, exactly that many length-prefixed
//     elements for BYTES. File names cannot leave the warmup/ folder.
//   - Ensembles have no warm-up.
//
// Triton itself is looser in two places: it skips (rather than rejects) a
// sample with batch_size 0, and it accepts a data file longer than one row
// and uses its beginning. Samples rejects both, since either is almost
// certainly a mistake in the config.
//
// # Determinism, concurrency and ownership
//
// random_data is generated from fixed seeds derived from the sample and
// input names, so warm-ups are reproducible. Samples holds no state and is
// safe for concurrent use on a config nobody modifies. Every tensor it
// returns has a buffer of its own, which the caller owns.
//
// # Usage
//
//	samples, err := warmup.Samples(cfg, os.DirFS(modelPath)) // or an os.Root's FS
//	if err != nil {
//		return err // the load fails
//	}
//	for _, s := range samples {
//		for range s.Count {
//			// run one request of s.BatchSize rows with inputs s.Inputs
//			// on each instance; an error fails the load
//		}
//	}
package warmup
