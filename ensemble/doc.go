// Package ensemble is the scheduler of Triton's ensemble models: a model
// whose config.pbtxt has platform "ensemble" and an ensemble_scheduling
// block is a DAG of steps, each a request to another model, connected by
// named ensemble tensors through each step's input_map and output_map.
//
// The server loads every ensemble with [Backend]; applications do not
// register it. [Compile] checks an ensemble against its composing models
// (the structural rules that need no other model are package repository's)
// and is exported for tools that want Triton's load-time messages without
// a server.
//
// An ensemble's steps run through the [backend.Caller] the server hands
// every model, the same interface a Go backend uses to call other models
// (Triton's "business logic scripting"): an ensemble is a declarative
// pipeline, a Go backend calling models an imperative one. Choose the
// ensemble when the data flow is fixed and every count fits the steps'
// batch sizes; write Go when the flow branches on data or a count has no
// bound (see [Backend] on the batch dimension).
package ensemble
