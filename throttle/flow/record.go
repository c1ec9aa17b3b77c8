package flow

import (
	"encoding/binary"
	"errors"
	"time"
)

// A record is what a Replay key's first call leaves for its duplicates:
// version and kind (kindUnrecorded: an answer not kept), bytes; expires
// (the key's end, Unix ms, for Retry-After), uvarint; the fingerprint; then
// for kindAnswer the status, uvarint, the count of header lines, uvarint,
// each line's name and value, and the body. Strings are a uvarint length
// and bytes. A record that does not parse is never answered with.
const (
	recordVersion  = 1
	kindAnswer     = 1
	kindUnrecorded = 2
	// maxRecordHeaders bounds what a damaged record makes decode allocate.
	maxRecordHeaders = 256
)

type record struct {
	expires     time.Time
	fingerprint string
	answer      *Answer
}

var errBadRecord = errors.New("flow: malformed replay record")

// encodeRecord returns the record of a (nil: an answer not kept).
func encodeRecord(a *Answer, fp string, expires time.Time) []byte {
	kind, n, lines := byte(kindUnrecorded), 16+len(fp), 0
	if a != nil {
		kind, n = kindAnswer, n+len(a.Body)+8
		for k, vs := range a.Header {
			for _, v := range vs {
				n, lines = n+len(k)+len(v)+4, lines+1
			}
		}
	}
	b := append(make([]byte, 0, n), recordVersion, kind)
	b = binary.AppendUvarint(b, uint64(max(expires.UnixMilli(), 0)))
	b = appendString(b, fp)
	if a == nil {
		return b
	}
	b = binary.AppendUvarint(b, uint64(a.Status))
	b = binary.AppendUvarint(b, uint64(lines))
	for k, vs := range a.Header {
		for _, v := range vs {
			b = appendString(appendString(b, k), v)
		}
	}
	return append(b, a.Body...)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// decodeRecord never panics and allocates at most in proportion to len(b).
func decodeRecord(b []byte) (record, error) {
	if len(b) < 2 || b[0] != recordVersion || (b[1] != kindAnswer && b[1] != kindUnrecorded) {
		return record{}, errBadRecord
	}
	d := decoder{b: b[2:]}
	ms := d.uvarint()
	rec := record{fingerprint: d.str(), expires: time.UnixMilli(int64(ms))}
	if d.err == nil && b[1] == kindAnswer {
		rec.answer = d.answer()
	}
	if d.err != nil || ms > 1<<62 || (b[1] == kindUnrecorded && len(d.b) != 0) {
		return record{}, errBadRecord
	}
	return rec, nil
}

func (d *decoder) answer() *Answer {
	status, lines := d.uvarint(), d.uvarint()
	if d.err != nil || status < 100 || status > 999 || lines > maxRecordHeaders {
		d.err = errBadRecord
		return nil
	}
	a := &Answer{Status: int(status), Header: make(map[string][]string, lines)}
	for range lines {
		k, v := d.str(), d.str()
		if d.err != nil || k == "" {
			d.err = errBadRecord
			return nil
		}
		a.Header[k] = append(a.Header[k], v)
	}
	a.Body = d.b
	return a
}

// decoder reads a record's fields, keeping the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
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
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errBadRecord
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
