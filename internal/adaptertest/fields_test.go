package adaptertest

import (
	"fmt"
	"net/http"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParsePolicyField(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   Field
	}{
		{[]string{`"search";q=3;w=60`}, Field{Name: "search", Q: 3, W: 60, HasW: true}},
		// The same field spelt otherwise: parameter order and spaces
		// after ';' do not matter.
		{[]string{`"search";w=60; q=3`}, Field{Name: "search", Q: 3, W: 60, HasW: true}},
		{[]string{`"search";q=3;w=60;throttle-burst=5`}, Field{Name: "search", Q: 3, W: 60, HasW: true, Burst: 5}},
		{[]string{`"search";q=0;w=1`}, Field{Name: "search", W: 1, HasW: true}},
		{[]string{`"search";q=1;qu="concurrent-requests"`}, Field{Name: "search", Q: 1, QU: "concurrent-requests"}},
	} {
		got, err := ParsePolicyField(c.values, "search")
		if assert.NoError(t, err, "ParsePolicyField(%q)", c.values) {
			assert.Equal(t, c.want, got, "ParsePolicyField(%q)", c.values)
		}
	}
	for _, bad := range [][]string{
		nil,
		{""},
		{`search;q=3;w=60`},                      // a Token, not a String
		{`%"search";q=3;w=60`},                   // a Display String
		{`("search");q=3;w=60`},                  // an Inner List
		{`"other";q=3;w=60`},                     // another policy
		{`"search";q="3";w=60`},                  // q a String
		{`"search";q=-3;w=60`},                   // q negative
		{`"search";q=3.0;w=60`},                  // q a Decimal
		{`"search";w=60`},                        // no q
		{`"search";q=3;w=0`},                     // w zero
		{`"search";q=3;w`},                       // w a Boolean
		{`"search";q=3;qu=requests`},             // qu a Token
		{`"search";q=3;qu="bytes"`},              // qu not registered
		{`"search";q=3;throttle-burst=0`},        // burst zero
		{`"search";q=3;pk=:c2VjcmV0:`},           // a partition key
		{`"search";q=3;Q=3`},                     // not a key in SF
		{`"search" ;q=3`},                        // space before the parameters
		{`"search";q=3;;w=60`},                   // empty parameter
		{`"search;q=3`},                          // unterminated String
		{`"search";q=3,`},                        // trailing comma
		{`"search";q=3, "search";q=3`},           // two members
		{`"search";q=3;w=60`, `"other";q=1;w=1`}, // two lines, two members
	} {
		got, err := ParsePolicyField(bad, "search")
		assert.Error(t, err, "ParsePolicyField(%q) = %+v", bad, got)
	}
}

func TestParseLimitField(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   Field
	}{
		{[]string{`"search";r=2;t=3`}, Field{Name: "search", R: 2, T: 3, HasT: true}},
		{[]string{`"search";t=3;r=2`}, Field{Name: "search", R: 2, T: 3, HasT: true}},
		{[]string{`"search";r=0;t=0`}, Field{Name: "search", HasT: true}},
		{[]string{`"search";r=0`}, Field{Name: "search"}},
	} {
		got, err := ParseLimitField(c.values, "search")
		if assert.NoError(t, err, "ParseLimitField(%q)", c.values) {
			assert.Equal(t, c.want, got, "ParseLimitField(%q)", c.values)
		}
	}
	for _, bad := range [][]string{
		nil,
		{`search;r=2;t=3`},                // unquoted name
		{`"search";r=2;t="3"`},            // t a String
		{`"search";r=-1;t=3`},             // r negative
		{`"search";r=2;t=-1`},             // t negative
		{`"search";r=2.5;t=3`},            // r a Decimal
		{`"search";r;t=3`},                // r a Boolean
		{`"search";t=3`},                  // no r
		{`"search";r=2;t=3;q=5`},          // a policy's parameter
		{`"other";r=2;t=3`},               // another policy
		{`"search";r=2;t=3, "other";r=0`}, // two members
		{`"search";r=2;t=3 x`},            // trailing garbage
	} {
		got, err := ParseLimitField(bad, "search")
		assert.Error(t, err, "ParseLimitField(%q) = %+v", bad, got)
	}
}

// fatalTB is a testing.TB that records a failure, and ends the goroutine
// on FailNow, Fatal and Fatalf, as the real ones do: enough for the
// checks, which fail with testify's require (Errorf, then FailNow). Any
// other method panics.
type fatalTB struct {
	testing.TB
	msg string
}

func (*fatalTB) Helper() {}

func (*fatalTB) Name() string { return "fatalTB" } // testify names the test in its message

func (f *fatalTB) Errorf(format string, args ...any) {
	if f.msg == "" {
		f.msg = fmt.Sprintf(format, args...)
	}
}

func (f *fatalTB) FailNow() {
	if f.msg == "" {
		f.msg = "failed"
	}
	runtime.Goexit()
}

func (f *fatalTB) Fatal(args ...any) { f.Errorf("%s", fmt.Sprint(args...)); f.FailNow() }

func (f *fatalTB) Fatalf(format string, args ...any) { f.Errorf(format, args...); f.FailNow() }

// failure runs check with a fatalTB on a goroutine of its own and returns
// the failure message, or "" when check passed.
func failure(check func(testing.TB)) string {
	tb := &fatalTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(tb)
	}()
	<-done
	return tb.msg
}

func header(policy, rateLimit, retryAfter string) http.Header {
	h := http.Header{}
	for name, v := range map[string]string{"RateLimit-Policy": policy, "RateLimit": rateLimit, "Retry-After": retryAfter} {
		if v != "" {
			h.Set(name, v)
		}
	}
	return h
}

// TestCheckRateLimit proves that the suite's checks fail on malformed
// fields, and pass on well-formed ones however they are spelt.
func TestCheckRateLimit(t *testing.T) {
	const policy = `"submit";q=1;w=5`
	check := func(h http.Header) func(testing.TB) {
		return func(tb testing.TB) { CheckRateLimit(tb, h, "submit", policy, 5) }
	}
	for _, h := range []http.Header{
		header(policy, `"submit";r=0;t=3`, ""),
		header(`"submit";w=5;q=1`, `"submit";t=5;r=0`, ""),
	} {
		assert.Empty(t, failure(check(h)), "%v", h)
	}
	for _, h := range []http.Header{
		header(policy, `submit;r=0;t=3`, ""),     // unquoted name
		header(policy, `"submit";r=0;t="3"`, ""), // t a String
		header(policy, `"submit";r=-1;t=3`, ""),  // r negative
		header(policy, `"submit";r=1;t=3`, ""),   // r not 0
		header(policy, `"submit";r=0;t=6`, ""),   // t above the window
		header(policy, `"submit";r=0;t=0`, ""),   // t below 1
		header(policy, `"submit";r=0`, ""),       // no t
		header(policy, `"job";r=0;t=3`, ""),      // another policy
		header(policy, "", ""),                   // no RateLimit
		header(`submit;q=1;w=5`, `"submit";r=0;t=3`, ""),
		header(`"submit";q=1;w="5"`, `"submit";r=0;t=3`, ""),
		header(`"submit";q=1`, `"submit";r=0;t=3`, ""),
		header(`"submit";q=1;w=5;throttle-burst=2`, `"submit";r=0;t=3`, ""),
		header("", `"submit";r=0;t=3`, ""),
	} {
		assert.NotEmpty(t, failure(check(h)), "CheckRateLimit passed %v", h)
	}
	// The expected value itself must be well-formed.
	assert.NotEmpty(t, failure(func(tb testing.TB) {
		CheckRateLimit(tb, header(policy, `"submit";r=0;t=3`, ""), "submit", `submit;q=1;w=5`, 5)
	}), "CheckRateLimit accepted a malformed expected policy")
}

func TestCheckRejectedLimit(t *testing.T) {
	check := func(h http.Header, r int64) func(testing.TB) {
		return func(tb testing.TB) { CheckRejectedLimit(tb, h, "search", r) }
	}
	assert.Empty(t, failure(check(header(`"search";q=3;w=60`, `"search";r=0;t=20`, "20"), 0)))
	assert.Empty(t, failure(check(header(`"search";q=3;w=60`, `"search";r=2;t=7`, "7"), 2)))
	for _, c := range []struct {
		h http.Header
		r int64
	}{
		{header("", `"search";r=0;t=19`, "20"), 0},   // t is not Retry-After
		{header("", `"search";r=0`, "20"), 0},        // no t
		{header("", `"search";r=0;t=20`, ""), 0},     // no Retry-After
		{header("", `"search";r=1;t=20`, "20"), 0},   // r
		{header("", `"search";r=0;t="20"`, "20"), 0}, // t a String
		{header("", "", "20"), 0},                    // no RateLimit
	} {
		assert.NotEmpty(t, failure(check(c.h, c.r)), "CheckRejectedLimit passed %v", c.h)
	}
}

func TestNoLimitAndCheckLimitNoT(t *testing.T) {
	assert.NotEmpty(t, failure(func(tb testing.TB) { NoLimit(tb, header(`"job";q=1`, `"job";r=0`, "")) }),
		"NoLimit passed a RateLimit field")
	assert.Empty(t, failure(func(tb testing.TB) { NoLimit(tb, header(`"job";q=1`, "", "")) }))
	assert.Empty(t, failure(func(tb testing.TB) { CheckLimitNoT(tb, header("", `"job";r=0`, ""), "job", 0) }))
	for _, v := range []string{`"job";r=0;t=30`, `job;r=0`, `"job";r=1`, `"job";r=0;w=30`} {
		assert.NotEmpty(t, failure(func(tb testing.TB) { CheckLimitNoT(tb, header("", v, ""), "job", 0) }),
			"CheckLimitNoT passed %q", v)
	}
}
