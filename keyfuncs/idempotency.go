package keyfuncs

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/dunglas/httpsfv"

	"github.com/go-throttle/throttle/throttle/store"
)

// idempotencyHeader is the field that carries the client's idempotency key
// (draft-ietf-httpapi-idempotency-key-header), in canonical form.
const idempotencyHeader = "Idempotency-Key"

// maxIdempotencyKeyLength is the longest key accepted, in characters once
// unquoted. The draft sets no limit; this is the one Stripe documents, far
// more than a UUID needs, and a longer value is refused so that a client
// that puts something else in the header (a payload, a token) hears of it.
const maxIdempotencyKeyLength = 255

// DefaultIdempotencyBodyLimit is the most body bytes IdempotencyFingerprint
// hashes, and the limit to give the BodyHash fallback of IdempotencyKey. A
// longer body is refused with 413: clients that upload more should send
// the header, or the route should use a larger limit.
const DefaultIdempotencyBodyLimit = 1 << 20

// The errors about the header: constant texts that never quote the value,
// which may be a megabyte long or a secret sent by mistake.
var (
	errNoIdempotencyKey = idemError("missing")
	errIdemRepeated     = idemError("sent in more than one field line; send exactly one")
	errIdemList         = idemError("a list of keys; send exactly one")
	errIdemEmpty        = idemError("empty")
	errIdemTooLong      = idemError("longer than " + strconv.Itoa(maxIdempotencyKeyLength) + " characters")
	errIdemNotASCII     = idemError("contains a control character or a character outside printable ASCII")
	errIdemBareChar     = idemError(`malformed: an unquoted key may not contain spaces or double quotes`)
	errIdemUnclosed     = idemError("malformed: the quoted key has no closing double quote")
	errIdemEscape       = idemError(`malformed: only \" and \\ may be escaped in a quoted key`)
	errIdemParameters   = idemError("malformed parameters after the quoted key")
	errIdemTrailing     = idemError("malformed: unexpected characters after the quoted key")
)

func idemError(reason string) *Error { return badRequest(`header "Idempotency-Key"`, reason) }

// IdempotencyOption configures IdempotencyKey.
type IdempotencyOption func(*idempotencyConfig)

type idempotencyConfig struct {
	required bool
	fallback Func
}

// RequireIdempotencyKey makes the Idempotency-Key field mandatory, as the
// draft advises for an operation documented to need it: a request without
// it is refused with 400 and no fallback runs, whatever the order of the
// options. IdempotencyKey without a fallback already behaves this way; the
// option spells the requirement out where the key function is built.
func RequireIdempotencyKey() IdempotencyOption {
	return func(c *idempotencyConfig) { c.required = true }
}

// IdempotencyFallback keys a request that has no Idempotency-Key field on f
// instead, for example BodyHash(DefaultIdempotencyBodyLimit), which takes
// the same body sent twice for a retry. Only an absent field falls through:
// a malformed, empty or repeated one is still refused, so a client's broken
// key is never quietly replaced. It panics if f is nil.
func IdempotencyFallback(f Func) IdempotencyOption {
	if f == nil {
		panic("keyfuncs: IdempotencyFallback: nil key function")
	}
	return func(c *idempotencyConfig) { c.fallback = f }
}

// IdempotencyKey keys on the client's Idempotency-Key field, which marks a
// retried POST or PATCH as the same operation. The draft defines it as an
// RFC 9651 Item holding a String, parameters allowed and ignored:
//
//	Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"
//
// Many clients, following Stripe, send the key bare, which is taken whole
// (a semicolon included) as the same key as its quoted form:
//
//	Idempotency-Key: 8e03978e-40d5-43e8-bc93-6894a57f9324
//
// The key must be 1 to 255 characters of printable ASCII (a space only
// inside quotes), in exactly one field line. Anything else (several lines,
// a list, an empty or over-long key, a control character, a bad escape,
// malformed parameters) is refused with a 400 *Error with source
// `header "Idempotency-Key"` saying what is wrong, never quoting the value.
//
// A request without the field is refused with 400 ("missing"), or with
// IdempotencyFallback(f) keyed on f: the identity is then
// store.JoinID("0", key) with a key and store.JoinID("1", v) with f's v, so
// the two never share a lock. Prefer that option to FirstOf, which would
// also fall through on a malformed key and hide a broken client from it.
//
// A key is only as unique as the client made it: always scope it by user
// and route, with the identity the client cannot choose first and the key
// last, so that a request lacking a user or route is refused before its
// body is read:
//
//	keyfuncs.Join(user, keyfuncs.Method(), keyfuncs.Pattern(), keyfuncs.IdempotencyKey(
//		keyfuncs.IdempotencyFallback(keyfuncs.BodyHash(keyfuncs.DefaultIdempotencyBodyLimit))))
//
// gin and echo set no r.Pattern: join in the adapter's key function type
// with its route source (ginadapter.FullPath, echoadapter.Path) and wrap
// the request funcs with its Request.
func IdempotencyKey(opts ...IdempotencyOption) Func {
	var c idempotencyConfig
	for _, o := range opts {
		o(&c)
	}
	if c.required || c.fallback == nil {
		return idempotencyKey
	}
	fallback := c.fallback
	return func(r *http.Request) (string, error) {
		k, err := idempotencyKey(r)
		if !errors.Is(err, errNoIdempotencyKey) {
			if err != nil {
				return "", err
			}
			return store.JoinID("0", k), nil
		}
		v, err := fallback(r)
		if err != nil {
			return "", err
		}
		return store.JoinID("1", v), nil
	}
}

// idempotencyKey reads the request's one Idempotency-Key field line. Spaces
// around the value are ignored, as RFC 9651 ignores them around an Item.
func idempotencyKey(r *http.Request) (string, error) {
	lines := r.Header[idempotencyHeader]
	switch {
	case len(lines) == 0:
		return "", errNoIdempotencyKey
	case len(lines) > 1:
		return "", errIdemRepeated
	}
	v := strings.Trim(lines[0], " ")
	switch {
	case v == "":
		return "", errIdemEmpty
	case v[0] != '"':
		return bareKey(v)
	case isPlainString(v):
		return checkLength(v[1 : len(v)-1])
	}
	item, err := httpsfv.UnmarshalItem([]string{v})
	if err != nil {
		return "", refusal(v, err)
	}
	k, _ := item.Value.(string) // v starts with a double quote: a String
	return checkLength(k)
}

// bareKey checks a key sent without quotes: printable ASCII without
// spaces, double quotes or commas, taken whole.
func bareKey(v string) (string, error) {
	if len(v) > maxIdempotencyKeyLength {
		return "", errIdemTooLong
	}
	for i := range len(v) {
		switch c := v[i]; {
		case c == ',':
			return "", errIdemList
		case c == ' ' || c == '"':
			return "", errIdemBareChar
		case c < 0x20 || c > 0x7e:
			return "", errIdemNotASCII
		}
	}
	return v, nil
}

// isPlainString reports whether v is an RFC 9651 String without escapes or
// parameters, whose content is then v without its quotes: the usual key,
// read without httpsfv's allocations.
func isPlainString(v string) bool {
	if len(v) < 2 || v[len(v)-1] != '"' {
		return false
	}
	for i := 1; i < len(v)-1; i++ {
		if c := v[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func checkLength(k string) (string, error) {
	switch {
	case k == "":
		return "", errIdemEmpty
	case len(k) > maxIdempotencyKeyLength:
		return "", errIdemTooLong
	}
	return k, nil
}

// refusal tells why httpsfv refused v: a fault inside the quotes, a list
// of keys, characters after the Item, or else malformed parameters.
func refusal(v string, err error) error {
	if fault := stringFault(v); fault != nil {
		return fault
	}
	if list, lerr := httpsfv.UnmarshalList([]string{v}); lerr == nil && len(list) > 1 {
		return errIdemList
	}
	var ue *httpsfv.UnmarshalError
	if errors.As(err, &ue) && ue.Unwrap() == nil { // the Item parsed, text followed
		return errIdemTrailing
	}
	return errIdemParameters
}

// stringFault returns what is wrong between the quotes of v, or nil when
// the String that v starts with is well formed.
func stringFault(v string) error {
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"':
			return nil
		case c == '\\' && i+1 == len(v):
			return errIdemUnclosed
		case c == '\\':
			if i++; v[i] != '"' && v[i] != '\\' {
				return errIdemEscape
			}
		case c < 0x20 || c > 0x7e:
			return errIdemNotASCII
		}
	}
	return errIdemUnclosed
}
