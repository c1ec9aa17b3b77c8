package guard

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/keyfuncs"
)

// The default fingerprint reads the body only under an Idempotency-Key,
// and refuses a body over 1 MiB with 413 rather than comparing part of it;
// either way the handler reads the whole body.
func TestIdempotencyFingerprint(t *testing.T) {
	body := []byte(`{"amount":10}`)
	r := httptest.NewRequest(http.MethodPost, "/orders", bytes.NewReader(body))
	orig := r.Body
	got, err := idempotencyFingerprint(r)
	require.NoError(t, err)
	assert.Empty(t, got, "a fingerprint without an Idempotency-Key")
	assert.Equal(t, orig, r.Body, "the body was read without an Idempotency-Key")

	r.Header.Set("Idempotency-Key", `"k-1"`)
	got, err = idempotencyFingerprint(r)
	require.NoError(t, err)
	sum := sha256.Sum256(body)
	assert.Equal(t, base64.RawURLEncoding.EncodeToString(sum[:]), got)
	rest, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	assert.Equal(t, body, rest, "the body for the handler")

	big := bytes.Repeat([]byte("x"), 1<<20+1)
	r = httptest.NewRequest(http.MethodPost, "/orders", bytes.NewReader(big))
	r.Header.Set("Idempotency-Key", `"k-1"`)
	_, err = idempotencyFingerprint(r)
	var ke *keyfuncs.Error
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, http.StatusRequestEntityTooLarge, ke.HTTPStatus())
	rest, err = io.ReadAll(r.Body)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(big, rest), "the body for the handler after 413")
}
