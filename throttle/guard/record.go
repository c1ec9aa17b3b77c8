package guard

import (
	"encoding/binary"
	"errors"
	"net/http"
	"time"
)

// A record is what a Replay key's first request leaves for its duplicates
// (the store never looks inside):
//
//	version     1 byte: recordVersion
//	kind        1 byte: kindResponse, or kindUnrecorded for a response not kept
//	expires     uvarint: the key's end, Unix ms (a kindUnrecorded Retry-After)
//	fingerprint uvarint length, bytes
//	status      uvarint (kindResponse only, as what follows)
//	headers     uvarint count of lines, then name and value, each uvarint length, bytes
//	body        the rest
//
// A record that does not parse is never answered with.
const (
	recordVersion  = 1
	kindResponse   = 1
	kindUnrecorded = 2
	// maxRecordHeaders bounds what a damaged record makes decode allocate.
	maxRecordHeaders = 256
)

type record struct {
	kind        byte
	expires     time.Time
	fingerprint string
	resp        *response
}

var errBadRecord = errors.New("guard: malformed replay record")

// encodeRecord returns the record of resp, or of a response not kept when
// resp is nil.
func encodeRecord(resp *response, fp string, expires time.Time) []byte {
	kind, n, lines := byte(kindUnrecorded), 16+len(fp), 0
	if resp != nil {
		kind, n = kindResponse, n+len(resp.body)+8
		for k, vs := range resp.header {
			for _, v := range vs {
				n, lines = n+len(k)+len(v)+4, lines+1
			}
		}
	}
	b := append(make([]byte, 0, n), recordVersion, kind)
	b = binary.AppendUvarint(b, uint64(max(expires.UnixMilli(), 0)))
	b = appendBytes(b, fp)
	if resp == nil {
		return b
	}
	b = binary.AppendUvarint(b, uint64(resp.status))
	b = binary.AppendUvarint(b, uint64(lines))
	for k, vs := range resp.header {
		for _, v := range vs {
			b = appendBytes(appendBytes(b, k), v)
		}
	}
	return append(b, resp.body...)
}

func appendBytes(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// decodeRecord parses a record. It never panics and allocates at most in
// proportion to len(b).
func decodeRecord(b []byte) (record, error) {
	if len(b) < 2 || b[0] != recordVersion || (b[1] != kindResponse && b[1] != kindUnrecorded) {
		return record{}, errBadRecord
	}
	d := decoder{b: b[2:]}
	ms := d.uvarint()
	rec := record{kind: b[1], fingerprint: d.str()}
	if d.err != nil || ms > 1<<62 || (rec.kind == kindUnrecorded && len(d.b) != 0) {
		return record{}, errBadRecord
	}
	rec.expires = time.UnixMilli(int64(ms))
	if rec.kind == kindUnrecorded {
		return rec, nil
	}
	status, lines := d.uvarint(), d.uvarint()
	if d.err != nil || status < 100 || status > 999 || lines > maxRecordHeaders {
		return record{}, errBadRecord
	}
	rec.resp = &response{status: int(status), header: make(http.Header, lines)}
	for range lines {
		k, v := d.str(), d.str()
		if d.err != nil || k == "" {
			return record{}, errBadRecord
		}
		rec.resp.header[k] = append(rec.resp.header[k], v)
	}
	rec.resp.body = d.b
	return rec, nil
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
