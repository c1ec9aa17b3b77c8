package keyfuncs

import (
	"errors"
	"net/http"
	"testing"

	"github.com/go-throttle/throttle/throttle/store"
)

func fail(status int, source string) Func {
	return func(*http.Request) (string, error) {
		return "", &Error{Status: status, Source: source, Reason: "missing"}
	}
}

func TestFirstOf(t *testing.T) {
	key := FirstOf(Header("X-User-ID"), RemoteIP())
	tests := []struct {
		name string
		r    *http.Request
		want string
	}{
		{"header wins", req("192.0.2.1:1", "X-User-ID", "42"), store.JoinID("0", "42")},
		{"falls back to the IP", req("192.0.2.1:1"), store.JoinID("1", "192.0.2.1")},
		{"header that looks like an IP", req("192.0.2.9:1", "X-User-ID", "192.0.2.1"), store.JoinID("0", "192.0.2.1")},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got, err := key(tt.r)
		if err != nil || got != tt.want {
			t.Fatalf("%s: got %q, %v; want %q", tt.name, got, err, tt.want)
		}
		if other, dup := seen[got]; dup {
			t.Fatalf("%s and %s share key %q", tt.name, other, got)
		}
		seen[got] = tt.name
	}
	// A header "192.0.2.1" and the IP 192.0.2.1 never share a key.
	h, _ := key(req("192.0.2.9:1", "X-User-ID", "192.0.2.1"))
	ip, _ := key(req("192.0.2.1:1"))
	if h == ip {
		t.Fatalf("header and IP share %q", h)
	}
}

func TestFirstOfAllFail(t *testing.T) {
	_, err := FirstOf(fail(400, "a"), fail(413, "b"))(req("1.2.3.4:1"))
	wantErr(t, err, 413, "b")
	_, err = FirstOf(Header("X-User-ID"), RemoteIP())(req("not-an-address"))
	wantErr(t, err, http.StatusBadRequest, "remote address")
}

func TestJoin(t *testing.T) {
	key := Join(Header("X-User-ID"), Method(), Static("orders"))
	got, err := key(req("1.2.3.4:1", "X-User-ID", "a:b"))
	if want := store.JoinID("a:b", "POST", "orders"); err != nil || got != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
	// Separators in a value cannot forge another list.
	a, _ := Join(Static("a:b"), Static("c"))(nil)
	b, _ := Join(Static("a"), Static("b:c"))(nil)
	if a == b {
		t.Fatalf("shared %q", a)
	}
	// Many parts (beyond the stack buffer) still work.
	fs := make([]Func, 20)
	parts := make([]string, 20)
	for i := range fs {
		fs[i] = Static(string(rune('a' + i)))
		parts[i] = string(rune('a' + i))
	}
	if got, _ := Join(fs...)(nil); got != store.JoinID(parts...) {
		t.Fatalf("20 parts: %q", got)
	}
}

func TestJoinFirstErrorWins(t *testing.T) {
	_, err := Join(Static("x"), fail(413, "first"), fail(400, "second"))(req("1.2.3.4:1"))
	wantErr(t, err, 413, "first")
	custom := errors.New("custom")
	_, err = Join(func(*http.Request) (string, error) { return "", custom })(nil)
	if err != custom {
		t.Fatalf("err = %v", err)
	}
}

func TestCombinatorsPanicOnMisuse(t *testing.T) {
	for name, f := range map[string]func(){
		"FirstOf()":    func() { FirstOf[Func]() },
		"Join()":       func() { Join[Func]() },
		"FirstOf(nil)": func() { FirstOf(RemoteIP(), nil) },
		"Join(nil)":    func() { Join[Func](nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		}()
	}
}

func TestFirstOfCopiesFuncs(t *testing.T) {
	fs := []Func{Static("a")}
	key := FirstOf(fs...)
	fs[0] = Static("b")
	if got, _ := key(nil); got != store.JoinID("0", "a") {
		t.Fatalf("got %q", got)
	}
}
