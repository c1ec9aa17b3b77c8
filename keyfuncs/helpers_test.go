package keyfuncs

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// req builds a server request from peer with the given header lines
// (name, value pairs; a name may repeat to add lines).
func req(peer string, hdr ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/submit", nil)
	r.RemoteAddr = peer
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	return r
}

// wantErr checks that err is a *Error with status and source, and that its
// text does not leak any of the given request values.
func wantErr(t testing.TB, err error, status int, source string, leaks ...string) {
	t.Helper()
	var ke *Error
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, status, ke.HTTPStatus(), "status of %v", err)
	assert.Equal(t, source, ke.Source)
	assert.NotEmpty(t, ke.Reason)
	for _, l := range leaks {
		if l != "" {
			assert.NotContains(t, ke.Error(), l, "the error leaks a request value")
		}
	}
}

func mustPrefixes(t testing.TB, s ...string) []netip.Prefix {
	t.Helper()
	var ps []netip.Prefix
	for _, s := range s {
		if a, err := netip.ParseAddr(s); err == nil {
			ps = append(ps, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(s)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	return ps
}

func fail(status int, source string) Func {
	return func(*http.Request) (string, error) {
		return "", &Error{Status: status, Source: source, Reason: "missing"}
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(s[:])
}

// closeTracker records whether the original body was closed.
type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error { c.closed = true; return nil }

func bodyReq(body io.Reader, contentLength int64) (*http.Request, *closeTracker) {
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	ct := &closeTracker{Reader: body}
	r.Body = ct
	r.ContentLength = contentLength
	return r, ct
}

// checkRestored reads r.Body to the end, compares it with want, and checks
// that closing it closes the original.
func checkRestored(t testing.TB, r *http.Request, ct *closeTracker, want []byte) {
	t.Helper()
	got, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	require.True(t, bytes.Equal(got, want), "restored body: %d bytes, want %d", len(got), len(want))
	require.NoError(t, r.Body.Close())
	require.True(t, ct.closed, "closing the restored body leaves the original open")
}
