package keyfuncs

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/dunglas/httpsfv"

	"github.com/go-throttle/throttle/internal/storekit"
)

const (
	idempotencySource       = `header "Idempotency-Key"`
	maxIdempotencyKeyLength = 255 // Stripe's limit; the draft sets none
)

// Errors never quote the value, which may be long or a secret.
var (
	errNoIdempotencyKey = badRequest(idempotencySource, "missing")
	errIdemRepeated     = badRequest(idempotencySource, "sent in more than one field line; send exactly one")
	errIdemList         = badRequest(idempotencySource, "a list of keys; send exactly one")
	errIdemEmpty        = badRequest(idempotencySource, "empty")
	errIdemTooLong      = badRequest(idempotencySource, "longer than "+strconv.Itoa(maxIdempotencyKeyLength)+" characters")
	errIdemNotASCII     = badRequest(idempotencySource, "contains a control character or a character outside printable ASCII")
	errIdemBareChar     = badRequest(idempotencySource, `malformed: an unquoted key may not contain spaces or double quotes`)
	errIdemUnclosed     = badRequest(idempotencySource, "malformed: the quoted key has no closing double quote")
	errIdemEscape       = badRequest(idempotencySource, `malformed: only \" and \\ may be escaped in a quoted key`)
	errIdemParameters   = badRequest(idempotencySource, "malformed parameters after the quoted key")
	errIdemTrailing     = badRequest(idempotencySource, "malformed: unexpected characters after the quoted key")
)

// IdempotencyKey keys on the client's Idempotency-Key field, which marks a
// retried POST as the same operation: an RFC 9651 String (parameters
// ignored) or, as Stripe's clients send it, a bare value; any other value,
// or one not 1 to 255 printable ASCII characters, gets a 400 *Error saying
// why. Without the field, a request is refused if fallback is nil, else
// keyed on fallback (the kinds never collide): put it last, so that
// BodyHash(1<<20) as fallback reads the body only when needed.
func IdempotencyKey(fallback Func) Func {
	if fallback == nil {
		return idempotencyKey
	}
	return func(r *http.Request) (string, error) {
		k, err := idempotencyKey(r)
		if errors.Is(err, errNoIdempotencyKey) {
			if k, err = fallback(r); err == nil {
				return storekit.JoinID("1", k), nil
			}
		}
		if err != nil {
			return "", err
		}
		return storekit.JoinID("0", k), nil
	}
}

func idempotencyKey(r *http.Request) (string, error) {
	lines := r.Header["Idempotency-Key"]
	switch {
	case len(lines) == 0:
		return "", errNoIdempotencyKey
	case len(lines) > 1:
		return "", errIdemRepeated
	}
	v := strings.Trim(lines[0], " ")
	if v == "" || v[0] != '"' {
		return bareKey(v)
	}
	end, escaped, err := scanString(v)
	switch {
	case err != nil:
		return "", err
	case end == len(v) && !escaped: // the usual key, read without httpsfv's allocations
		return checkLength(v[1 : end-1])
	}
	item, err := httpsfv.UnmarshalItem([]string{v})
	if err != nil {
		return "", refusal(v, err)
	}
	k, _ := item.Value.(string) // v starts with a well-formed String
	return checkLength(k)
}

func bareKey(v string) (string, error) {
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
	return checkLength(v)
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

// scanString returns the end and escapes of the String v starts with.
func scanString(v string) (end int, escaped bool, err error) {
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\' && i+1 == len(v):
			return 0, false, errIdemUnclosed
		case c == '\\':
			if i, escaped = i+1, true; v[i] != '"' && v[i] != '\\' {
				return 0, false, errIdemEscape
			}
		case c < 0x20 || c > 0x7e:
			return 0, false, errIdemNotASCII
		}
	}
	return 0, false, errIdemUnclosed
}

// refusal tells why httpsfv refused v, whose String is well formed.
func refusal(v string, err error) error {
	if list, lerr := httpsfv.UnmarshalList([]string{v}); lerr == nil && len(list) > 1 {
		return errIdemList
	}
	var ue *httpsfv.UnmarshalError
	if errors.As(err, &ue) && ue.Unwrap() == nil { // the Item parsed, text followed
		return errIdemTrailing
	}
	return errIdemParameters
}
