package fiberadapter_test

import (
	"testing"

	"go.uber.org/goleak"
)

// fasthttp keeps one goroutine for the process's life, updating the Date
// field once a second.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"))
}
