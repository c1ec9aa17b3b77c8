package guard

import (
	"bytes"
	"net/http"
	"reflect"
	"testing"
	"time"
)

// TestRecordRoundTrip: what encodeRecord writes, decodeRecord reads back,
// for a response with several values of a field, an empty body, and the
// mark of an unrecorded success.
func TestRecordRoundTrip(t *testing.T) {
	expires := time.UnixMilli(1_800_000_000_123)
	for _, resp := range []*Response{
		{Status: 201, Header: http.Header{"Location": {"/orders/7"}, "Vary": {"Accept", "Cookie"}}, Body: []byte(`{"id":7}`)},
		{Status: 303, Header: http.Header{"Location": {"/orders/8"}}},
		{Status: 204},
		nil,
	} {
		b := encodeRecord(resp, "fp", expires)
		rec, err := decodeRecord(b)
		if err != nil {
			t.Fatalf("%+v: %v", resp, err)
		}
		if rec.fingerprint != "fp" || !rec.expires.Equal(expires) {
			t.Fatalf("fingerprint %q, expires %v", rec.fingerprint, rec.expires)
		}
		if resp == nil {
			if rec.resp != nil || rec.kind != kindUnrecorded {
				t.Fatalf("unrecorded mark read as %+v", rec)
			}
			continue
		}
		got := rec.resp
		if got.Status != resp.Status || !bytes.Equal(got.Body, resp.Body) ||
			(len(resp.Header) > 0 && !reflect.DeepEqual(got.Header, resp.Header)) || len(got.Header) != len(resp.Header) {
			t.Fatalf("read %+v, wrote %+v", got, resp)
		}
	}
}

// TestRecordMalformed: truncations and corruptions of a record are refused,
// never half-read.
func TestRecordMalformed(t *testing.T) {
	b := encodeRecord(&Response{Status: 201, Header: http.Header{"Location": {"/x"}}, Body: []byte("body")}, "fp", time.Now())
	for i := range len(b) - len("body") {
		if _, err := decodeRecord(b[:i]); err == nil {
			t.Fatalf("a record cut to %d of %d bytes was accepted", i, len(b))
		}
	}
	for _, bad := range [][]byte{nil, {9, 1}, {1, 9}, {1, 2, 0, 0, 'x'}} {
		if _, err := decodeRecord(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

// FuzzDecodeRecord: decodeRecord never panics, and whatever it accepts
// encodes back to a record that decodes the same.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(&Response{Status: 201, Header: http.Header{"A": {"b"}}, Body: []byte("x")}, "fp", time.Now()))
	f.Add(encodeRecord(nil, "", time.Now()))
	f.Add([]byte{1, 1, 0, 0, 200, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeRecord(b)
		if err != nil {
			return
		}
		again, err := decodeRecord(encodeRecord(rec.resp, rec.fingerprint, rec.expires))
		if err != nil || again.fingerprint != rec.fingerprint || again.kind != rec.kind {
			t.Fatalf("re-encoded %+v: %+v %v", rec, again, err)
		}
	})
}
