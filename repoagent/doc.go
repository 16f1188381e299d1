// Package repoagent runs the repository agents a model's configuration
// names (model_repository_agents): code that acts on a model's files when
// the server loads the model, before its backend sees them, as Triton's
// TRITONREPOAGENT libraries do.
//
// Triton's checksum agent is built in ([Checksum], the agent named
// "checksum"): it verifies the MD5 digests the configuration gives for
// model files, so that a corrupted or tampered file fails the load
// instead of serving:
//
//	model_repository_agents {
//	  agents [ { name: "checksum", parameters { key: "MD5:1/model.onnx" value: "2c1ab4..." } } ]
//	}
//
// A Go program adds its own agents with triton.WithRepositoryAgent. An
// agent here checks; it does not move the model to another location
// (Triton's agents may, for example to decrypt it into a temporary
// folder). A configuration that names an agent the server does not have
// fails to load, as in Triton.
package repoagent
