package keyfuncs

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
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
func wantErr(t *testing.T, err error, status int, source string, leaks ...string) {
	t.Helper()
	var ke *Error
	if !errors.As(err, &ke) {
		t.Fatalf("err = %v (%T), want *Error", err, err)
	}
	if ke.HTTPStatus() != status || ke.Source != source {
		t.Fatalf("err = %+v, want status %d source %s", ke, status, source)
	}
	if ke.Reason == "" {
		t.Fatalf("err %+v has no reason", ke)
	}
	for _, l := range leaks {
		if l != "" && (containsStr(ke.Error(), l)) {
			t.Fatalf("error %q leaks request value %q", ke.Error(), l)
		}
	}
}

func containsStr(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
