package keyfuncs

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
)

func TestHeader(t *testing.T) {
	tests := []struct {
		name string
		hdr  []string
		want string
	}{
		{"present", []string{"X-User-ID", "42"}, "42"},
		{"case-insensitive", []string{"x-user-id", "42"}, "42"},
		{"first value", []string{"X-User-ID", "42", "X-User-ID", "43"}, "42"},
		{"separators kept", []string{"X-User-ID", "a:b{c}%d e"}, "a:b{c}%d e"},
		{"binary kept", []string{"X-User-ID", "\x00\xff\x01"}, "\x00\xff\x01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Header("X-User-ID")(req("1.2.3.4:1", tt.hdr...))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	for _, hdr := range [][]string{nil, {"X-User-ID", ""}, {"X-Other", "42"}} {
		_, err := Header("X-User-ID")(req("1.2.3.4:1", hdr...))
		wantErr(t, err, http.StatusBadRequest, `header "X-User-ID"`)
		require.EqualError(t, err, `keyfuncs: header "X-User-ID": missing`)
	}
}

func TestHeaderMegabyteValueGivesBoundedKey(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	got, err := Header("X-User-ID")(req("1.2.3.4:1", "X-User-ID", big))
	require.NoError(t, err)
	require.Equal(t, big, got)
	assert.LessOrEqual(t, len(storekit.Key("throttle", "submit", got)), 200)
}

func TestQuery(t *testing.T) {
	tests := []struct {
		query, want string
	}{
		{"id=42", "42"},
		{"x=1&id=42&y=2", "42"},
		{"id=a&id=b", storekit.JoinID("a", "b")},
		{"id=a:b", storekit.JoinID("a:b")},
		{"id=%3A&id=", storekit.JoinID(":", "")},
		{"i%64=7", "7"},
		{"id=a+b%20c", storekit.JoinID("a b c")},
		{"id=%00%FF", storekit.JoinID("\x00\xff")},
		{"bad%zz=1&id=9", "9"},
	}
	for _, tt := range tests {
		got, err := Query("id")(httptest.NewRequest(http.MethodGet, "/?"+tt.query, nil))
		require.NoError(t, err, tt.query)
		assert.Equal(t, tt.want, got, tt.query)
	}
	// The joined list is injective: ?id=a&id=b and ?id=a:b differ.
	ab, _ := Query("id")(httptest.NewRequest(http.MethodGet, "/?id=a&id=b", nil))
	joined, _ := Query("id")(httptest.NewRequest(http.MethodGet, "/?id=a%3Ab", nil))
	assert.NotEqual(t, ab, joined)

	for _, q := range []string{"", "x=1", "id=", "id=&id=", "id", "ids=1"} {
		_, err := Query("id")(httptest.NewRequest(http.MethodGet, "/?"+q, nil))
		wantErr(t, err, http.StatusBadRequest, `query "id"`)
	}
	_, err := Query("id")(httptest.NewRequest(http.MethodGet, "/?id=%zzsecret", nil))
	wantErr(t, err, http.StatusBadRequest, `query "id"`, "secret")
	_, err = Query("id")(&http.Request{})
	wantErr(t, err, http.StatusBadRequest, `query "id"`)
}

func TestPathValueAndPattern(t *testing.T) {
	var gotID, gotPattern string
	var idErr, patErr error
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders/{id}/pay", func(w http.ResponseWriter, r *http.Request) {
		gotID, idErr = PathValue("id")(r)
		gotPattern, patErr = Pattern()(r)
	})
	mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/orders/a%3Ab/pay", nil))
	require.NoError(t, idErr)
	assert.Equal(t, "a:b", gotID)
	require.NoError(t, patErr)
	assert.Equal(t, "POST /orders/{id}/pay", gotPattern)

	r := httptest.NewRequest(http.MethodPost, "/orders/1/pay", nil) // not routed
	_, err := PathValue("id")(r)
	wantErr(t, err, http.StatusBadRequest, `path value "id"`)
	_, err = Pattern()(r)
	wantErr(t, err, http.StatusBadRequest, "route pattern")
}

func TestMethod(t *testing.T) {
	for _, m := range []string{http.MethodPost, http.MethodDelete, "PURGE"} {
		got, err := Method()(httptest.NewRequest(m, "/", nil))
		require.NoError(t, err)
		assert.Equal(t, m, got)
	}
	got, err := Method()(&http.Request{})
	require.NoError(t, err)
	assert.Equal(t, http.MethodGet, got, "an empty method")
}

func TestStatic(t *testing.T) {
	got, err := Static("report")(req(""))
	require.NoError(t, err)
	assert.Equal(t, "report", got)
}

type ctxKey struct{}

type userID int64

type userName string

type stringer struct{ s string }

func (s *stringer) String() string { return s.s }

func TestContextValue(t *testing.T) {
	withValue := func(v any) *http.Request {
		r := req("1.2.3.4:1")
		return r.WithContext(context.WithValue(r.Context(), ctxKey{}, v))
	}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"string", "u42", "u42"},
		{"int", 42, "42"},
		{"negative int64", int64(-7), "-7"},
		{"uint8", uint8(255), "255"},
		{"uint64 max", ^uint64(0), "18446744073709551615"},
		{"named int", userID(99), "99"},
		{"named string", userName("bob"), "bob"},
		{"stringer", &stringer{"alice"}, "alice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ContextValue(ctxKey{})(withValue(tt.v))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	var nilStringer *stringer
	for _, v := range []any{nil, "", nilStringer, &stringer{}, userName("")} {
		_, err := ContextValue(ctxKey{})(withValue(v))
		wantErr(t, err, http.StatusBadRequest, "context value")
		assert.ErrorContains(t, err, "missing", "%#v", v)
	}
	for _, v := range []any{1.5, []byte("x"), struct{}{}, true} {
		_, err := ContextValue(ctxKey{})(withValue(v))
		wantErr(t, err, http.StatusBadRequest, "context value")
		assert.ErrorContains(t, err, "unsupported type", "%#v", v)
	}
	// Not set at all.
	_, err := ContextValue(ctxKey{})(req("1.2.3.4:1"))
	wantErr(t, err, http.StatusBadRequest, "context value")
}

func TestFromIP(t *testing.T) {
	for in, want := range map[string]string{"192.0.2.1": "192.0.2.1", "::ffff:192.0.2.1": "192.0.2.1", "2001:DB8::1": "2001:db8::1"} {
		got, err := FromIP(in, "gin client IP")
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	for _, in := range []string{"", "fe80::1%eth0", "192.0.2.1:80", "nope"} {
		_, err := FromIP(in, "gin client IP")
		wantErr(t, err, http.StatusBadRequest, "gin client IP", in)
	}
}
