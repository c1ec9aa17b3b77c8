package peerbench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run when a test or benchmark leaves a goroutine
// behind: every server, client and store a case starts ends with it. The
// one exception is ulule's memory store, which has no Close: its cleaner
// stops only when the garbage collector finalizes the store.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/ulule/limiter/v3/drivers/store/memory.(*cleaner).Run"))
}
