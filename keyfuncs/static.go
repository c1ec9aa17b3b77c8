package keyfuncs

import "net/http"

// Static keys every request on s. Alone it makes one global lock for the
// policy (one request at a time across the whole fleet, say for a costly
// report); joined with other funcs it labels a part of the key. It never
// fails.
func Static(s string) Func {
	return func(*http.Request) (string, error) { return s, nil }
}
