package guard

import (
	"encoding/binary"
	"errors"
	"net/http"
	"time"
)

// A record is what the first request of a Replay key leaves for its
// duplicates, in a compact binary form of this package's own (the store
// never looks inside):
//
//	version    1 byte: recordVersion
//	kind       1 byte: kindResponse, or kindUnrecorded for a success whose
//	           response could not be kept (too large, streamed, hijacked)
//	expires    uvarint: when the key's window ends, Unix milliseconds, for
//	           the Retry-After of a kindUnrecorded record
//	fingerprint uvarint length, bytes: the request body's fingerprint
//	status     uvarint (kindResponse only)
//	headers    uvarint count, then name and value, each uvarint length and
//	           bytes, one pair per value (kindResponse only)
//	body       the rest (kindResponse only)
//
// A record that does not parse (written by a later version, or damaged) is
// answered as kindUnrecorded: the duplicate is turned away, never answered
// with something that might not be the original's response.
const (
	recordVersion  = 1
	kindResponse   = 1
	kindUnrecorded = 2
)

// maxRecordHeaders bounds the header lines a record may hold, so that a
// damaged record cannot make decode allocate without limit.
const maxRecordHeaders = 256

// record is a decoded record.
type record struct {
	kind        byte
	expires     time.Time
	fingerprint string
	resp        *Response
}

var errBadRecord = errors.New("guard: malformed replay record")

// encodeRecord returns the record of a success: resp, or, when resp is nil,
// the mark of a response that could not be kept.
func encodeRecord(resp *Response, fingerprint string, expires time.Time) []byte {
	n := 16 + len(fingerprint)
	if resp != nil {
		n += len(resp.Body) + 8
		for k, vs := range resp.Header {
			for _, v := range vs {
				n += len(k) + len(v) + 4
			}
		}
	}
	b := make([]byte, 0, n)
	kind := byte(kindUnrecorded)
	if resp != nil {
		kind = kindResponse
	}
	b = append(b, recordVersion, kind)
	b = binary.AppendUvarint(b, uint64(max(expires.UnixMilli(), 0)))
	b = appendBytes(b, fingerprint)
	if resp == nil {
		return b
	}
	b = binary.AppendUvarint(b, uint64(resp.Status))
	lines := 0
	for _, vs := range resp.Header {
		lines += len(vs)
	}
	b = binary.AppendUvarint(b, uint64(lines))
	for k, vs := range resp.Header {
		for _, v := range vs {
			b = appendBytes(b, k)
			b = appendBytes(b, v)
		}
	}
	return append(b, resp.Body...)
}

func appendBytes(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeRecord parses a record written by encodeRecord. It never panics,
// whatever b holds, and allocates at most in proportion to len(b).
func decodeRecord(b []byte) (record, error) {
	var rec record
	if len(b) < 2 || b[0] != recordVersion || (b[1] != kindResponse && b[1] != kindUnrecorded) {
		return rec, errBadRecord
	}
	rec.kind = b[1]
	d := decoder{b: b[2:]}
	ms := d.uvarint()
	rec.fingerprint = d.str()
	if d.err != nil || ms > 1<<62 {
		return record{}, errBadRecord
	}
	rec.expires = time.UnixMilli(int64(ms))
	if rec.kind == kindUnrecorded {
		if len(d.b) != 0 {
			return record{}, errBadRecord
		}
		return rec, nil
	}
	resp, err := d.response()
	if err != nil {
		return record{}, err
	}
	rec.resp = resp
	return rec, nil
}

// response decodes a recorded response: status, header lines, body.
func (d *decoder) response() (*Response, error) {
	status := d.uvarint()
	lines := d.uvarint()
	if d.err != nil || status < 100 || status > 999 || lines > maxRecordHeaders {
		return nil, errBadRecord
	}
	resp := &Response{Status: int(status), Header: make(http.Header, lines)}
	for range lines {
		k, v := d.str(), d.str()
		if d.err != nil || k == "" {
			return nil, errBadRecord
		}
		resp.Header[k] = append(resp.Header[k], v)
	}
	resp.Body = d.b
	return resp, nil
}

// decoder reads a record's fields, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errBadRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.err = errBadRecord
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
