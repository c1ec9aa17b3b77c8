package keyfuncs

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
)

const idemSource = `header "Idempotency-Key"`

// idemReq builds a POST /orders request whose Idempotency-Key field has the
// given lines, set as is (no trimming, no canonicalisation of the values).
func idemReq(lines ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/orders", nil)
	if lines != nil {
		r.Header["Idempotency-Key"] = lines
	}
	return r
}

// bodyLimit is the examples' limit on the body hashed without a key.
const bodyLimit = 1 << 20

// idempotent is the key IdempotencyKey's documentation advises: the user,
// the route and the client's key, or the body's hash without one.
func idempotent(user Func) Func { return idempotentOr(user, BodyHash(bodyLimit)) }

func idempotentOr(user, fallback Func) Func {
	return Join(user, Method(), Pattern(), IdempotencyKey(fallback))
}

// idemErrors is every error IdempotencyKey may return about the header:
// constant texts, none of which holds a request value.
var idemErrors = []error{
	errNoIdempotencyKey, errIdemRepeated, errIdemList, errIdemEmpty, errIdemTooLong, errIdemNotASCII,
	errIdemBareChar, errIdemUnclosed, errIdemEscape, errIdemParameters, errIdemTrailing,
}

func TestIdempotencySource(t *testing.T) {
	for _, err := range idemErrors {
		wantErr(t, err, http.StatusBadRequest, idemSource)
	}

}

func TestIdempotencyKeyValid(t *testing.T) {
	long := strings.Repeat("k", maxIdempotencyKeyLength)
	tests := []struct {
		name, value, want string
	}{
		{"draft example", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`, "8e03978e-40d5-43e8-bc93-6894a57f9324"},
		{"bare (Stripe)", `8e03978e-40d5-43e8-bc93-6894a57f9324`, "8e03978e-40d5-43e8-bc93-6894a57f9324"},
		{"one character", `"x"`, "x"},
		{"one bare character", `x`, "x"},
		{"spaces, commas and semicolons inside quotes", `"a b, c; d=e"`, "a b, c; d=e"},
		{"only spaces inside quotes", `"   "`, "   "},
		{"escaped quote and backslash", `"a\"b\\c"`, `a"b\c`},
		{"only escapes", `"\\\""`, `\"`},
		{"surrounding spaces", `   "abc"  `, "abc"},
		{"surrounding spaces, bare", `  abc `, "abc"},
		{"a parameter", `"abc";v=1`, "abc"},
		{"every kind of parameter", `"abc";b;i=-12;d=1.5;s="x;y\"";t=*tok/x:y;bs=:YWJj:;f=?0;dt=@1700000000;ds=%"caf%c3%a9"`, "abc"},
		{"space after the semicolon", `"abc"; v=1; w`, "abc"},
		{"parameter key characters", `"abc";*a0_-.*=?1`, "abc"},
		{"longest numbers", `"abc";i=-999999999999999;d=999999999999.999`, "abc"},
		{"empty parameter string and bytes", `"abc";s="";b=::;ds=%""`, "abc"},
		{"bare with a semicolon is taken whole", `abc;v=1`, "abc;v=1"},
		{"bare with every allowed symbol", "!#$%&'()*+-./:;<=>?@[\\]^_`{|}~", "!#$%&'()*+-./:;<=>?@[\\]^_`{|}~"},
		{"longest quoted", `"` + long + `"`, long},
		{"longest bare", long, long},
		{"longest escaped", `"` + strings.Repeat(`\"`, maxIdempotencyKeyLength) + `"`, strings.Repeat(`"`, maxIdempotencyKeyLength)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := IdempotencyKey(nil)(idemReq(tt.value))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			if strings.HasPrefix(strings.TrimLeft(tt.value, " "), `"`) {
				// The quoted forms are RFC 9651 Items with a String.
				it, err := httpsfv.UnmarshalItem([]string{tt.value})
				require.NoError(t, err, "httpsfv")
				assert.Equal(t, tt.want, it.Value, "httpsfv")
			}
		})
	}
}

func TestIdempotencyKeyInvalid(t *testing.T) {
	const s = "s3cr3t-0123456789"
	tests := []struct {
		name  string
		lines []string
		want  error
	}{
		{"two field lines", []string{`"` + s + `"`, `"other"`}, errIdemRepeated},
		{"two equal field lines", []string{s, s}, errIdemRepeated},
		{"an empty second line", []string{`"` + s + `"`, ""}, errIdemRepeated},
		{"list", []string{`"` + s + `", "other"`}, errIdemList},
		{"list without space", []string{`"` + s + `","other"`}, errIdemList},
		{"list after parameters", []string{`"` + s + `";v=1 , "other"`}, errIdemList},
		{"bare list", []string{s + ",other"}, errIdemList},
		{"bare list with space", []string{s + ", other"}, errIdemList},
		{"empty string", []string{`""`}, errIdemEmpty},
		{"empty string with a parameter", []string{`"";v=1`}, errIdemEmpty},
		{"empty value", []string{""}, errIdemEmpty},
		{"only spaces", []string{"   "}, errIdemEmpty},
		{"too long", []string{`"` + s + strings.Repeat("k", maxIdempotencyKeyLength+1-len(s)) + `"`}, errIdemTooLong},
		{"too long bare", []string{s + strings.Repeat("k", maxIdempotencyKeyLength+1-len(s))}, errIdemTooLong},
		{"too long once unescaped", []string{`"` + strings.Repeat(`\\`, maxIdempotencyKeyLength+1) + `"`}, errIdemTooLong},
		{"megabyte", []string{`"` + strings.Repeat(s, 1<<20/len(s)) + `"`}, errIdemTooLong},
		{`\n escape`, []string{`"` + s + `\n"`}, errIdemEscape},
		{`\t escape`, []string{`"` + s + `\t"`}, errIdemEscape},
		{`\u escape`, []string{`"` + s + `\u0041"`}, errIdemEscape},
		{"newline", []string{`"` + s + "\n\""}, errIdemNotASCII},
		{"tab", []string{`"` + s + "\t\""}, errIdemNotASCII},
		{"NUL", []string{`"` + s + "\x00\""}, errIdemNotASCII},
		{"DEL", []string{`"` + s + "\x7f\""}, errIdemNotASCII},
		{"non-ASCII", []string{`"` + s + `café"`}, errIdemNotASCII},
		{"invalid UTF-8", []string{`"` + s + "\xff\""}, errIdemNotASCII},
		{"bare non-ASCII", []string{s + "é"}, errIdemNotASCII},
		{"bare control", []string{s + "\x01"}, errIdemNotASCII},
		{"bare tab", []string{s + "\tx"}, errIdemNotASCII},
		{"bare with space", []string{s + " x"}, errIdemBareChar},
		{"bare with quote", []string{s + `"`}, errIdemBareChar},
		{"unclosed", []string{`"` + s}, errIdemUnclosed},
		{"unclosed after backslash", []string{`"` + s + `\`}, errIdemUnclosed},
		{"escaped closing quote", []string{`"` + s + `\"`}, errIdemUnclosed},
		{"characters after the string", []string{`"` + s + `"x`}, errIdemTrailing},
		{"a second string", []string{`"` + s + `" "x"`}, errIdemTrailing},
		{"characters after a parameter", []string{`"` + s + `";v=1 x`}, errIdemTrailing},
		{"empty parameter name", []string{`"` + s + `";`}, errIdemParameters},
		{"upper-case parameter name", []string{`"` + s + `";V=1`}, errIdemParameters},
		{"parameter name with a digit first", []string{`"` + s + `";1v`}, errIdemParameters},
		{"parameter without value", []string{`"` + s + `";v=`}, errIdemParameters},
		{"space before =", []string{`"` + s + `";v =1`}, errIdemTrailing},
		{"space after =", []string{`"` + s + `";v= 1`}, errIdemParameters},
		{"unclosed parameter string", []string{`"` + s + `";v="x`}, errIdemParameters},
		{"bad escape in a parameter", []string{`"` + s + `";v="\x"`}, errIdemParameters},
		{"integer too long", []string{`"` + s + `";v=1234567890123456`}, errIdemParameters},
		{"decimal too long", []string{`"` + s + `";v=1234567890123.5`}, errIdemParameters},
		{"too many decimals", []string{`"` + s + `";v=1.2345`}, errIdemParameters},
		{"decimal ending in a dot", []string{`"` + s + `";v=1.`}, errIdemParameters},
		{"lone minus", []string{`"` + s + `";v=-`}, errIdemParameters},
		{"minus without digit", []string{`"` + s + `";v=-a`}, errIdemParameters},
		{"bad boolean", []string{`"` + s + `";v=?2`}, errIdemParameters},
		{"unclosed bytes", []string{`"` + s + `";v=:YWJj`}, errIdemParameters},
		{"unpadded bytes", []string{`"` + s + `";v=:YQ:`}, errIdemParameters},
		{"bytes with a bad character", []string{`"` + s + `";v=:YW-j:`}, errIdemParameters},
		{"too much padding", []string{`"` + s + `";v=:Y===:`}, errIdemParameters},
		{"decimal date", []string{`"` + s + `";v=@1.5`}, errIdemParameters},
		{"display string without quote", []string{`"` + s + `";v=%x`}, errIdemParameters},
		{"display string with upper-case hex", []string{`"` + s + `";v=%"%C3%A9"`}, errIdemParameters},
		{"display string with invalid UTF-8", []string{`"` + s + `";v=%"%ff"`}, errIdemParameters},
		{"display string with a short escape", []string{`"` + s + `";v=%"%a"`}, errIdemParameters},
		{"unclosed display string", []string{`"` + s + `";v=%"abc`}, errIdemParameters},
		{"unknown bare item", []string{`"` + s + `";v=(a)`}, errIdemParameters},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := IdempotencyKey(nil)(idemReq(tt.lines...))
			assert.Empty(t, got)
			require.Equal(t, tt.want, err)
			wantErr(t, err, http.StatusBadRequest, idemSource, append([]string{s}, tt.lines...)...)
			require.NotErrorIs(t, err, errNoIdempotencyKey, "a present but bad header reads as absent")
			// A fallback does not hide a bad header.
			called := false
			fb := func(*http.Request) (string, error) { called = true; return "x", nil }
			_, ferr := IdempotencyKey(fb)(idemReq(tt.lines...))
			require.Equal(t, tt.want, ferr, "with a fallback")
			require.False(t, called, "the fallback ran")
			if len(tt.lines) == 1 && !strings.HasPrefix(strings.TrimLeft(tt.lines[0], " "), `"`) {
				return
			}
			// httpsfv refuses them as well, or (empty, too long) parses a
			// String outside 1..maxIdempotencyKeyLength.
			if it, err := httpsfv.UnmarshalItem(tt.lines); err == nil {
				v, ok := it.Value.(string)
				require.False(t, ok && v != "" && len(v) <= maxIdempotencyKeyLength, "httpsfv accepts %q as the String %q", tt.lines, v)
			}
		})
	}
}

func TestIdempotencyKeyMissing(t *testing.T) {
	for _, f := range []Func{IdempotencyKey(nil), Join(Static("alice"), IdempotencyKey(nil))} {
		_, err := f(idemReq())
		require.Equal(t, errNoIdempotencyKey, err)
		require.EqualError(t, err, `keyfuncs: header "Idempotency-Key": missing`)
	}
	// net/http canonicalises field names; a name set by hand in another
	// case is not the field.
	r := idemReq()
	r.Header["idempotency-key"] = []string{"abc"}
	_, err := IdempotencyKey(nil)(r)
	require.Equal(t, errNoIdempotencyKey, err, "non-canonical name")
}

// Over the wire: net/http keeps each field line apart (two lines are
// refused, however a proxy might have joined them), strips the spaces and
// tabs around a value, and lower-case names are the same field.
func TestIdempotencyKeyOverTheWire(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, err := IdempotencyKey(nil)(r)
		var ke *Error
		switch {
		case err == nil:
			_, _ = io.WriteString(w, k)
		case errors.As(err, &ke):
			http.Error(w, ke.Reason, ke.HTTPStatus())
		default:
			http.Error(w, "unexpected error", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	tests := []struct {
		name, fields string
		status       int
		body         string
	}{
		{"quoted", "Idempotency-Key: \"k-1\"\r\n", 200, "k-1"},
		{"bare, lower-case name", "idempotency-key: k-1\r\n", 200, "k-1"},
		{"spaces and tabs around", "Idempotency-Key: \t \"k 1\"\t \r\n", 200, "k 1"},
		{"two lines", "Idempotency-Key: \"k-1\"\r\nIdempotency-Key: \"k-2\"\r\n", 400, errIdemRepeated.Reason},
		{"two lines, differently cased", "Idempotency-Key: k-1\r\nIDEMPOTENCY-KEY: k-1\r\n", 400, errIdemRepeated.Reason},
		{"joined by a proxy", "Idempotency-Key: \"k-1\", \"k-2\"\r\n", 400, errIdemList.Reason},
		{"empty", "Idempotency-Key:\r\n", 400, errIdemEmpty.Reason},
		{"absent", "", 400, errNoIdempotencyKey.Reason},
		{"obs-text", "Idempotency-Key: \"caf\xe9\"\r\n", 400, errIdemNotASCII.Reason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			require.NoError(t, err)
			defer conn.Close()
			require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
			_, err = io.WriteString(conn, "POST /orders HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n"+tt.fields+"\r\n")
			require.NoError(t, err)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, tt.status, resp.StatusCode)
			assert.Equal(t, tt.body, strings.TrimSpace(string(body)))
		})
	}
}

func TestIdempotencyFallback(t *testing.T) {
	calls := 0
	fb := func(*http.Request) (string, error) { calls++; return "abc", nil }
	key := IdempotencyKey(fb)

	withKey, err := key(idemReq(`"abc"`))
	require.NoError(t, err)
	require.Equal(t, storekit.JoinID("0", "abc"), withKey)
	require.Zero(t, calls, "the fallback ran with a key")
	without, err := key(idemReq())
	require.NoError(t, err)
	require.Equal(t, storekit.JoinID("1", "abc"), without)
	require.Equal(t, 1, calls)

	// The identities are those FirstOf gives for a well-formed or absent
	// key, but FirstOf also falls through on a malformed key, which the
	// fallback option does not.
	first := FirstOf(IdempotencyKey(nil), fb)
	a, _ := first(idemReq(`"abc"`))
	assert.Equal(t, withKey, a)
	b, _ := first(idemReq())
	assert.Equal(t, without, b)
	b, err = first(idemReq(`"abc`))
	require.NoError(t, err)
	assert.Equal(t, without, b)
	_, err = key(idemReq(`"abc`))
	require.Equal(t, errIdemUnclosed, err)

	// The fallback's error is returned as is.
	_, err = IdempotencyKey(fail(http.StatusRequestEntityTooLarge, "body"))(idemReq())
	wantErr(t, err, http.StatusRequestEntityTooLarge, "body")

	// Without a fallback, the key is required, and not tagged.
	got, err := IdempotencyKey(nil)(idemReq("abc"))
	require.NoError(t, err)
	require.Equal(t, "abc", got)
}

// idemMux routes three patterns to a handler that builds key and reads the
// body afterwards, as the guarded handler would.
type idemMux struct {
	*http.ServeMux
	id   string
	err  error
	body []byte
}

func newIdemMux(key Func) *idemMux {
	m := &idemMux{ServeMux: http.NewServeMux()}
	h := func(w http.ResponseWriter, r *http.Request) {
		m.id, m.err = key(r)
		m.body, _ = io.ReadAll(r.Body)
	}
	m.HandleFunc("POST /orders", h)
	m.HandleFunc("POST /refunds", h)
	m.HandleFunc("/carts", h) // any method
	return m
}

// send routes a request and returns the stored key it would lock.
func (m *idemMux) send(t *testing.T, method, path, user, idemKey, body string) string {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if user != "" {
		r.Header.Set("X-User-ID", user)
	}
	if idemKey != "" {
		r.Header.Set("Idempotency-Key", idemKey)
	}
	m.id, m.err, m.body = "", nil, nil
	m.ServeHTTP(httptest.NewRecorder(), r)
	require.NoError(t, m.err, "%s %s user %q key %q", method, path, user, idemKey)
	require.Equal(t, body, string(m.body), "the handler's body")
	return storekit.Key("throttle", "idempotent", m.id)
}

func TestIdempotentScoping(t *testing.T) {
	m := newIdemMux(idempotent(Header("X-User-ID")))
	const body = `{"amount":10}`
	alice := m.send(t, "POST", "/orders", "alice", `"k-1"`, body)

	assert.Equal(t, alice, m.send(t, "POST", "/orders", "alice", `"k-1"`, body), "a retry")
	assert.Equal(t, alice, m.send(t, "POST", "/orders", "alice", `k-1`, body), "a retry with a bare key")
	assert.Equal(t, alice, m.send(t, "POST", "/orders", "alice", `"k-1";attempt=2`, body), "a retry with parameters")
	// The key, not the body, is the identity: the draft's 422 for a reused
	// key is the fingerprint's job.
	assert.Equal(t, alice, m.send(t, "POST", "/orders", "alice", `"k-1"`, `{"amount":11}`), "another body")

	seen := map[string]string{alice: "alice"}
	for name, k := range map[string]string{
		"another user":                  m.send(t, "POST", "/orders", "bob", `"k-1"`, body),
		"another route":                 m.send(t, "POST", "/refunds", "alice", `"k-1"`, body),
		"another key":                   m.send(t, "POST", "/orders", "alice", `"k-2"`, body),
		"no key":                        m.send(t, "POST", "/orders", "alice", "", body),
		"a key that reads like a hash":  m.send(t, "POST", "/orders", "alice", sha([]byte(body)), body),
		"a user that reads like a join": m.send(t, "POST", "/orders", "alice:POST", `"k-1"`, body),
		"POST to a method-less pattern": m.send(t, "POST", "/carts", "alice", `"k-1"`, body),
		"PUT to a method-less pattern":  m.send(t, "PUT", "/carts", "alice", `"k-1"`, body),
	} {
		assert.NotContains(t, seen, k, "%s shares a stored key", name)
		seen[k] = name
	}
}

func TestIdempotentFallsBackToBody(t *testing.T) {
	m := newIdemMux(idempotent(Header("X-User-ID")))
	a := m.send(t, "POST", "/orders", "alice", "", `{"amount":10}`)
	assert.Equal(t, a, m.send(t, "POST", "/orders", "alice", "", `{"amount":10}`), "the same body twice")
	assert.NotEqual(t, a, m.send(t, "POST", "/orders", "alice", "", `{"amount":11}`), "different bodies")
	assert.NotEqual(t, a, m.send(t, "POST", "/orders", "bob", "", `{"amount":10}`), "two users")
	want := storekit.JoinID("alice", "POST", "POST /orders", storekit.JoinID("1", sha([]byte(`{"amount":10}`))))
	assert.Equal(t, storekit.Key("throttle", "idempotent", want), a)

	// Over the default limit: 413, and the body is still whole for whoever
	// reads it.
	big := bytes.Repeat([]byte("x"), bodyLimit+1)
	r := httptest.NewRequest(http.MethodPost, "/orders", bytes.NewReader(big))
	r.Header.Set("X-User-ID", "alice")
	r.Pattern = "POST /orders"
	_, err := idempotent(Header("X-User-ID"))(r)
	wantErr(t, err, http.StatusRequestEntityTooLarge, "body")
	rest, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	require.True(t, bytes.Equal(rest, big), "body after 413: %d bytes, want %d", len(rest), len(big))

	// A custom fallback, and none.
	r = httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader("12345"))
	r.Header.Set("X-User-ID", "alice")
	r.Pattern = "POST /orders"
	_, err = idempotentOr(Header("X-User-ID"), BodyHash(4))(r)
	wantErr(t, err, http.StatusRequestEntityTooLarge, "body")
	_, err = idempotentOr(Header("X-User-ID"), nil)(r)
	require.Equal(t, errNoIdempotencyKey, err)
}

// readCounter counts the reads of a body.
type readCounter struct{ reads int }

func (c *readCounter) Read([]byte) (int, error) { c.reads++; return 0, io.EOF }
func (c *readCounter) Close() error             { return nil }

func TestIdempotentRefusesBeforeReadingBody(t *testing.T) {
	key := idempotent(Header("X-User-ID"))
	for _, tt := range []struct {
		name, user, pattern, source string
		lines                       []string
	}{
		{"no user", "", "POST /orders", `header "X-User-ID"`, nil},
		{"no route (not under a ServeMux)", "alice", "", "route pattern", nil},
		{"bad key", "alice", "POST /orders", idemSource, []string{`"k`}},
		{"two keys", "alice", "POST /orders", idemSource, []string{"a", "b"}},
	} {
		body := &readCounter{}
		r := idemReq(tt.lines...)
		r.Body = body
		r.Pattern = tt.pattern
		if tt.user != "" {
			r.Header.Set("X-User-ID", tt.user)
		}
		_, err := key(r)
		wantErr(t, err, http.StatusBadRequest, tt.source)
		assert.Zero(t, body.reads, "%s: the body was read", tt.name)
	}

	// A middleware around the whole mux runs before routing: no pattern.
	var err error
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", func(http.ResponseWriter, *http.Request) {})
	outer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err = key(r)
		mux.ServeHTTP(w, r)
	})
	r := httptest.NewRequest(http.MethodPost, "/orders", nil)
	r.Header.Set("X-User-ID", "alice")
	r.Header.Set("Idempotency-Key", `"k"`)
	outer.ServeHTTP(httptest.NewRecorder(), r)
	wantErr(t, err, http.StatusBadRequest, "route pattern")
}

func BenchmarkIdempotencyKey(b *testing.B) {
	const uuid = "8e03978e-40d5-43e8-bc93-6894a57f9324"
	b.Run("quoted", func(b *testing.B) { benchKey(b, IdempotencyKey(nil), idemReq(`"`+uuid+`"`)) })
	b.Run("bare", func(b *testing.B) { benchKey(b, IdempotencyKey(nil), idemReq(uuid)) })
	b.Run("escapes and parameters", func(b *testing.B) {
		benchKey(b, IdempotencyKey(nil), idemReq(`"`+uuid+`\"";v=1;at=@1700000000`))
	})
	r := idemReq(`"` + uuid + `"`)
	r.Header.Set("X-User-ID", "42")
	r.Pattern = "POST /orders"
	b.Run("Idempotent", func(b *testing.B) { benchKey(b, idempotent(Header("X-User-ID")), r) })
}
