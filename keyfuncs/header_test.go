package keyfuncs

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-throttle/throttle/throttle/store"
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
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	for _, hdr := range [][]string{nil, {"X-User-ID", ""}, {"X-Other", "42"}} {
		_, err := Header("X-User-ID")(req("1.2.3.4:1", hdr...))
		wantErr(t, err, http.StatusBadRequest, `header "X-User-ID"`)
		if err.Error() != `keyfuncs: header "X-User-ID": missing` {
			t.Fatalf("error text %q", err)
		}
	}
}

func TestHeaderMegabyteValueGivesBoundedKey(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	got, err := Header("X-User-ID")(req("1.2.3.4:1", "X-User-ID", big))
	if err != nil || got != big {
		t.Fatalf("len %d, %v", len(got), err)
	}
	if k := store.Key("throttle", "submit", got); len(k) > 200 {
		t.Fatalf("stored key is %d bytes", len(k))
	}
}

func TestCookie(t *testing.T) {
	r := req("1.2.3.4:1", "Cookie", "a=1; session=s3cr3t; b=2")
	if got, err := Cookie("session")(r); err != nil || got != "s3cr3t" {
		t.Fatalf("got %q, %v", got, err)
	}
	for _, c := range []string{"", "a=1", "session=", "session"} {
		_, err := Cookie("session")(req("1.2.3.4:1", "Cookie", c))
		wantErr(t, err, http.StatusBadRequest, `cookie "session"`)
	}
}

func TestQuery(t *testing.T) {
	tests := []struct {
		query, want string
	}{
		{"id=42", "42"},
		{"x=1&id=42&y=2", "42"},
		{"id=a&id=b", store.JoinID("a", "b")},
		{"id=a:b", store.JoinID("a:b")},
		{"id=%3A&id=", store.JoinID(":", "")},
		{"i%64=7", "7"},
		{"id=a+b%20c", store.JoinID("a b c")},
		{"id=%00%FF", store.JoinID("\x00\xff")},
		{"bad%zz=1&id=9", "9"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/?"+tt.query, nil)
		got, err := Query("id")(r)
		if err != nil || got != tt.want {
			t.Errorf("?%s: got %q, %v; want %q", tt.query, got, err, tt.want)
		}
	}
	// The joined list is injective: ?id=a&id=b and ?id=a:b differ.
	ab, _ := Query("id")(httptest.NewRequest(http.MethodGet, "/?id=a&id=b", nil))
	joined, _ := Query("id")(httptest.NewRequest(http.MethodGet, "/?id=a%3Ab", nil))
	if ab == joined {
		t.Fatalf("two values and one joined value share %q", ab)
	}
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
	if idErr != nil || gotID != "a:b" {
		t.Fatalf("PathValue = %q, %v", gotID, idErr)
	}
	if patErr != nil || gotPattern != "POST /orders/{id}/pay" {
		t.Fatalf("Pattern = %q, %v", gotPattern, patErr)
	}

	r := httptest.NewRequest(http.MethodPost, "/orders/1/pay", nil) // not routed
	_, err := PathValue("id")(r)
	wantErr(t, err, http.StatusBadRequest, `path value "id"`)
	_, err = Pattern()(r)
	wantErr(t, err, http.StatusBadRequest, "route pattern")
}

func TestMethod(t *testing.T) {
	for _, m := range []string{http.MethodPost, http.MethodDelete, "PURGE"} {
		if got, err := Method()(httptest.NewRequest(m, "/", nil)); err != nil || got != m {
			t.Errorf("Method = %q, %v; want %q", got, err, m)
		}
	}
	if got, _ := Method()(&http.Request{}); got != http.MethodGet {
		t.Errorf("empty method = %q, want GET", got)
	}
}

func TestStatic(t *testing.T) {
	if got, err := Static("report")(req("")); err != nil || got != "report" {
		t.Fatalf("got %q, %v", got, err)
	}
}

type ctxKey struct{}

type userID int64

type userName string

type stringer struct{ s string }

func (s *stringer) String() string { return s.s }

func TestContextValue(t *testing.T) {
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
			r := req("1.2.3.4:1")
			r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, tt.v))
			got, err := ContextValue(ctxKey{})(r)
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	var nilStringer *stringer
	for _, v := range []any{nil, "", nilStringer, &stringer{}, userName("")} {
		r := req("1.2.3.4:1")
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, v))
		_, err := ContextValue(ctxKey{})(r)
		wantErr(t, err, http.StatusBadRequest, "context value")
		if !strings.HasSuffix(err.Error(), "missing") {
			t.Errorf("%#v: %v", v, err)
		}
	}
	for _, v := range []any{1.5, []byte("x"), struct{}{}, true} {
		r := req("1.2.3.4:1")
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, v))
		_, err := ContextValue(ctxKey{})(r)
		wantErr(t, err, http.StatusBadRequest, "context value")
		if !strings.Contains(err.Error(), "unsupported type") {
			t.Errorf("%#v: %v", v, err)
		}
	}
	// Not set at all.
	_, err := ContextValue(ctxKey{})(req("1.2.3.4:1"))
	wantErr(t, err, http.StatusBadRequest, "context value")
}
