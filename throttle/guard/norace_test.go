//go:build !race

package guard_test

const raced = false
