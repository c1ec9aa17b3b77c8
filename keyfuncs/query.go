package keyfuncs

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-throttle/throttle/throttle/store"
)

// Query keys on the values of the URL query parameter name (?name=...), in
// the order they appear, joined with store.JoinID (even a single one, whose
// separators are then escaped), so that ?id=a&id=b and ?id=a:b give
// different identities. The query is
// scanned for name only, without building url.Values for the whole query.
//
// Only the URL is read, never a POST form body. A parameter that is absent,
// or whose values are all empty, gives a 400 *Error with source
// `query "<name>"`; so does a value with a malformed %-escape, which would
// otherwise be dropped and make two different requests look alike.
func Query(name string) Func {
	source := "query " + strconv.Quote(name)
	errMissing := missing(source)
	return func(r *http.Request) (string, error) {
		var buf [4]string
		vals := buf[:0]
		nonEmpty := false
		if r.URL != nil {
			q := r.URL.RawQuery
			for q != "" {
				var pair string
				pair, q, _ = strings.Cut(q, "&")
				k, v, _ := strings.Cut(pair, "=")
				k, err := url.QueryUnescape(k)
				if err != nil || k != name {
					continue
				}
				if v, err = url.QueryUnescape(v); err != nil {
					return "", &Error{Status: http.StatusBadRequest, Source: source, Reason: "malformed escape"}
				}
				vals = append(vals, v)
				nonEmpty = nonEmpty || v != ""
			}
		}
		if !nonEmpty {
			return "", errMissing
		}
		return store.JoinID(vals...), nil
	}
}
