package keyfuncs

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/go-throttle/throttle/throttle/store"
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

// idemErrors is every error IdempotencyKey may return about the header:
// constant texts, none of which holds a request value.
var idemErrors = []error{
	ErrNoIdempotencyKey, errIdemRepeated, errIdemList, errIdemEmpty, errIdemTooLong, errIdemNotASCII,
	errIdemBareChar, errIdemUnclosed, errIdemEscape, errIdemParameters, errIdemTrailing,
}

func TestIdempotencySource(t *testing.T) {
	want := "header " + strconv.Quote(http.CanonicalHeaderKey(idempotencyHeader))
	if idempotencySource != want {
		t.Fatalf("source %q, want %q", idempotencySource, want)
	}
	if idemSource != want {
		t.Fatalf("the tests' source %q, want %q", idemSource, want)
	}
}

func TestIdempotencyKeyValid(t *testing.T) {
	long := strings.Repeat("k", MaxIdempotencyKeyLength)
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
		{"longest escaped", `"` + strings.Repeat(`\"`, MaxIdempotencyKeyLength) + `"`, strings.Repeat(`"`, MaxIdempotencyKeyLength)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := IdempotencyKey()(idemReq(tt.value))
			if err != nil || got != tt.want {
				t.Fatalf("IdempotencyKey(%q) = %q, %v; want %q", tt.value, got, err, tt.want)
			}
			if strings.HasPrefix(strings.TrimLeft(tt.value, " "), `"`) {
				// The quoted forms are RFC 9651 Items with a String.
				it, err := httpsfv.UnmarshalItem([]string{tt.value})
				if err != nil || it.Value != tt.want {
					t.Fatalf("httpsfv disagrees: %#v, %v", it.Value, err)
				}
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
		{"too long", []string{`"` + s + strings.Repeat("k", MaxIdempotencyKeyLength+1-len(s)) + `"`}, errIdemTooLong},
		{"too long bare", []string{s + strings.Repeat("k", MaxIdempotencyKeyLength+1-len(s))}, errIdemTooLong},
		{"too long once unescaped", []string{`"` + strings.Repeat(`\\`, MaxIdempotencyKeyLength+1) + `"`}, errIdemTooLong},
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
			got, err := IdempotencyKey()(idemReq(tt.lines...))
			if err != tt.want {
				t.Fatalf("IdempotencyKey(%q) = %q, %v; want %v", tt.lines, got, err, tt.want)
			}
			wantErr(t, err, http.StatusBadRequest, idemSource, append([]string{s}, tt.lines...)...)
			if errors.Is(err, ErrNoIdempotencyKey) {
				t.Fatal("a present but bad header reads as absent")
			}
			// A fallback does not hide a bad header.
			called := false
			fb := IdempotencyFallback(func(*http.Request) (string, error) { called = true; return "x", nil })
			if _, ferr := IdempotencyKey(fb)(idemReq(tt.lines...)); ferr != tt.want || called {
				t.Fatalf("with a fallback: %v (fallback called %v), want %v", ferr, called, tt.want)
			}
			if len(tt.lines) == 1 && !strings.HasPrefix(strings.TrimLeft(tt.lines[0], " "), `"`) {
				return
			}
			// httpsfv refuses them as well, or (empty, too long) parses a
			// String outside 1..MaxIdempotencyKeyLength.
			if it, err := httpsfv.UnmarshalItem(tt.lines); err == nil {
				if v, ok := it.Value.(string); ok && v != "" && len(v) <= MaxIdempotencyKeyLength {
					t.Fatalf("httpsfv accepts %q as the String %q", tt.lines, v)
				}
			}
		})
	}
}

func TestIdempotencyKeyMissing(t *testing.T) {
	for _, f := range []Func{IdempotencyKey(), IdempotencyKey(RequireIdempotencyKey())} {
		_, err := f(idemReq())
		if !errors.Is(err, ErrNoIdempotencyKey) {
			t.Fatalf("err = %v, want ErrNoIdempotencyKey", err)
		}
		wantErr(t, err, http.StatusBadRequest, idemSource)
		if got := err.Error(); got != `keyfuncs: header "Idempotency-Key": missing` {
			t.Fatalf("message %q", got)
		}
	}
	// net/http canonicalises field names; a name set by hand in another
	// case is not the field.
	r := idemReq()
	r.Header["idempotency-key"] = []string{"abc"}
	if _, err := IdempotencyKey()(r); err != ErrNoIdempotencyKey {
		t.Fatalf("non-canonical name: %v", err)
	}
}

// Over the wire: net/http keeps each field line apart (two lines are
// refused, however a proxy might have joined them), strips the spaces and
// tabs around a value, and lower-case names are the same field.
func TestIdempotencyKeyOverTheWire(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, err := IdempotencyKey()(r)
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
		{"absent", "", 400, ErrNoIdempotencyKey.(*Error).Reason},
		{"obs-text", "Idempotency-Key: \"caf\xe9\"\r\n", 400, errIdemNotASCII.Reason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
				t.Fatal(err)
			}
			head := "POST /orders HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n" + tt.fields + "\r\n"
			if _, err := io.WriteString(conn, head); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || strings.TrimSpace(string(body)) != tt.body {
				t.Fatalf("%d %q, want %d %q", resp.StatusCode, body, tt.status, tt.body)
			}
		})
	}
}

func TestIdempotencyFallback(t *testing.T) {
	calls := 0
	fb := func(*http.Request) (string, error) { calls++; return "abc", nil }
	key := IdempotencyKey(IdempotencyFallback(fb))

	withKey, err := key(idemReq(`"abc"`))
	if err != nil || withKey != store.JoinID("0", "abc") || calls != 0 {
		t.Fatalf("with a key: %q, %v, fallback called %d times", withKey, err, calls)
	}
	without, err := key(idemReq())
	if err != nil || without != store.JoinID("1", "abc") || calls != 1 {
		t.Fatalf("without a key: %q, %v, fallback called %d times", without, err, calls)
	}
	if withKey == without {
		t.Fatal("a key and a fallback value share an identity")
	}
	// The identities are those FirstOf gives for a well-formed or absent key.
	first := FirstOf(IdempotencyKey(), fb)
	if a, _ := first(idemReq(`"abc"`)); a != withKey {
		t.Fatalf("FirstOf with a key: %q, want %q", a, withKey)
	}
	if b, _ := first(idemReq()); b != without {
		t.Fatalf("FirstOf without a key: %q, want %q", b, without)
	}
	// ... but FirstOf also falls through on a malformed key, which the
	// fallback option does not.
	if b, err := first(idemReq(`"abc`)); err != nil || b != without {
		t.Fatalf("FirstOf with a malformed key: %q, %v", b, err)
	}
	if _, err := key(idemReq(`"abc`)); err != errIdemUnclosed {
		t.Fatalf("fallback option with a malformed key: %v", err)
	}

	// The fallback's error is returned as is.
	_, err = IdempotencyKey(IdempotencyFallback(fail(http.StatusRequestEntityTooLarge, "body")))(idemReq())
	wantErr(t, err, http.StatusRequestEntityTooLarge, "body")

	// RequireIdempotencyKey wins over a fallback, in either order.
	for _, opts := range [][]IdempotencyOption{
		{RequireIdempotencyKey(), IdempotencyFallback(fb)},
		{IdempotencyFallback(fb), RequireIdempotencyKey()},
	} {
		calls = 0
		if _, err := IdempotencyKey(opts...)(idemReq()); err != ErrNoIdempotencyKey || calls != 0 {
			t.Fatalf("required: %v, fallback called %d times", err, calls)
		}
		if got, err := IdempotencyKey(opts...)(idemReq("abc")); err != nil || got != "abc" {
			t.Fatalf("required with a key: %q, %v", got, err)
		}
	}
}

func TestIdempotencyPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"nil fallback": func() { IdempotencyFallback(nil) },
		"nil user":     func() { Idempotent(nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
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
	if m.err != nil {
		t.Fatalf("%s %s user %q key %q: %v", method, path, user, idemKey, m.err)
	}
	if string(m.body) != body {
		t.Fatalf("the handler read %q, want %q", m.body, body)
	}
	return store.Key("throttle", "idempotent", m.id)
}

func TestIdempotentScoping(t *testing.T) {
	m := newIdemMux(Idempotent(Header("X-User-ID")))
	const body = `{"amount":10}`
	alice := m.send(t, "POST", "/orders", "alice", `"k-1"`, body)

	same := map[string]string{
		"a retry":                 m.send(t, "POST", "/orders", "alice", `"k-1"`, body),
		"a retry with a bare key": m.send(t, "POST", "/orders", "alice", `k-1`, body),
		"a retry with parameters": m.send(t, "POST", "/orders", "alice", `"k-1";attempt=2`, body),
		// The key, not the body, is the identity: the draft's 422 for a
		// reused key is the fingerprint's job (BodyFingerprint).
		"another body": m.send(t, "POST", "/orders", "alice", `"k-1"`, `{"amount":11}`),
	}
	for name, k := range same {
		if k != alice {
			t.Errorf("%s: stored key %q, want %q", name, k, alice)
		}
	}

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
		if other, dup := seen[k]; dup {
			t.Errorf("%s and %s share the stored key %q", name, other, k)
		}
		seen[k] = name
	}
}

func TestIdempotentFallsBackToBody(t *testing.T) {
	m := newIdemMux(Idempotent(Header("X-User-ID")))
	a := m.send(t, "POST", "/orders", "alice", "", `{"amount":10}`)
	if b := m.send(t, "POST", "/orders", "alice", "", `{"amount":10}`); a != b {
		t.Fatalf("the same body twice: %q and %q", a, b)
	}
	if c := m.send(t, "POST", "/orders", "alice", "", `{"amount":11}`); a == c {
		t.Fatal("different bodies share a stored key")
	}
	if d := m.send(t, "POST", "/orders", "bob", "", `{"amount":10}`); a == d {
		t.Fatal("two users' bodies share a stored key")
	}
	want := store.JoinID("alice", "POST", "POST /orders", store.JoinID("1", sha([]byte(`{"amount":10}`))))
	if got := m.send(t, "POST", "/orders", "alice", "", `{"amount":10}`); got != store.Key("throttle", "idempotent", want) {
		t.Fatalf("stored key %q, want the identity %q", got, want)
	}

	// Over the default limit: 413, and the handler is not reached here, but
	// the body is still whole for whoever reads it.
	big := bytes.Repeat([]byte("x"), DefaultIdempotencyBodyLimit+1)
	r := httptest.NewRequest(http.MethodPost, "/orders", bytes.NewReader(big))
	r.Header.Set("X-User-ID", "alice")
	r.Pattern = "POST /orders"
	_, err := Idempotent(Header("X-User-ID"))(r)
	wantErr(t, err, http.StatusRequestEntityTooLarge, "body")
	if rest, _ := io.ReadAll(r.Body); !bytes.Equal(rest, big) {
		t.Fatalf("body after 413: %d bytes, want %d", len(rest), len(big))
	}

	// A custom fallback, and none.
	small := Idempotent(Header("X-User-ID"), IdempotencyFallback(BodyHash(4)))
	r = httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader("12345"))
	r.Header.Set("X-User-ID", "alice")
	r.Pattern = "POST /orders"
	_, err = small(r)
	wantErr(t, err, http.StatusRequestEntityTooLarge, "body")

	r = httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader("12345"))
	r.Header.Set("X-User-ID", "alice")
	r.Pattern = "POST /orders"
	if _, err := Idempotent(Header("X-User-ID"), RequireIdempotencyKey())(r); err != ErrNoIdempotencyKey {
		t.Fatalf("required: %v", err)
	}
}

// readCounter fails the test if its body is read.
type readCounter struct{ reads int }

func (c *readCounter) Read([]byte) (int, error) { c.reads++; return 0, io.EOF }
func (c *readCounter) Close() error             { return nil }

func TestIdempotentRefusesBeforeReadingBody(t *testing.T) {
	key := Idempotent(Header("X-User-ID"))
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
		if body.reads != 0 {
			t.Errorf("%s: the body was read %d times", tt.name, body.reads)
		}
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

func TestBodyFingerprint(t *testing.T) {
	bodies := [][]byte{nil, []byte(`{"amount":10}`), []byte(`{"amount":11}`), []byte("\x00\xff"), bytes.Repeat([]byte("a"), 64)}
	seen := map[string]int{}
	for i, body := range bodies {
		r, ct := bodyReq(iotest.HalfReader(bytes.NewReader(body)), -1)
		got, err := BodyFingerprint(r, 64)
		if err != nil || got != sha(body) {
			t.Fatalf("body %d: %q, %v; want %q", i, got, err, sha(body))
		}
		if raw, err := base64.RawURLEncoding.DecodeString(got); err != nil || len(raw) != 32 || len(got) != 43 {
			t.Fatalf("body %d: %q is not unpadded base64url of 32 bytes", i, got)
		}
		if j, dup := seen[got]; dup {
			t.Fatalf("bodies %d and %d share a fingerprint", j, i)
		}
		seen[got] = i
		checkRestored(t, r, ct, body)

		// The same body again gives the same fingerprint, also when read
		// back from the restored body of an earlier pass.
		r2, _ := bodyReq(bytes.NewReader(body), int64(len(body)))
		if again, _ := BodyFingerprint(r2, 64); again != got {
			t.Fatalf("body %d: %q then %q", i, got, again)
		}
		if again, _ := BodyFingerprint(r2, 64); again != got {
			t.Fatalf("body %d, restored: %q then %q", i, got, again)
		}
	}

	for _, cl := range []int64{-1, 65} {
		body := bytes.Repeat([]byte("b"), 65)
		r, ct := bodyReq(bytes.NewReader(body), cl)
		_, err := BodyFingerprint(r, 64)
		wantErr(t, err, http.StatusRequestEntityTooLarge, "body")
		checkRestored(t, r, ct, body)
	}

	for _, b := range []io.ReadCloser{nil, http.NoBody} {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Body = b
		if got, err := BodyFingerprint(r, 0); err != nil || got != sha(nil) {
			t.Fatalf("body %v: %q, %v", b, got, err)
		}
	}

	defer func() {
		if recover() == nil {
			t.Fatal("negative maxBytes did not panic")
		}
	}()
	_, _ = BodyFingerprint(httptest.NewRequest(http.MethodPost, "/", nil), -1)
}

// FuzzIdempotencyKey: the parser never panics; what it accepts is 1 to 255
// characters of printable ASCII; it accepts a quoted value exactly when
// httpsfv parses it as an Item holding such a String, with the same text,
// and a bare value exactly when it is printable ASCII without spaces,
// double quotes and commas; every refusal is one of the constant errors,
// which hold nothing the request sent.
func FuzzIdempotencyKey(f *testing.F) {
	for _, s := range []string{
		`"8e03978e-40d5-43e8-bc93-6894a57f9324"`, `8e03978e-40d5-43e8-bc93-6894a57f9324`,
		`"a\"b\\c"`, `"a\nb"`, `""`, ``, ` "x" `, `"x";v=1`, `"x"; v`, `"x";v=`, `"x", "y"`, `a,b`, `a b`,
		`"x";b;i=-12;d=1.5;s="x;y\"";t=*tok/x:y;bs=:YWJj:;f=?0;dt=@1700000000;ds=%"caf%c3%a9"`,
		`"x";v=:YQ:`, `"x";v=:Y===:`, `"x";v=1.2345`, `"x";v=1234567890123.5`, `"x";v=%"%ff"`, `"x";v=@1.5`,
		"\"caf\xc3\xa9\"", "\"\x00\"", "a\x7f", `"unclosed`, `"x"y`, `abc;v=1`,
		`"` + strings.Repeat("k", 255) + `"`, strings.Repeat("k", 256),
	} {
		f.Add(s, "", false)
	}
	f.Add(`"a"`, `"b"`, true)
	f.Add("a", "", true)
	known := func(err error) bool { return slices.Contains(idemErrors, err) }
	f.Fuzz(func(t *testing.T, v, second string, twoLines bool) {
		lines := []string{v}
		if twoLines {
			lines = append(lines, second)
		}
		got, err := IdempotencyKey()(idemReq(lines...))
		if err != nil && !known(err) {
			t.Fatalf("%q: unexpected error %#v", lines, err)
		}
		if twoLines {
			if err != errIdemRepeated {
				t.Fatalf("%q: %q, %v; want errIdemRepeated", lines, got, err)
			}
			return
		}
		if err == nil {
			if len(got) < 1 || len(got) > MaxIdempotencyKeyLength {
				t.Fatalf("%q: accepted %d characters", v, len(got))
			}
			for i := 0; i < len(got); i++ {
				if got[i] < 0x20 || got[i] > 0x7e {
					t.Fatalf("%q: accepted byte %#x", v, got[i])
				}
			}
		}

		// The oracle for the form the value has.
		var want string
		var wantOK bool
		if trimmed := strings.Trim(v, " "); strings.HasPrefix(trimmed, `"`) {
			it, perr := httpsfv.UnmarshalItem([]string{v})
			want, wantOK = it.Value.(string)
			wantOK = wantOK && perr == nil && want != "" && len(want) <= MaxIdempotencyKeyLength
		} else {
			want = trimmed
			wantOK = want != "" && len(want) <= MaxIdempotencyKeyLength &&
				!strings.ContainsFunc(want, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '"' || r == ',' })
		}
		if (err == nil) != wantOK || wantOK && got != want {
			t.Fatalf("%q: got %q, %v; want %q (acceptable %v)", v, got, err, want, wantOK)
		}

		// With a fallback, a present key is tagged and never falls back.
		fk, ferr := IdempotencyKey(IdempotencyFallback(Static("fallback")))(idemReq(lines...))
		if ferr != err || err == nil && fk != store.JoinID("0", got) {
			t.Fatalf("%q with a fallback: %q, %v; without: %q, %v", v, fk, ferr, got, err)
		}
	})
}

// FuzzIdempotentScoping: two requests to one route share a stored key
// exactly when they come from the same user with the same idempotency key
// (whatever its spelling), or, both without a key, with the same body.
func FuzzIdempotentScoping(f *testing.F) {
	f.Add("alice", `"k-1"`, "a", "alice", "k-1", "b")
	f.Add("alice", `"k-1"`, "a", "bob", `"k-1"`, "a")
	f.Add("alice", "", "a", "alice", "", "a")
	f.Add("alice", "", "a", "alice", "", "b")
	f.Add("a:b", `"c"`, "", "a", `"b:c"`, "")
	f.Add("alice", "1:x", "", "alice", "", "x")
	key := Idempotent(Header("X-User-ID"))
	f.Fuzz(func(t *testing.T, user1, key1, body1, user2, key2, body2 string) {
		build := func(user, k, body string) (string, string, bool) {
			r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(body))
			r.Pattern = "POST /orders"
			r.Header["X-User-Id"] = []string{user}
			if k != "" {
				r.Header["Idempotency-Key"] = []string{k}
			}
			id, err := key(r)
			if err != nil {
				return "", "", false
			}
			parsed := "body " + sha([]byte(body))
			if k != "" {
				p, perr := parseIdempotencyKey(k)
				if perr != nil {
					t.Fatalf("Idempotent accepted %q, which the parser refuses", k)
				}
				parsed = "key " + p
			}
			return store.Key("throttle", "idempotent", id), parsed, true
		}
		s1, p1, ok1 := build(user1, key1, body1)
		s2, p2, ok2 := build(user2, key2, body2)
		if !ok1 || !ok2 {
			return
		}
		if (s1 == s2) != (user1 == user2 && p1 == p2) {
			t.Fatalf("(%q, %s) -> %q; (%q, %s) -> %q", user1, p1, s1, user2, p2, s2)
		}
	})
}

func BenchmarkIdempotencyKey(b *testing.B) {
	const uuid = "8e03978e-40d5-43e8-bc93-6894a57f9324"
	b.Run("quoted", func(b *testing.B) { benchKey(b, IdempotencyKey(), idemReq(`"`+uuid+`"`)) })
	b.Run("bare", func(b *testing.B) { benchKey(b, IdempotencyKey(), idemReq(uuid)) })
	b.Run("escapes and parameters", func(b *testing.B) {
		benchKey(b, IdempotencyKey(), idemReq(`"`+uuid+`\"";v=1;at=@1700000000`))
	})
	r := idemReq(`"` + uuid + `"`)
	r.Header.Set("X-User-ID", "42")
	r.Pattern = "POST /orders"
	b.Run("Idempotent", func(b *testing.B) { benchKey(b, Idempotent(Header("X-User-ID")), r) })
}
