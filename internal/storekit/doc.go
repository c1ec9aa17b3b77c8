// Package storekit is what the stores and the limiter share and users never
// call: the stored key layout, lock tokens, the drift allowance and the
// arithmetic of quotas (GCRA, and strict rates' sliding window).
// docs/stores.md explains the data.
package storekit

// InMemory is implemented by stores that answer from this process's memory
// (memstore): the limiter spends no per-call timeout on them.
type InMemory interface {
	InMemory()
}
