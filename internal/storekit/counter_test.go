package storekit

import (
	"encoding/base64"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppendCounter checks AppendCounter against encoding/base64 for a
// spread of values, the edges included.
func TestAppendCounter(t *testing.T) {
	for _, n := range []uint64{0, 1, 63, 64, 1 << 32, 0x0123456789abcdef, 1<<64 - 1} {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], n)
		want := "x" + base64.RawURLEncoding.EncodeToString(b[:])
		require.Equal(t, want, string(AppendCounter([]byte("x"), n)), "AppendCounter(%#x)", n)
	}
}
