// Package keyfuncs builds the identity a request is throttled under: who
// (a user, a client address) and what (a route, a method, the body). A Func
// takes an *http.Request, so net/http, gin and echo build the same keys:
//
//	// one submission per user and route, whatever the path values
//	// (net/http; gin: ginadapter.FullPath(), echo: echoadapter.Path())
//	key := keyfuncs.Join(keyfuncs.ContextValue(userKey{}), keyfuncs.Method(), keyfuncs.Pattern())
package keyfuncs

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/go-throttle/throttle/internal/storekit"
)

// Func returns the identity a request is throttled under, or an error,
// typically a *Error, when the request does not carry one.
type Func func(r *http.Request) (string, error)

// Error tells why a Func could not build an identity, so that the request
// gets a 4xx rather than a key shared by everybody. Source and Reason never
// hold a value from the request, so it is safe to show the client; a Func
// may return one shared *Error, so treat it as read-only.
type Error struct {
	Status int    // 400, or 413 for a body over the hashing limit; 0 means 400
	Source string // what was missing or bad, such as `header "X-User-ID"`
	Reason string // what was wrong with Source, such as "missing"
}

// Error returns "keyfuncs: <source>: <reason>".
func (e *Error) Error() string { return "keyfuncs: " + e.Source + ": " + e.Reason }

// HTTPStatus returns the status to answer with: Status, or 400 if unset.
func (e *Error) HTTPStatus() int { return cmp.Or(e.Status, http.StatusBadRequest) }

func badRequest(source, reason string) *Error {
	return &Error{Status: http.StatusBadRequest, Source: source, Reason: reason}
}

func missing(source string) *Error { return badRequest(source, "missing") }

func nonEmpty(source string, get func(r *http.Request) string) Func {
	errMissing := missing(source)
	return func(r *http.Request) (string, error) {
		if v := get(r); v != "" {
			return v, nil
		}
		return "", errMissing
	}
}

// Static keys every request on s: one lock for the whole policy, or a label.
func Static(s string) Func {
	return func(*http.Request) (string, error) { return s, nil }
}

// Header keys on the first value of the header name, such as the X-User-ID
// a gateway sets: trust only a header your infrastructure sets or strips.
func Header(name string) Func {
	key := textproto.CanonicalMIMEHeaderKey(name)
	errMissing := missing("header " + strconv.Quote(name))
	return func(r *http.Request) (string, error) {
		if v := r.Header[key]; len(v) > 0 && v[0] != "" {
			return v[0], nil
		}
		return "", errMissing
	}
}

// Cookie keys on the cookie name, for a browser form, which cannot send a
// header. It names a browser, not a user: put it after the user in FirstOf.
func Cookie(name string) Func {
	return nonEmpty("cookie "+strconv.Quote(name), func(r *http.Request) string {
		if c, err := r.Cookie(name); err == nil {
			return c.Value
		}
		return ""
	})
}

// Query keys on the values of the URL query parameter name; a malformed
// %-escape is refused, lest two requests look alike.
func Query(name string) Func {
	source := "query " + strconv.Quote(name)
	errMissing, errEscape := missing(source), badRequest(source, "malformed escape")
	return func(r *http.Request) (string, error) {
		if r.URL == nil {
			return "", errMissing
		}
		var buf [4]string
		vals, found := buf[:0], false
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
			vals, found = append(vals, v), found || v != ""
		}
		if !found {
			return "", errMissing
		}
		return storekit.JoinID(vals...), nil
	}
}

// PathValue keys on the wildcard name of the ServeMux route, such as {id}.
func PathValue(name string) Func {
	return nonEmpty("path value "+strconv.Quote(name), func(r *http.Request) string { return r.PathValue(name) })
}

// Pattern keys on the http.ServeMux pattern matched, one limit per route;
// the mux sets it as it dispatches, so wrap each route, not the mux. gin
// and echo set no r.Pattern, so there it refuses every request (400): use
// ginadapter.FullPath() or echoadapter.Path() instead. A Replay guard
// needs neither: it scopes its keys by method and route itself.
func Pattern() Func {
	return nonEmpty("route pattern", func(r *http.Request) string { return r.Pattern })
}

// Method keys on the request method, GET if empty, as in net/http.
func Method() Func {
	return func(r *http.Request) (string, error) { return cmp.Or(r.Method, http.MethodGet), nil }
}

// ContextValue keys on r.Context().Value(key), read as FromValue reads it,
// such as the user ID an authentication middleware stored there.
func ContextValue(key any) Func {
	return func(r *http.Request) (string, error) {
		return FromValue(r.Context().Value(key), "context value")
	}
}

// FromValue turns a value a middleware stored (a context value, gin's or
// echo's c.Get) into an identity: a string or integer kind, or a
// fmt.Stringer; any other type is refused rather than lumping users
// together. source names the value in the *Error.
func FromValue(v any, source string) (string, error) {
	s, rv := "", reflect.ValueOf(v)
	switch str, ok := v.(fmt.Stringer); {
	case ok && (rv.Kind() != reflect.Pointer || !rv.IsNil()):
		s = str.String()
	case ok || v == nil: // a nil pointer or interface: missing
	case rv.CanInt() || rv.CanUint() || rv.Kind() == reflect.String:
		s = fmt.Sprint(v)
	default:
		return "", badRequest(source, "unsupported type (want a string, fmt.Stringer or integer)")
	}
	if s == "" {
		return "", missing(source)
	}
	return s, nil
}

// FromIP turns an address a framework computed (gin's c.ClientIP, echo's
// c.RealIP) into RemoteIP's identity; source names it in the *Error.
func FromIP(s, source string) (string, error) {
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return a.Unmap().String(), nil
	} else if s == "" {
		return "", missing(source)
	}
	return "", badRequest(source, "not an IP address")
}

// FirstOf keys on the first of fs that succeeds, as storekit.JoinID(index,
// value), so that a user named "192.0.2.1" never shares a key with the
// client at that address, or returns the last error. FirstOf and Join take
// any key function type and panic if fs is empty or holds nil.
func FirstOf[F ~func(A) (string, error), A any](fs ...F) F {
	fs = checked("FirstOf", fs)
	return func(a A) (string, error) {
		var err error
		for i, f := range fs {
			var v string
			if v, err = f(a); err == nil {
				return storekit.JoinID(strconv.Itoa(i), v), nil
			}
		}
		return "", err
	}
}

// Join keys on all of fs together, joined with storekit.JoinID so that two
// lists never give one identity, or returns the first error.
func Join[F ~func(A) (string, error), A any](fs ...F) F {
	fs = checked("Join", fs)
	return func(a A) (string, error) {
		var buf [8]string
		vals := buf[:0]
		for _, f := range fs {
			v, err := f(a)
			if err != nil {
				return "", err
			}
			vals = append(vals, v)
		}
		return storekit.JoinID(vals...), nil
	}
}

func checked[F any](name string, fs []F) []F {
	if len(fs) == 0 {
		panic("keyfuncs: " + name + " needs at least one key function")
	}
	for i, f := range fs {
		if reflect.ValueOf(f).IsNil() {
			panic("keyfuncs: " + name + ": key function " + strconv.Itoa(i) + " is nil")
		}
	}
	return append([]F(nil), fs...)
}

var errBodyTooLarge = &Error{Status: http.StatusRequestEntityTooLarge, Source: "body", Reason: "longer than the hashing limit"}

// BodyHash keys on the SHA-256 of the body (unpadded base64url): with a
// user, it tells the same submission sent twice. A body or Content-Length
// over maxBytes (checked before an "Expect: 100-continue" upload) gives a
// 413 *Error; the body is put back for the handler. Put it last in a Join,
// which stops at the first error; a negative maxBytes panics.
func BodyHash(maxBytes int64) Func {
	if maxBytes < 0 {
		panic(fmt.Sprintf("keyfuncs: BodyHash(%d): maxBytes must not be negative", maxBytes))
	}
	maxBytes = min(maxBytes, math.MaxInt64-1) // maxBytes+1 are read
	return func(r *http.Request) (string, error) {
		switch {
		case r.Body == nil || r.Body == http.NoBody:
			return hashString(nil), nil
		case r.ContentLength > maxBytes:
			return "", errBodyTooLarge
		}
		orig := r.Body
		var buf bytes.Buffer
		_, err := buf.ReadFrom(io.LimitReader(orig, maxBytes+1))
		read := buf.Bytes()
		if err == nil && int64(len(read)) <= maxBytes { // orig is at EOF
			r.Body = &restoredBody{Reader: bytes.NewReader(read), Closer: orig}
			return hashString(read), nil
		}
		r.Body = &restoredBody{Reader: io.MultiReader(bytes.NewReader(read), orig), Closer: orig}
		var mbe *http.MaxBytesError
		if err != nil && !errors.As(err, &mbe) {
			return "", badRequest("body", "unreadable")
		}
		return "", errBodyTooLarge
	}
}

func hashString(b []byte) string {
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// restoredBody is what was read, then the rest.
type restoredBody struct {
	io.Reader
	io.Closer
}
