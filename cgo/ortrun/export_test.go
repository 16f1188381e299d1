//go:build cgo && (linux || darwin)

package ortrun

// LiveValues is the number of OrtValues the shim holds right now.
var LiveValues = liveValues
