package adaptertest

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/dunglas/httpsfv"
	"github.com/stretchr/testify/require"
)

// The RateLimit-Policy and RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers-11 are Structured Field Lists
// (RFC 9651). The suite parses them with httpsfv rather than comparing
// strings, so that a value a client's parser would reject (an unquoted
// name, t="3", r=-1, a second member) fails the check, and a value that
// is the same field spelt otherwise does not.

// Field is the one member of a RateLimit-Policy or RateLimit field, with
// its parameters as typed values. An absent parameter is zero, with HasW
// or HasT false for w and t.
type Field struct {
	// Name is the member's bare item: the policy name, a String.
	Name string

	// Q is the quota (RateLimit-Policy "q"), W the window in seconds
	// ("w", when HasW), QU the quota unit ("qu", "" when absent) and
	// Burst the vendor parameter "throttle-burst" (0 when absent).
	Q     int64
	W     int64
	HasW  bool
	QU    string
	Burst int64

	// R is the remaining quota (RateLimit "r") and T the effective window
	// in seconds ("t", when HasT).
	R    int64
	T    int64
	HasT bool
}

// Header names, canonical as http.Header keeps them.
const (
	PolicyHeader    = "RateLimit-Policy"
	RateLimitHeader = "RateLimit"
)

// quotaUnits are the "qu" values draft -11 registers.
var quotaUnits = map[string]bool{"requests": true, "content-bytes": true, "concurrent-requests": true}

// member parses the field values (all lines of one field) as a List, and
// returns the parameters of its only member, which must be an Item whose
// bare item is the String name.
func member(field string, values []string, name string) (*httpsfv.Params, error) {
	if len(values) == 0 {
		return nil, fmt.Errorf("%s is absent", field)
	}
	list, err := httpsfv.UnmarshalList(values)
	if err != nil {
		return nil, fmt.Errorf("%s %q is not a Structured Field List: %w", field, values, err)
	}
	if len(list) != 1 {
		return nil, fmt.Errorf("%s %q has %d members, want 1", field, values, len(list))
	}
	item, ok := list[0].(httpsfv.Item)
	if !ok {
		return nil, fmt.Errorf("%s %q: the member is a %T, want an Item", field, values, list[0])
	}
	s, ok := item.Value.(string)
	if !ok {
		return nil, fmt.Errorf("%s %q: the policy name is a %T, want a String", field, values, item.Value)
	}
	if s != name {
		return nil, fmt.Errorf("%s %q names policy %q, want %q", field, values, s, name)
	}
	return item.Params, nil
}

// integer returns the parameter value v of key as an Integer of at least
// lowest.
func integer(field, key string, v any, lowest int64) (int64, error) {
	n, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("%s parameter %s=%v is a %T, want an Integer", field, key, v, v)
	}
	if n < lowest {
		return 0, fmt.Errorf("%s parameter %s=%d is below %d", field, key, n, lowest)
	}
	return n, nil
}

// ParsePolicyField parses the values of a RateLimit-Policy field (all its
// lines, as http.Header.Values gives them) that must hold exactly one
// quota policy, named name: q a non-negative Integer (required), w an
// Integer of at least 1, qu a registered unit as a String, throttle-burst
// an Integer of at least 1. Any other parameter is an error: the library
// sends no other, and a partition key (pk) would let a client tell
// another's partition.
func ParsePolicyField(values []string, name string) (Field, error) {
	params, err := member(PolicyHeader, values, name)
	if err != nil {
		return Field{}, err
	}
	f := Field{Name: name}
	hasQ := false
	for _, key := range params.Names() {
		v, _ := params.Get(key)
		switch key {
		case "q":
			f.Q, err = integer(PolicyHeader, key, v, 0)
			hasQ = true
		case "w":
			f.W, err = integer(PolicyHeader, key, v, 1)
			f.HasW = true
		case "qu":
			s, ok := v.(string)
			switch {
			case !ok:
				err = fmt.Errorf("%s parameter qu=%v is a %T, want a String", PolicyHeader, v, v)
			case !quotaUnits[s]:
				err = fmt.Errorf("%s parameter qu=%q is not a registered quota unit", PolicyHeader, s)
			}
			f.QU = s
		case "throttle-burst":
			f.Burst, err = integer(PolicyHeader, key, v, 1)
		default:
			err = fmt.Errorf("%s has an unexpected parameter %q", PolicyHeader, key)
		}
		if err != nil {
			return Field{}, fmt.Errorf("%q: %w", values, err)
		}
	}
	if !hasQ {
		return Field{}, fmt.Errorf("%s %q has no q parameter", PolicyHeader, values)
	}
	return f, nil
}

// ParseLimitField parses the values of a RateLimit field that must hold
// exactly one member, for policy name: r a non-negative Integer
// (required) and t a non-negative Integer. Any other parameter is an
// error.
func ParseLimitField(values []string, name string) (Field, error) {
	params, err := member(RateLimitHeader, values, name)
	if err != nil {
		return Field{}, err
	}
	f := Field{Name: name}
	hasR := false
	for _, key := range params.Names() {
		v, _ := params.Get(key)
		switch key {
		case "r":
			f.R, err = integer(RateLimitHeader, key, v, 0)
			hasR = true
		case "t":
			f.T, err = integer(RateLimitHeader, key, v, 0)
			f.HasT = true
		default:
			err = fmt.Errorf("%s has an unexpected parameter %q", RateLimitHeader, key)
		}
		if err != nil {
			return Field{}, fmt.Errorf("%q: %w", values, err)
		}
	}
	if !hasR {
		return Field{}, fmt.Errorf("%s %q has no r parameter", RateLimitHeader, values)
	}
	return f, nil
}

// PolicyOf parses h's RateLimit-Policy field, failing the test unless it
// is valid (ParsePolicyField) and names the policy name.
func PolicyOf(t testing.TB, h http.Header, name string) Field {
	t.Helper()
	f, err := ParsePolicyField(h.Values(PolicyHeader), name)
	require.NoError(t, err)
	return f
}

// LimitOf parses h's RateLimit field, failing the test unless it is valid
// (ParseLimitField) and names the policy name.
func LimitOf(t testing.TB, h http.Header, name string) Field {
	t.Helper()
	f, err := ParseLimitField(h.Values(RateLimitHeader), name)
	require.NoError(t, err)
	return f
}

// CheckPolicy fails the test unless h's RateLimit-Policy field is valid
// and says exactly want (its Name, Q, W and HasW, QU and Burst).
func CheckPolicy(t testing.TB, h http.Header, want Field) {
	t.Helper()
	require.Equal(t, want, PolicyOf(t, h, want.Name), "RateLimit-Policy %q", h.Values(PolicyHeader))
}

// WindowPolicy is the RateLimit-Policy of a policy allowing q requests per
// w seconds (Dedupe, Cooldown: q=1; Quota: its Limit, Burst equal).
func WindowPolicy(name string, q, w int64) Field {
	return Field{Name: name, Q: q, W: w, HasW: true}
}

// ConcurrencyPolicy is the RateLimit-Policy of an Exclusive policy: one
// request at a time, no window.
func ConcurrencyPolicy(name string) Field {
	return Field{Name: name, Q: 1, QU: "concurrent-requests"}
}

// CheckLimit fails the test unless h's RateLimit field is valid, names
// name, has r and a t within minT..maxT, and returns it.
func CheckLimit(t testing.TB, h http.Header, name string, r, minT, maxT int64) Field {
	t.Helper()
	f := LimitOf(t, h, name)
	v := h.Values(RateLimitHeader)
	require.Equal(t, r, f.R, "RateLimit %q: r", v)
	require.True(t, f.HasT, "RateLimit %q: no t", v)
	require.GreaterOrEqual(t, f.T, minT, "RateLimit %q: t", v)
	require.LessOrEqual(t, f.T, maxT, "RateLimit %q: t", v)
	return f
}

// CheckLimitNoT fails the test unless h's RateLimit field is valid, names
// name, has r and no t.
func CheckLimitNoT(t testing.TB, h http.Header, name string, r int64) {
	t.Helper()
	f := LimitOf(t, h, name)
	require.Equal(t, r, f.R, "RateLimit %q: r", h.Values(RateLimitHeader))
	require.False(t, f.HasT, "RateLimit %q: a t", h.Values(RateLimitHeader))
}

// NoLimit fails the test when h has a RateLimit field: an answer that says
// nothing about the client's quota (a bad key, a store outage, a request
// let through unmetered) must not claim any.
func NoLimit(t testing.TB, h http.Header) {
	t.Helper()
	require.Empty(t, h.Values(RateLimitHeader), "RateLimit")
}

// CheckRejectedLimit checks the RateLimit field of a request turned away
// as contended: r (0, or what remains of a Quota) and t equal to the
// Retry-After the answer gives, which it returns.
func CheckRejectedLimit(t testing.TB, h http.Header, name string, r int64) int {
	t.Helper()
	ra := RetryAfter(t, h)
	f := LimitOf(t, h, name)
	v := h.Values(RateLimitHeader)
	require.Equal(t, r, f.R, "RateLimit %q: r", v)
	require.True(t, f.HasT, "RateLimit %q: no t", v)
	require.Equal(t, int64(ra), f.T, "RateLimit %q: t, against Retry-After", v)
	return ra
}

// CheckRateLimit checks the RateLimit-Policy and RateLimit fields of a
// contended rejection: policy is the whole RateLimit-Policy value
// expected, compared parsed, not as a string; RateLimit must name the
// same policy with r=0 and 1 <= t <= maxT.
func CheckRateLimit(t testing.TB, h http.Header, name, policy string, maxT int) {
	t.Helper()
	want, err := ParsePolicyField([]string{policy}, name)
	require.NoError(t, err, "the expected RateLimit-Policy")
	CheckPolicy(t, h, want)
	CheckLimit(t, h, name, 0, 1, int64(maxT))
}
