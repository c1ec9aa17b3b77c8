package demo_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/go-throttle/throttle/examples/internal/demo"
	"github.com/go-throttle/throttle/keyfuncs"
)

// TestAdminScheme: the Authorization scheme is matched without regard to
// case (RFC 9110 §11.1), the token exactly.
func TestAdminScheme(t *testing.T) {
	a := &demo.Admin{Token: "s3cret", Key: keyfuncs.Header("X-User-ID")}
	for header, want := range map[string]int{
		"Bearer s3cret":  http.StatusNoContent,
		"bearer s3cret":  http.StatusNoContent,
		"BEARER s3cret":  http.StatusNoContent,
		"Bearer S3CRET":  http.StatusUnauthorized,
		"Basic s3cret":   http.StatusUnauthorized,
		"Bearers3cret":   http.StatusUnauthorized,
		"":               http.StatusUnauthorized,
		"Bearer s3cret ": http.StatusUnauthorized,
	} {
		r := httptest.NewRequest(http.MethodPost, "/admin/reset?user=bea", nil)
		if header != "" {
			r.Header.Set("Authorization", header)
		}
		w := httptest.NewRecorder()
		a.ServeHTTP(w, r)
		assert.Equal(t, want, w.Code, "Authorization: %q", header)
	}
}
