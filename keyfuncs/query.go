package keyfuncs

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-throttle/throttle/throttle/store"
)

// Query keys on the values of the URL query parameter name, in order,
// joined with store.JoinID (even a single one), so that ?id=a&id=b and
// ?id=a:b differ. Only the URL is read, never a form body. A parameter
// that is absent or whose values are all empty gives a 400 *Error with
// source `query "<name>"`, and so does a malformed %-escape, which would
// otherwise be dropped and make two different requests look alike.
func Query(name string) Func {
	source := "query " + strconv.Quote(name)
	errMissing := missing(source)
	errEscape := badRequest(source, "malformed escape")
	return func(r *http.Request) (string, error) {
		if r.URL == nil {
			return "", errMissing
		}
		var buf [4]string
		vals, nonEmpty := buf[:0], false
		for q := r.URL.RawQuery; q != ""; {
			var pair string
			pair, q, _ = strings.Cut(q, "&")
			k, v, _ := strings.Cut(pair, "=")
			if k, err := url.QueryUnescape(k); err != nil || k != name {
				continue
			}
			v, err := url.QueryUnescape(v)
			if err != nil {
				return "", errEscape
			}
			vals, nonEmpty = append(vals, v), nonEmpty || v != ""
		}
		if !nonEmpty {
			return "", errMissing
		}
		return store.JoinID(vals...), nil
	}
}
