//go:build race

package guard_test

// raced is set under the race detector, which makes floods of hundreds of
// thousands of requests slow: they run scaled down then.
const raced = true
