package python

// SetBLSWaitHook sets a function called each time the server waits for a
// decoupled BLS request's iterator to take responses (nil: none). Set it
// before the server starts and reset it after the server is closed.
func SetBLSWaitHook(f func()) { blsWaitHook = f }

// SetOutboxWaitHook sets a function called each time a response of a
// decoupled model waits in the server for room in its request's stream
// (nil: none). Set it before the server starts and reset it after the
// server is closed.
func SetOutboxWaitHook(f func()) { outboxWaitHook = f }

// MayAutoComplete is mayAutoComplete.
var MayAutoComplete = mayAutoComplete

// SetReadyJoinHook sets a function called each time a readiness check has
// joined the shared is_ready call (nil: none). Set it before the server
// starts and reset it after the server is closed.
func SetReadyJoinHook(f func()) { readyJoinHook = f }
