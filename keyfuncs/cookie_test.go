package keyfuncs

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/go-throttle/throttle/throttle/store"
)

func TestCookieValues(t *testing.T) {
	tests := []struct {
		name, header, want string
	}{
		{"only cookie", "demo_user=7QX2", "7QX2"},
		{"among others", "theme=dark; demo_user=abc; lang=en", "abc"},
		{"first of two", "demo_user=first; demo_user=second", "first"},
		{"separators kept", "demo_user=a:b{c}%d", "a:b{c}%d"},
		{"quotes removed", `demo_user="q1"`, "q1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Cookie("demo_user")(req("1.2.3.4:1", "Cookie", tt.header))
			if err != nil || got != tt.want {
				t.Fatalf("Cookie: %q gives %q, %v; want %q", tt.header, got, err, tt.want)
			}
		})
	}
	// Several Cookie lines (HTTP/2 may split them) are all searched.
	r := req("1.2.3.4:1", "Cookie", "a=1", "Cookie", "demo_user=on-line-2")
	if got, err := Cookie("demo_user")(r); err != nil || got != "on-line-2" {
		t.Fatalf("second Cookie line: %q, %v", got, err)
	}
}

// A missing, empty or malformed cookie is a 400 naming the cookie and
// nothing the client sent; it is one shared *Error per Cookie func.
func TestCookieMissing(t *testing.T) {
	f := Cookie("demo_user")
	var first error
	for _, c := range []string{"", "other=secret-1", "demo_user=", "Demo_User=secret-2", "demo_user=bad\"secret-3",
		"demo_user=bad\x01secret-4", "demo_users=secret-5"} {
		r := req("1.2.3.4:1")
		if c != "" {
			r.Header.Set("Cookie", c)
		}
		got, err := f(r)
		if got != "" {
			t.Fatalf("Cookie %q: got identity %q, want none", c, got)
		}
		wantErr(t, err, http.StatusBadRequest, `cookie "demo_user"`, "secret")
		if err.Error() != `keyfuncs: cookie "demo_user": missing` {
			t.Fatalf("Cookie %q: error text %q", c, err)
		}
		if first == nil {
			first = err
		} else if err != first {
			t.Fatalf("Cookie %q: a new error value, want the shared one", c)
		}
	}
}

// A long cookie is taken whole, and the stored key stays short: store.Key
// hashes a long identity, as for a header.
func TestCookieLongValueGivesBoundedKey(t *testing.T) {
	big := strings.Repeat("c", 64<<10)
	got, err := Cookie("demo_user")(req("1.2.3.4:1", "Cookie", "demo_user="+big))
	if err != nil || got != big {
		t.Fatalf("len %d, %v", len(got), err)
	}
	if k := store.Key("throttle", "submit", got); len(k) > 200 {
		t.Fatalf("stored key is %d bytes", len(k))
	}
}

// The examples' chain: X-User-ID, else the cookie, else the client IP. The
// three sources never share an identity, even for equal values.
func TestCookieInFirstOf(t *testing.T) {
	user := FirstOf(Header("X-User-ID"), Cookie("demo_user"), RemoteIP())
	id := func(r *http.Request) string {
		t.Helper()
		v, err := user(r)
		if err != nil {
			t.Fatalf("FirstOf: %v", err)
		}
		return v
	}
	byHeader := id(req("192.0.2.1:1", "X-User-ID", "192.0.2.1", "Cookie", "demo_user=192.0.2.1"))
	byCookie := id(req("192.0.2.1:1", "Cookie", "demo_user=192.0.2.1"))
	byIP := id(req("192.0.2.1:1"))
	if byHeader == byCookie || byCookie == byIP || byHeader == byIP {
		t.Fatalf("identities collide: header %q, cookie %q, IP %q", byHeader, byCookie, byIP)
	}
	if got := id(req("198.51.100.7:1", "Cookie", "demo_user=192.0.2.1")); got != byCookie {
		t.Fatalf("the cookie's identity depends on the peer: %q and %q", got, byCookie)
	}
	if got := id(req("192.0.2.1:1", "Cookie", "demo_user=")); got != byIP {
		t.Fatalf("an empty cookie did not fall through to the IP: %q, want %q", got, byIP)
	}
	var ke *Error
	if _, err := user(req("not-an-address")); !errors.As(err, &ke) {
		t.Fatalf("no source at all: err %v, want the IP's *Error", err)
	}
}
