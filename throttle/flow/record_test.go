package flow

import (
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
	for _, resp := range []*Answer{
		{Status: 201, Header: map[string][]string{"Location": {"/orders/7"}, "Vary": {"Accept", "Cookie"}}, Body: []byte(`{"id":7}`)},
		{Status: 303, Header: map[string][]string{"Location": {"/orders/8"}}},
		{Status: 204},
		nil,
	} {
		b := encodeRecord(resp, "fp", expires)
		rec, err := decodeRecord(b)
		require.NoError(t, err, "%+v", resp)
		require.Equal(t, "fp", rec.fingerprint, "fingerprint")
		require.True(t, rec.expires.Equal(expires), "expires %v, want %v", rec.expires, expires)
		if resp == nil {
			require.Nil(t, rec.answer, "unrecorded mark read as %+v", rec)
			continue
		}
		got := rec.answer
		require.NotNil(t, got, "the response")
		require.Equal(t, resp.Status, got.Status, "status")
		require.Equal(t, string(resp.Body), string(got.Body), "body")
		require.Len(t, got.Header, len(resp.Header), "header %v", got.Header)
		if len(resp.Header) > 0 {
			require.Equal(t, resp.Header, got.Header, "header")
		}
	}
}

// TestRecordMalformed: truncations and corruptions of a record are refused,
// never half-read.
func TestRecordMalformed(t *testing.T) {
	b := encodeRecord(&Answer{Status: 201, Header: map[string][]string{"Location": {"/x"}}, Body: []byte("body")}, "fp", time.Now())
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
	f.Add(encodeRecord(&Answer{Status: 201, Header: map[string][]string{"A": {"b"}}, Body: []byte("x")}, "fp", time.Now()))
	f.Add(encodeRecord(nil, "", time.Now()))
	f.Add([]byte{1, 1, 0, 0, 200, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeRecord(b)
		if err != nil {
			return
		}
		again, err := decodeRecord(encodeRecord(rec.answer, rec.fingerprint, rec.expires))
		require.NoError(t, err, "re-encoded %+v", rec)
		require.Equal(t, rec.fingerprint, again.fingerprint, "re-encoded %+v", rec)
		require.Equal(t, rec.answer == nil, again.answer == nil, "re-encoded %+v", rec)
	})
}
