package seq

import (
	"encoding/base64"
	"encoding/binary"
	"testing"
)

// TestAppend checks Append against encoding/base64 for a spread of
// values, the edges included.
func TestAppend(t *testing.T) {
	for _, n := range []uint64{0, 1, 63, 64, 1 << 32, 0x0123456789abcdef, 1<<64 - 1} {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], n)
		want := base64.RawURLEncoding.EncodeToString(b[:])
		got := string(Append([]byte("x"), n))
		if got != "x"+want || len(got) != 1+11 {
			t.Errorf("Append(%#x) = %q, want %q", n, got, "x"+want)
		}
	}
}
