//go:build race

package memstore

// raced is set when the tests run under the race detector, which makes the
// floods of a million clients too slow: they run scaled down then.
const raced = true
