package python

// SetBLSWaitHook sets a function called each time the server waits for a
// decoupled BLS request's iterator to take responses (nil: none). Set it
// before the server starts and reset it after the server is closed.
func SetBLSWaitHook(f func()) { blsWaitHook = f }
