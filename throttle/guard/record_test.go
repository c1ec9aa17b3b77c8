package guard

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRecordRoundTrip: what encodeRecord writes, decodeRecord reads back,
// for a response with several values of a field, an empty body, and the
// mark of an unrecorded success.
func TestRecordRoundTrip(t *testing.T) {
	expires := time.UnixMilli(1_800_000_000_123)
	for _, resp := range []*response{
		{status: 201, header: http.Header{"Location": {"/orders/7"}, "Vary": {"Accept", "Cookie"}}, body: []byte(`{"id":7}`)},
		{status: 303, header: http.Header{"Location": {"/orders/8"}}},
		{status: 204},
		nil,
	} {
		b := encodeRecord(resp, "fp", expires)
		rec, err := decodeRecord(b)
		require.NoError(t, err, "%+v", resp)
		require.Equal(t, "fp", rec.fingerprint, "fingerprint")
		require.True(t, rec.expires.Equal(expires), "expires %v, want %v", rec.expires, expires)
		if resp == nil {
			require.Nil(t, rec.resp, "unrecorded mark read as %+v", rec)
			continue
		}
		got := rec.resp
		require.NotNil(t, got, "the response")
		require.Equal(t, resp.status, got.status, "status")
		require.Equal(t, string(resp.body), string(got.body), "body")
		require.Len(t, got.header, len(resp.header), "header %v", got.header)
		if len(resp.header) > 0 {
			require.Equal(t, resp.header, got.header, "header")
		}
	}
}

// TestRecordMalformed: truncations and corruptions of a record are refused,
// never half-read.
func TestRecordMalformed(t *testing.T) {
	b := encodeRecord(&response{status: 201, header: http.Header{"Location": {"/x"}}, body: []byte("body")}, "fp", time.Now())
	for i := range len(b) - len("body") {
		_, err := decodeRecord(b[:i])
		require.Error(t, err, "a record cut to %d of %d bytes was accepted", i, len(b))
	}
	for _, bad := range [][]byte{nil, {9, 1}, {1, 9}, {1, 2, 0, 0, 'x'}} {
		_, err := decodeRecord(bad)
		assert.Error(t, err, "%q accepted", bad)
	}
}

// FuzzDecodeRecord: decodeRecord never panics, and whatever it accepts
// encodes back to a record that decodes the same.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(&response{status: 201, header: http.Header{"A": {"b"}}, body: []byte("x")}, "fp", time.Now()))
	f.Add(encodeRecord(nil, "", time.Now()))
	f.Add([]byte{1, 1, 0, 0, 200, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeRecord(b)
		if err != nil {
			return
		}
		again, err := decodeRecord(encodeRecord(rec.resp, rec.fingerprint, rec.expires))
		require.NoError(t, err, "re-encoded %+v", rec)
		require.Equal(t, rec.fingerprint, again.fingerprint, "re-encoded %+v", rec)
		require.Equal(t, rec.resp == nil, again.resp == nil, "re-encoded %+v", rec)
	})
}
