package keyfuncs

import (
	"net/http"
	"strings"
	"testing"
)

func TestRemoteIP(t *testing.T) {
	tests := []struct {
		name, remote string
		opts         []IPOption
		want         string
	}{
		{"ipv4 with port", "192.0.2.1:1234", nil, "192.0.2.1"},
		{"ipv4 bare", "192.0.2.1", nil, "192.0.2.1"},
		{"ipv6 with port", "[2001:db8::1]:443", nil, "2001:db8::1"},
		{"ipv6 bare", "2001:db8::1", nil, "2001:db8::1"},
		{"ipv6 bracketed no port", "[2001:db8::1]", nil, "2001:db8::1"},
		{"ipv6 non-canonical", "[2001:DB8:0:0:0:0:0:1]:1", nil, "2001:db8::1"},
		{"ipv6 zone dropped", "[fe80::1%eth0]:80", nil, "fe80::1"},
		{"mapped ipv4 unmapped", "[::ffff:192.0.2.1]:80", nil, "192.0.2.1"},
		{"mapped ipv4 bare", "::ffff:192.0.2.1", nil, "192.0.2.1"},
		{"group /64", "[2001:db8:1:2:3:4:5:6]:80", []IPOption{GroupIPv6(64)}, "2001:db8:1:2::/64"},
		{"group /48", "[2001:db8:1:2:3:4:5:6]:80", []IPOption{GroupIPv6(48)}, "2001:db8:1::/48"},
		{"group /0", "[2001:db8::1]:80", []IPOption{GroupIPv6(0)}, "::/0"},
		{"group /128 is the address", "[2001:db8::1]:80", []IPOption{GroupIPv6(128)}, "2001:db8::1"},
		{"group leaves ipv4 alone", "192.0.2.1:80", []IPOption{GroupIPv6(64)}, "192.0.2.1"},
		{"group leaves mapped ipv4 alone", "[::ffff:192.0.2.1]:80", []IPOption{GroupIPv6(64)}, "192.0.2.1"},
		{"obfuscated port", "192.0.2.1:_p1", nil, "192.0.2.1"},
		{"nil option ignored", "192.0.2.1:80", []IPOption{nil}, "192.0.2.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RemoteIP(tt.opts...)(req(tt.remote))
			if err != nil || got != tt.want {
				t.Fatalf("RemoteIP(%q) = %q, %v; want %q", tt.remote, got, err, tt.want)
			}
		})
	}
}

func TestRemoteIPSameClientSameKey(t *testing.T) {
	f := RemoteIP(GroupIPv6(64))
	a, _ := f(req("[2001:db8:1:2::a]:1"))
	b, _ := f(req("[2001:db8:1:2:ffff::b%en0]:2"))
	c, _ := f(req("[2001:db8:1:3::a]:1"))
	if a != b {
		t.Fatalf("same /64 gave %q and %q", a, b)
	}
	if a == c {
		t.Fatalf("different /64 gave one key %q", a)
	}
	v4, _ := f(req("1.2.3.4:1"))
	mapped, _ := f(req("[::ffff:1.2.3.4]:9"))
	if v4 != mapped {
		t.Fatalf("1.2.3.4 = %q, ::ffff:1.2.3.4 = %q", v4, mapped)
	}
}

func TestRemoteIPInvalid(t *testing.T) {
	for _, remote := range []string{
		"", "@", "unix", "localhost:80", "01.2.3.4:80", "1.2.3:80", "[1.2.3.4]x", "1.2.3.4:80:90",
		"[]:80", "[", "]", "1.2.3.4 :80", "\x00\xff:1", "2001:db8::1::2",
		"1.2.3.4:", "[1.2.3.4]:80", "[2001:db8::1]:", "[2001:db8::1]80", "1.2.3.4:8 0", "[2001:db8::1:80",
	} {
		_, err := RemoteIP()(req(remote))
		wantErr(t, err, http.StatusBadRequest, "remote address", remote)
	}
}

func TestGroupIPv6Panics(t *testing.T) {
	for _, bits := range []int{-1, 129} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("GroupIPv6(%d) did not panic", bits)
				}
			}()
			GroupIPv6(bits)
		}()
	}
}

// TestCanonicalIPv4Host checks RemoteIP's fast path against the general
// one: wherever it answers, the general path gives the same identity.
func TestCanonicalIPv4Host(t *testing.T) {
	for _, s := range []string{
		"192.0.2.1:1234", "192.0.2.1", "0.0.0.0:0", "255.255.255.255:65535", "10.0.0.1:_obf",
		"256.0.0.1:1", "01.2.3.4:1", "1.2.3:1", "1.2.3.4.5:1", "1..3.4:1", ".1.2.3:1", "1.2.3.4.:1",
		"1.2.3.4:", "1.2.3.4:a:b", "1.2.3.4:12/", "[::1]:1", "::ffff:1.2.3.4", "1.2.3.4%eth0:1", "", ":1", "1.2.3.04:1",
	} {
		host, ok := canonicalIPv4Host(s)
		gh, addr, err := parseRemote(s)
		switch {
		case ok && err != nil:
			t.Errorf("%q: fast path %q, general path %v", s, host, err)
		case ok && newIPConfig(nil).format(gh, addr) != host:
			t.Errorf("%q: fast path %q, general path %q", s, host, newIPConfig(nil).format(gh, addr))
		case !ok && err == nil && addr.Is4() && isPlainIPv4(gh) && strings.Count(s, ":") <= 1:
			t.Errorf("%q: canonical IPv4 %q missed by the fast path", s, gh)
		}
	}
}
