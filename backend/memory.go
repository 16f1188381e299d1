package backend

// MemoryReporter is implemented by a [Model] or an [Instance] that knows
// how many bytes of memory it holds: weights, a runtime's arenas, a process
// of its own (the Python backend's stub). The server's memory budget
// accounts a loaded model version as the sum over its Model and its
// Instances of what they report; a version none of which reports is
// accounted by how much the process's resident memory grew while it
// loaded.
//
// MemoryBytes is called after the version has loaded and warmed up, and
// again when the server re-checks its budget, from any goroutine and
// concurrently with Execute, so it must be quick and must not block on a
// running batch. Bytes that several versions share (a library's code, a
// cache of the backend) are not counted.
type MemoryReporter interface {
	MemoryBytes() (int64, error)
}

// MemoryBytes returns what the [MemoryReporter] of x reports, looking
// through [Wrapper]s when x is an Instance, and whether x has one.
func MemoryBytes(x any) (n int64, ok bool, err error) {
	if inst, isInst := x.(Instance); isInst {
		if r, found := find[MemoryReporter](inst); found {
			n, err = r.MemoryBytes()
			return n, true, err
		}
		return 0, false, nil
	}
	if r, found := x.(MemoryReporter); found {
		n, err = r.MemoryBytes()
		return n, true, err
	}
	return 0, false, nil
}
