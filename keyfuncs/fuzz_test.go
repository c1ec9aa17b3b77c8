package keyfuncs

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/go-throttle/throttle/throttle/store"
)

// FuzzForwardedIP: parsing X-Forwarded-For and Forwarded never panics, and
// the answer is either a canonical IP (or IPv6 group) or a *Error with 400.
// A peer that is not trusted always gets its own address.
func FuzzForwardedIP(f *testing.F) {
	f.Add("10.0.0.1:80", "198.51.100.7, 10.0.0.2", "", false, false)
	f.Add("10.0.0.1:80", "", `for="[2001:db8:cafe::17]:4711";proto=https, for=10.0.0.3`, true, true)
	f.Add("[::1]:80", "::ffff:1.2.3.4", "", true, false)
	f.Add("203.0.113.1:80", "1.1.1.1", `for=1.1.1.1`, false, true)
	f.Add("10.0.0.1:80", ",,, ,", `for=_x, for=unknown`, false, true)
	f.Add("10.0.0.1:80", "[fe80::1%eth0]:1", `for="\"quoted\"", for="a\\`, true, true)
	f.Add("[fe80::1%25en0]:1", "\x00\xff", "for=\x00;;;,,", false, false)
	f.Add("10.0.0.1", "2001:db8::1, 2001:db8::2", `FOR="2001:db8::9"`, true, true)
	trusted, err := ParsePrefixes("10.0.0.0/8", "2001:db8::/32", "::1")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, remote, xff, fwd string, group, useForwarded bool) {
		var opts []IPOption
		if group {
			opts = append(opts, GroupIPv6(64))
		}
		if useForwarded {
			opts = append(opts, FromForwarded())
		}
		r := &http.Request{RemoteAddr: remote, Header: http.Header{}}
		if xff != "" {
			r.Header["X-Forwarded-For"] = strings.Split(xff, "\n")
		}
		if fwd != "" {
			r.Header["Forwarded"] = strings.Split(fwd, "\n")
		}
		got, err := ForwardedIP(trusted, opts...)(r)
		if err != nil {
			var ke *Error
			if !errors.As(err, &ke) || ke.HTTPStatus() != http.StatusBadRequest || ke.Source == "" {
				t.Fatalf("error %v (%T) is not a 400 *Error", err, err)
			}
			return
		}
		checkCanonical(t, got, group)
		direct, derr := RemoteIP(opts...)(r)
		if derr != nil {
			t.Fatalf("ForwardedIP succeeded where RemoteIP failed: %v", derr)
		}
		if _, peer, _ := parseHostPort(remote); !slices.ContainsFunc(trusted, func(p netip.Prefix) bool { return p.Contains(peer) }) && got != direct {
			t.Fatalf("untrusted peer %q: got %q", direct, got)
		}
	})
}

// checkCanonical checks that got is an address (or, grouped, an IPv6
// prefix) in the normalised form that RemoteIP and ForwardedIP promise.
func checkCanonical(t *testing.T, got string, group bool) {
	t.Helper()
	if group && strings.Contains(got, "/") {
		p, err := netip.ParsePrefix(got)
		if err != nil || p.Bits() != 64 || !p.Addr().Is6() || p.Addr().Is4In6() || p != p.Masked() || p.String() != got {
			t.Fatalf("grouped result %q is not a canonical /64", got)
		}
		return
	}
	a, err := netip.ParseAddr(got)
	if err != nil || a.Zone() != "" || a.Is4In6() || a.String() != got {
		t.Fatalf("result %q is not a canonical IP (%v)", got, err)
	}
	if group && a.Is6() {
		t.Fatalf("IPv6 result %q not grouped", got)
	}
}

// FuzzJoinFirstOf: different component lists give different identities,
// through Join and through FirstOf (where the index of the answering func
// is part of the identity), and so different stored keys.
func FuzzJoinFirstOf(f *testing.F) {
	f.Add("a:b\xffc", "a\xffb:c", uint8(0), uint8(0))
	f.Add("1.2.3.4", "1.2.3.4", uint8(0), uint8(1))
	f.Add("", "\xff", uint8(2), uint8(2))
	f.Add("%3A", ":", uint8(1), uint8(1))
	f.Add("a{b}", "a%7Bb%7D", uint8(3), uint8(0))
	f.Add(strings.Repeat("x", 100), strings.Repeat("x", 99)+"y", uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, a, b string, i, j uint8) {
		la, lb := strings.Split(a, "\xff"), strings.Split(b, "\xff")
		ka, err := Join(statics(la)...)(nil)
		if err != nil {
			t.Fatal(err)
		}
		kb, err := Join(statics(lb)...)(nil)
		if err != nil {
			t.Fatal(err)
		}
		if (ka == kb) != slices.Equal(la, lb) {
			t.Fatalf("Join(%q) = %q, Join(%q) = %q", la, ka, lb, kb)
		}
		if sa, sb := store.Key("t", "p", ka), store.Key("t", "p", kb); (sa == sb) != (ka == kb) {
			t.Fatalf("stored keys %q and %q", sa, sb)
		}

		ni, nj := int(i%4), int(j%4)
		fa, err := FirstOf(append(fails(ni), Static(a))...)(nil)
		if err != nil {
			t.Fatal(err)
		}
		fb, err := FirstOf(append(fails(nj), Static(b))...)(nil)
		if err != nil {
			t.Fatal(err)
		}
		if (fa == fb) != (ni == nj && a == b) {
			t.Fatalf("FirstOf(%d fails, %q) = %q, FirstOf(%d fails, %q) = %q", ni, a, fa, nj, b, fb)
		}
	})
}

func statics(ss []string) []Func {
	fs := make([]Func, len(ss))
	for i, s := range ss {
		fs[i] = Static(s)
	}
	return fs
}

func fails(n int) []Func {
	fs := make([]Func, n)
	for i := range fs {
		fs[i] = fail(http.StatusBadRequest, "x")
	}
	return fs
}

// FuzzBodyHash: the hash is the SHA-256 of a body within the limit, a longer
// body gives 413, and either way the handler reads back the whole body.
func FuzzBodyHash(f *testing.F) {
	f.Add([]byte(""), uint16(0), uint8(0))
	f.Add([]byte("hello"), uint16(5), uint8(1))
	f.Add([]byte("hello"), uint16(4), uint8(2))
	f.Add([]byte("\x00\xff:{}%\r\n"), uint16(100), uint8(3))
	f.Add(bytes.Repeat([]byte("ab"), 5000), uint16(9999), uint8(4))
	f.Fuzz(func(t *testing.T, body []byte, max uint16, mode uint8) {
		var src io.Reader = bytes.NewReader(body)
		switch mode % 3 {
		case 1:
			src = iotest.OneByteReader(src)
		case 2:
			src = iotest.HalfReader(src)
		}
		cl := int64(-1)
		if mode&4 != 0 {
			cl = int64(len(body))
		}
		r, ct := bodyReq(src, cl)
		got, err := BodyHash(int64(max))(r)
		if len(body) > int(max) {
			var ke *Error
			if !errors.As(err, &ke) || ke.HTTPStatus() != http.StatusRequestEntityTooLarge {
				t.Fatalf("%d bytes over limit %d: %q, %v", len(body), max, got, err)
			}
		} else if err != nil || got != sha(body) {
			t.Fatalf("%d bytes, limit %d: %q, %v", len(body), max, got, err)
		}
		checkRestored(t, r, ct, body)
	})
}
