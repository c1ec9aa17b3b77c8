package keyfuncs

import (
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-throttle/throttle/throttle/store"
)

// idempotencyHeader is the field that carries the client's idempotency key
// (draft-ietf-httpapi-idempotency-key-header), in canonical form so that it
// can index http.Header directly.
const idempotencyHeader = "Idempotency-Key"

// MaxIdempotencyKeyLength is the longest idempotency key IdempotencyKey
// accepts, in characters once unquoted. The draft sets no limit; 255 is the
// one Stripe documents for its keys, and far more than a UUID or any other
// random key needs. A longer value is refused rather than keyed on, so that
// a client that puts something else in the header (a payload, a token)
// hears about it. (The stored key stays short either way: components over
// store.MaxComponent are hashed there.)
const MaxIdempotencyKeyLength = 255

// DefaultIdempotencyBodyLimit is the most body bytes Idempotent hashes when
// a request comes without an Idempotency-Key. A longer keyless body is
// refused with 413. Clients that upload more should send the header, which
// Idempotent honours without reading the body. Otherwise pass
// IdempotencyFallback(BodyHash(n)) with a larger n.
const DefaultIdempotencyBodyLimit = 1 << 20

// idempotencySource names the header in every error about it.
const idempotencySource = `header "Idempotency-Key"`

// ErrNoIdempotencyKey is the error IdempotencyKey returns when a request has
// no Idempotency-Key field at all: a *Error with status 400, source
// `header "Idempotency-Key"` and reason "missing". It is one shared value, so
// errors.Is(err, ErrNoIdempotencyKey) tells "the client sent no key" apart
// from "the client sent a key that is malformed" (another *Error with status
// 400). A caller can then key the request some other way or refuse it.
// Like every *Error it is read-only.
var ErrNoIdempotencyKey error = &Error{Status: http.StatusBadRequest, Source: idempotencySource, Reason: "missing"}

// The reasons a present Idempotency-Key is refused. Each one is a constant
// text and never quotes the value. A client can send anything in the header,
// including a secret it should not have sent or a megabyte of it, and the
// error goes to logs and back to the client.
var (
	errIdemRepeated   = idemError("sent in more than one field line; send exactly one")
	errIdemList       = idemError("a list of keys; send exactly one")
	errIdemEmpty      = idemError("empty")
	errIdemTooLong    = idemError("longer than " + strconv.Itoa(MaxIdempotencyKeyLength) + " characters")
	errIdemNotASCII   = idemError("contains a control character or a character outside printable ASCII")
	errIdemBareChar   = idemError(`malformed: an unquoted key may not contain spaces or double quotes`)
	errIdemUnclosed   = idemError("malformed: the quoted key has no closing double quote")
	errIdemEscape     = idemError(`malformed: only \" and \\ may be escaped in a quoted key`)
	errIdemParameters = idemError("malformed parameters after the quoted key")
	errIdemTrailing   = idemError("malformed: unexpected characters after the quoted key")
)

func idemError(reason string) *Error {
	return &Error{Status: http.StatusBadRequest, Source: idempotencySource, Reason: reason}
}

// IdempotencyOption configures IdempotencyKey and Idempotent.
type IdempotencyOption func(*idempotencyConfig)

type idempotencyConfig struct {
	required bool
	fallback Func
}

// RequireIdempotencyKey makes the Idempotency-Key field mandatory: a request
// without it gets ErrNoIdempotencyKey (400), and no fallback runs, whatever
// the order of the options. This is what the draft advises for an
// operation documented to need the header. IdempotencyKey without a
// fallback already behaves this way; the option matters for Idempotent,
// which falls back to a body hash by default, and for spelling the
// requirement out where the key function is built.
func RequireIdempotencyKey() IdempotencyOption {
	return func(c *idempotencyConfig) { c.required = true }
}

// IdempotencyFallback keys a request that has no Idempotency-Key field at
// all on f instead, for example BodyHash(n), which treats the same body sent
// twice as a retry. Only an absent field falls through to f. A field that is
// present but malformed, empty or repeated is still refused with 400, so a
// client's broken key is never quietly replaced by something else.
// RequireIdempotencyKey cancels the fallback. IdempotencyFallback panics if
// f is nil.
func IdempotencyFallback(f Func) IdempotencyOption {
	if f == nil {
		panic("keyfuncs: IdempotencyFallback: nil key function")
	}
	return func(c *idempotencyConfig) { c.fallback = f }
}

// IdempotencyKey keys on the client's Idempotency-Key request field
// (draft-ietf-httpapi-idempotency-key-header). A client sends the field to
// mark a retry of a POST or PATCH as the same operation. The identity is
// the key's text. Alone, that key is only as unique as the client made it,
// so always scope it by user and route (see Idempotent, which does).
//
// The draft defines the field as a Structured Field Item whose value is a
// String (RFC 9651, Section 3.3.3):
//
//	Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"
//
// The key is the text between the quotes, with \" and \\ unescaped.
// Parameters after the string (";name=value") are allowed by RFC 9651. They
// are checked for syntax and ignored. Many clients, following Stripe's API,
// send the key bare, without quotes:
//
//	Idempotency-Key: 8e03978e-40d5-43e8-bc93-6894a57f9324
//
// A bare value is taken whole as the key. It may hold any printable ASCII
// character except spaces, double quotes and commas, so a semicolon there is
// part of the key, not a parameter. The quoted "abc" and the bare abc name
// the same key.
//
// The key must be 1 to MaxIdempotencyKeyLength characters of printable
// ASCII (0x20 to 0x7E; a space only inside quotes). The draft forbids more
// than one Idempotency-Key field, so the request must carry exactly one
// field line.
// Anything else is refused with a 400 *Error naming `header "Idempotency-Key"`
// and what is wrong: several field lines, a comma-separated list, an empty
// value (also ""), a key that is too long, a control or non-ASCII
// character, an escape other than \" and \\, a missing closing quote, or
// malformed parameters. The error never quotes the value. The value may be
// long, or a secret the client sent by mistake, and the error is logged and
// shown to the client.
//
// A request without the field gets ErrNoIdempotencyKey (400). With
// IdempotencyFallback(f) it is keyed on f instead. The identity is then
// store.JoinID("0", key) for a request with a key and store.JoinID("1", v) for
// one keyed on f's v. That is the shape FirstOf uses, so a key and a fallback
// value never share a lock.
//
// Prefer IdempotencyFallback to FirstOf(IdempotencyKey(), f): FirstOf falls
// through on any error, so it would key a malformed Idempotency-Key on f as
// though the client had sent none, and a client with a broken key generator
// would never hear about it.
func IdempotencyKey(opts ...IdempotencyOption) Func {
	var c idempotencyConfig
	for _, o := range opts {
		o(&c)
	}
	fallback := c.fallback
	if c.required {
		fallback = nil
	}
	if fallback == nil {
		return idempotencyKey
	}
	return func(r *http.Request) (string, error) {
		k, err := idempotencyKey(r)
		switch {
		case err == nil:
			return store.JoinID("0", k), nil
		case err != ErrNoIdempotencyKey:
			return "", err
		}
		v, err := fallback(r)
		if err != nil {
			return "", err
		}
		return store.JoinID("1", v), nil
	}
}

// Idempotent is the key function for an endpoint that takes Idempotency-Key,
// scoped so that one client's key never matches another client's request,
// nor the same client's request to another route. It is
//
//	Join(user, Method(), Pattern(), IdempotencyKey(IdempotencyFallback(BodyHash(DefaultIdempotencyBodyLimit))))
//
// with opts applied to IdempotencyKey after that fallback.
//
// user identifies the authenticated client, such as ContextValue(userKey{})
// or Header("X-User-ID") when a gateway sets it: an identity the client
// cannot choose. Idempotency keys come from clients and are unique only
// among one client's requests, and the draft's security considerations ask
// for a lookup key that joins the client's key with what only the server
// knows about the client. Keyed on the idempotency key alone, a client that
// guesses or learns another's key would be throttled as that other client,
// and, once responses are replayed, would be sent that client's response.
// Method and Pattern (the http.ServeMux pattern the request matched, such
// as "POST /orders") keep the same key on different routes apart; Method
// matters for patterns without one, such as "/carts".
//
// A request without the header is keyed on the SHA-256 of its body (at most
// DefaultIdempotencyBodyLimit bytes, 413 beyond), so that a double click
// still counts as one submission. IdempotencyFallback(f) replaces that
// fallback; RequireIdempotencyKey refuses such requests with
// ErrNoIdempotencyKey instead. A malformed header is always refused with
// 400. The idempotency key comes last in the Join, so a request without a
// user or a route is refused before its body is read.
//
// r.Pattern is set by the ServeMux when it dispatches to a route's
// handler, so install the middleware on each route, inside the mux:
//
//	mux.Handle("POST /orders", nethttp.Middleware(limiter, keyfuncs.Idempotent(user))(orders))
//
// A middleware wrapped around the whole mux runs before routing, sees no
// pattern, and answers every request 400 with source "route pattern".
//
// gin and echo do not set r.Pattern, so Idempotent refuses every request
// there. Build the same key in the adapter's own key function type, with
// the adapter's route source in place of Pattern (neither includes the
// method):
//
//	idem := keyfuncs.IdempotencyKey(keyfuncs.IdempotencyFallback(keyfuncs.BodyHash(keyfuncs.DefaultIdempotencyBodyLimit)))
//
//	// gin: the route from c.FullPath(), such as "/orders/:id"
//	keyfuncs.Join(ginadapter.Value("user"), ginadapter.Request(keyfuncs.Method()), ginadapter.FullPath(), ginadapter.Request(idem))
//
//	// echo: the route from c.Path(), such as "/orders/:id"
//	keyfuncs.Join(echoadapter.Value("user"), echoadapter.Request(keyfuncs.Method()), echoadapter.Path(), echoadapter.Request(idem))
//
// Idempotent panics if user is nil.
func Idempotent(user Func, opts ...IdempotencyOption) Func {
	if user == nil {
		panic("keyfuncs: Idempotent: nil user key function")
	}
	all := make([]IdempotencyOption, 0, len(opts)+1)
	all = append(all, IdempotencyFallback(BodyHash(DefaultIdempotencyBodyLimit)))
	all = append(all, opts...)
	return Join(user, Method(), Pattern(), IdempotencyKey(all...))
}

// BodyFingerprint returns the SHA-256 of r's body as unpadded base64url (43
// characters), the idempotency fingerprint of the draft. Store it with the
// response of the first request under an idempotency key. If a later request
// comes with the same key and a different fingerprint, the client reused the
// key for another payload, which the draft says to refuse with 422 rather
// than replay a response that does not belong to it.
//
// It reads the body as BodyHash does, with the same limits: at most maxBytes
// are hashed, a longer body (or a Content-Length above maxBytes) gives a 413
// *Error, and a body that fails to read a 400 one. The body is put back for
// the handler in every case. A nil body and http.NoBody give the
// fingerprint of the empty body. The fingerprint of a body equals its
// BodyHash identity. BodyFingerprint panics if maxBytes is negative.
func BodyFingerprint(r *http.Request, maxBytes int64) (string, error) {
	return BodyHash(maxBytes)(r)
}

// idempotencyKey reads and checks the request's Idempotency-Key field.
func idempotencyKey(r *http.Request) (string, error) {
	lines := r.Header[idempotencyHeader]
	switch len(lines) {
	case 0:
		return "", ErrNoIdempotencyKey
	case 1:
	default:
		return "", errIdemRepeated
	}
	k, err := parseIdempotencyKey(lines[0])
	if err != nil {
		return "", err
	}
	return k, nil
}

// parseIdempotencyKey parses one field value: an RFC 9651 Item whose bare
// item is a String, with optional parameters, or a bare key. Surrounding
// spaces are ignored, as RFC 9651 ignores them around an Item.
func parseIdempotencyKey(v string) (string, *Error) {
	v = strings.Trim(v, " ")
	switch {
	case v == "":
		return "", errIdemEmpty
	case v[0] != '"':
		return parseBareKey(v)
	}
	end, n, err := sfString(v)
	if err != nil {
		return "", err
	}
	rest, ok := sfSkipParams(v[end:])
	switch {
	case !ok:
		return "", errIdemParameters
	case rest != "" && strings.TrimLeft(rest, " ")[0] == ',':
		return "", errIdemList
	case rest != "":
		return "", errIdemTrailing
	case n == 0:
		return "", errIdemEmpty
	case n > MaxIdempotencyKeyLength:
		return "", errIdemTooLong
	}
	if n == end-2 { // no escapes: the key is the text between the quotes
		return v[1 : end-1], nil
	}
	var b strings.Builder
	b.Grow(n)
	for i := 1; i < end-1; i++ {
		if v[i] == '\\' {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String(), nil
}

// parseBareKey checks a key sent without quotes: printable ASCII without
// spaces, double quotes or commas, taken whole.
func parseBareKey(v string) (string, *Error) {
	if len(v) > MaxIdempotencyKeyLength {
		return "", errIdemTooLong
	}
	for i := 0; i < len(v); i++ {
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

// sfString scans the sf-string that s starts with (s[0] is '"'). It
// returns the index just past the closing quote and the number of
// characters the string holds once unescaped.
func sfString(s string) (end, n int, err *Error) {
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return i + 1, n, nil
		case c == '\\':
			i++
			if i == len(s) {
				return 0, 0, errIdemUnclosed
			}
			if s[i] != '"' && s[i] != '\\' {
				return 0, 0, errIdemEscape
			}
		case c < 0x20 || c > 0x7e:
			return 0, 0, errIdemNotASCII
		}
		n++
	}
	return 0, 0, errIdemUnclosed
}

// sfSkipParams skips RFC 9651 parameters (Section 4.2.3.2) at the start of
// s and returns what follows them; ok is false if they are malformed.
func sfSkipParams(s string) (rest string, ok bool) {
	for s != "" && s[0] == ';' {
		s = strings.TrimLeft(s[1:], " ")
		if s == "" || !sfLower(s[0]) && s[0] != '*' {
			return "", false
		}
		i := 1
		for i < len(s) && sfKeyChar(s[i]) {
			i++
		}
		s = s[i:]
		if s != "" && s[0] == '=' {
			if s, ok = sfSkipBareItem(s[1:]); !ok {
				return "", false
			}
		}
	}
	return s, true
}

// sfSkipBareItem skips the RFC 9651 bare item (Section 4.2.3.1) that s starts
// with, a parameter's value, and returns what follows it.
func sfSkipBareItem(s string) (rest string, ok bool) {
	if s == "" {
		return "", false
	}
	switch c := s[0]; {
	case c == '"':
		end, _, err := sfString(s)
		if err != nil {
			return "", false
		}
		return s[end:], true
	case c == '-' || sfDigit(c):
		rest, _, ok = sfSkipNumber(s)
		return rest, ok
	case c == '?':
		if len(s) < 2 || s[1] != '0' && s[1] != '1' {
			return "", false
		}
		return s[2:], true
	case c == '*' || sfAlpha(c):
		i := 1
		for i < len(s) && sfTokenChar(s[i]) {
			i++
		}
		return s[i:], true
	case c == ':':
		return sfSkipByteSeq(s)
	case c == '@':
		rest, integer, ok := sfSkipNumber(s[1:])
		return rest, ok && integer
	case c == '%':
		return sfSkipDisplayString(s)
	}
	return "", false
}

// sfSkipNumber skips an Integer or Decimal (RFC 9651, Section 4.2.4) and
// reports which it was.
func sfSkipNumber(s string) (rest string, integer, ok bool) {
	i := 0
	if s != "" && s[0] == '-' {
		i++
	}
	if i == len(s) || !sfDigit(s[i]) {
		return "", false, false
	}
	start, dot := i, -1
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' && dot < 0 {
			if i-start > 12 {
				return "", false, false
			}
			dot = i
			continue
		}
		if !sfDigit(c) {
			break
		}
		if n := i + 1 - start; dot < 0 && n > 15 || n > 16 {
			return "", false, false
		}
	}
	if dot >= 0 && (dot == i-1 || i-dot-1 > 3) {
		return "", false, false
	}
	return s[i:], dot < 0, true
}

// sfSkipByteSeq skips a Byte Sequence (RFC 9651, Section 4.2.7), whose
// content must decode as padded standard base64, as Go's encoding/base64
// (and so httpsfv) requires. RFC 9651 lets parsers be lenient about
// padding, but the value is ignored here, so the choice only decides which
// malformed parameters are refused.
func sfSkipByteSeq(s string) (rest string, ok bool) {
	end := strings.IndexByte(s[1:], ':')
	if end < 0 {
		return "", false
	}
	b64 := s[1 : 1+end]
	if len(b64)%4 != 0 {
		return "", false
	}
	pad := len(b64) - len(strings.TrimRight(b64, "="))
	if pad > 2 {
		return "", false
	}
	for i := 0; i < len(b64)-pad; i++ {
		if c := b64[i]; !sfAlpha(c) && !sfDigit(c) && c != '+' && c != '/' {
			return "", false
		}
	}
	return s[end+2:], true
}

// sfSkipDisplayString skips a Display String (RFC 9651, Section 4.2.10): %"
// then printable ASCII other than % and ", or %xx with lowercase hex,
// decoding to valid UTF-8, then ".
func sfSkipDisplayString(s string) (rest string, ok bool) {
	if len(s) < 2 || s[1] != '"' {
		return "", false
	}
	var buf [64]byte
	decoded := buf[:0]
	for i := 2; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return s[i+1:], utf8.Valid(decoded)
		case c == '%':
			if i+2 >= len(s) {
				return "", false
			}
			hi, ok1 := sfLowerHex(s[i+1])
			lo, ok2 := sfLowerHex(s[i+2])
			if !ok1 || !ok2 {
				return "", false
			}
			decoded = append(decoded, hi<<4|lo)
			i += 2
		case c < 0x20 || c > 0x7e:
			return "", false
		default:
			decoded = append(decoded, c)
		}
	}
	return "", false
}

func sfLowerHex(c byte) (byte, bool) {
	switch {
	case sfDigit(c):
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

func sfDigit(c byte) bool { return '0' <= c && c <= '9' }
func sfLower(c byte) bool { return 'a' <= c && c <= 'z' }
func sfAlpha(c byte) bool { return sfLower(c) || 'A' <= c && c <= 'Z' }

// sfKeyChar reports whether c may follow the first character of a
// parameter name.
func sfKeyChar(c byte) bool {
	return sfLower(c) || sfDigit(c) || c == '_' || c == '-' || c == '.' || c == '*'
}

// sfTokenChar reports whether c may follow the first character of a Token:
// an HTTP tchar, ':' or '/'.
func sfTokenChar(c byte) bool {
	if sfAlpha(c) || sfDigit(c) {
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~:/", c) >= 0
}
