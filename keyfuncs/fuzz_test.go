package keyfuncs

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/dunglas/httpsfv"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
)

// FuzzRemoteIPForwarded: parsing X-Forwarded-For and Forwarded never panics, and
// the answer is either a canonical IP (or IPv6 group) or a *Error with 400.
// A peer that is not trusted always gets its own address.
func FuzzRemoteIPForwarded(f *testing.F) {
	f.Add("10.0.0.1:80", "198.51.100.7, 10.0.0.2", "", false, false)
	f.Add("10.0.0.1:80", "", `for="[2001:db8:cafe::17]:4711";proto=https, for=10.0.0.3`, true, true)
	f.Add("[::1]:80", "::ffff:1.2.3.4", "", true, false)
	f.Add("203.0.113.1:80", "1.1.1.1", `for=1.1.1.1`, false, true)
	f.Add("10.0.0.1:80", ",,, ,", `for=_x, for=unknown`, false, true)
	f.Add("10.0.0.1:80", "[fe80::1%eth0]:1", `for="\"quoted\"", for="a\\`, true, true)
	f.Add("[fe80::1%25en0]:1", "\x00\xff", "for=\x00;;;,,", false, false)
	f.Add("10.0.0.1", "2001:db8::1, 2001:db8::2", `FOR="2001:db8::9"`, true, true)
	trusted := mustPrefixes(f, "10.0.0.0/8", "2001:db8::/32", "::1")
	f.Fuzz(func(t *testing.T, remote, xff, fwd string, group, useForwarded bool) {
		c := IPConfig{Forwarded: useForwarded}
		if group {
			c.IPv6Prefix = 64
		}
		r := &http.Request{RemoteAddr: remote, Header: http.Header{}}
		if xff != "" {
			r.Header["X-Forwarded-For"] = strings.Split(xff, "\n")
		}
		if fwd != "" {
			r.Header["Forwarded"] = strings.Split(fwd, "\n")
		}
		got, err := RemoteIP(IPConfig{TrustedProxies: trusted, Forwarded: c.Forwarded, IPv6Prefix: c.IPv6Prefix})(r)
		if err != nil {
			var ke *Error
			require.ErrorAs(t, err, &ke)
			require.Equal(t, http.StatusBadRequest, ke.HTTPStatus())
			require.NotEmpty(t, ke.Source)
			return
		}
		checkCanonical(t, got, group)
		direct, err := RemoteIP(c)(r)
		require.NoError(t, err, "ForwardedIP succeeded where RemoteIP failed")
		if _, peer, _ := parseHostPort(remote); !slices.ContainsFunc(trusted, func(p netip.Prefix) bool { return p.Contains(peer) }) {
			require.Equal(t, direct, got, "an untrusted peer")
		}
	})
}

// checkCanonical checks that got is an address (or, grouped, an IPv6
// prefix) in the normalised form that RemoteIP and ForwardedIP promise.
func checkCanonical(t *testing.T, got string, group bool) {
	t.Helper()
	if group && strings.Contains(got, "/") {
		p, err := netip.ParsePrefix(got)
		require.NoError(t, err)
		require.True(t, p.Bits() == 64 && p.Addr().Is6() && !p.Addr().Is4In6() && p == p.Masked() && p.String() == got,
			"grouped result %q is not a canonical /64", got)
		return
	}
	a, err := netip.ParseAddr(got)
	require.NoError(t, err)
	require.True(t, a.Zone() == "" && !a.Is4In6() && a.String() == got, "result %q is not a canonical IP", got)
	require.False(t, group && a.Is6(), "IPv6 result %q not grouped", got)
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
		require.NoError(t, err)
		kb, err := Join(statics(lb)...)(nil)
		require.NoError(t, err)
		require.Equal(t, slices.Equal(la, lb), ka == kb, "Join(%q) = %q, Join(%q) = %q", la, ka, lb, kb)
		require.Equal(t, ka == kb, storekit.Key("t", "p", ka) == storekit.Key("t", "p", kb), "stored keys")

		ni, nj := int(i%4), int(j%4)
		fa, err := FirstOf(append(fails(ni), Static(a))...)(nil)
		require.NoError(t, err)
		fb, err := FirstOf(append(fails(nj), Static(b))...)(nil)
		require.NoError(t, err)
		require.Equal(t, ni == nj && a == b, fa == fb, "FirstOf(%d fails, %q) = %q, FirstOf(%d fails, %q) = %q", ni, a, fa, nj, b, fb)
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
	f.Fuzz(func(t *testing.T, body []byte, limit uint16, mode uint8) {
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
		got, err := BodyHash(int64(limit))(r)
		if len(body) > int(limit) {
			wantErr(t, err, http.StatusRequestEntityTooLarge, "body")
		} else {
			require.NoError(t, err)
			require.Equal(t, sha(body), got)
		}
		checkRestored(t, r, ct, body)
	})
}

// FuzzIdempotencyKey: what IdempotencyKey accepts is 1 to 255 characters of
// printable ASCII; it accepts a quoted value exactly when httpsfv parses it
// as an Item holding such a String, with the same text, and a bare value
// exactly when it is printable ASCII without spaces, double quotes and
// commas; every refusal is one of the constant errors, which hold nothing
// the request sent.
func FuzzIdempotencyKey(f *testing.F) {
	for _, s := range []string{
		`"8e03978e-40d5-43e8-bc93-6894a57f9324"`, `8e03978e-40d5-43e8-bc93-6894a57f9324`,
		`"a\"b\\c"`, `"a\nb"`, `""`, ``, ` "x" `, `"x";v=1`, `"x"; v`, `"x";v=`, `"x", "y"`, `a,b`, `a b`,
		`"x";b;i=-12;d=1.5;s="x;y\"";t=*tok/x:y;bs=:YWJj:;f=?0;dt=@1700000000;ds=%"caf%c3%a9"`,
		`"x";v=:YQ:`, `"x";v=:Y===:`, `"x";v=1.2345`, `"x";v=1234567890123.5`, `"x";v=%"%ff"`, `"x";v=@1.5`,
		"\"caf\xc3\xa9\"", "\"\x00\"", "a\x7f", `"unclosed`, `"x"y`, `abc;v=1`, "\"x\"\t", `"x",`,
		`"` + strings.Repeat("k", 255) + `"`, strings.Repeat("k", 256),
	} {
		f.Add(s, "", false)
	}
	f.Add(`"a"`, `"b"`, true)
	f.Add("a", "", true)
	f.Fuzz(func(t *testing.T, v, second string, twoLines bool) {
		lines := []string{v}
		if twoLines {
			lines = append(lines, second)
		}
		got, err := IdempotencyKey(nil)(idemReq(lines...))
		if err != nil {
			require.Contains(t, idemErrors, err)
		}
		if twoLines {
			require.Equal(t, errIdemRepeated, err)
			return
		}
		if err == nil {
			require.True(t, len(got) >= 1 && len(got) <= maxIdempotencyKeyLength, "accepted %d characters", len(got))
			require.False(t, strings.ContainsFunc(got, func(r rune) bool { return r < 0x20 || r > 0x7e }), "accepted %q", got)
		}

		// The oracle for the form the value has.
		var want string
		var wantOK bool
		if trimmed := strings.Trim(v, " "); strings.HasPrefix(trimmed, `"`) {
			it, perr := httpsfv.UnmarshalItem([]string{v})
			want, wantOK = it.Value.(string)
			wantOK = wantOK && perr == nil && want != "" && len(want) <= maxIdempotencyKeyLength
		} else {
			want = trimmed
			wantOK = want != "" && len(want) <= maxIdempotencyKeyLength &&
				!strings.ContainsFunc(want, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '"' || r == ',' })
		}
		require.Equal(t, wantOK, err == nil, "%q: got %q, %v", v, got, err)
		if wantOK {
			require.Equal(t, want, got)
		}

		// With a fallback, a present key is tagged and never falls back.
		fk, ferr := IdempotencyKey(Static("fallback"))(idemReq(lines...))
		require.Equal(t, err, ferr, "with a fallback")
		if err == nil {
			require.Equal(t, storekit.JoinID("0", got), fk)
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
	key := idempotent(Header("X-User-ID"))
	f.Fuzz(func(t *testing.T, user1, key1, body1, user2, key2, body2 string) {
		build := func(user, k, body string) (stored, parsed string, ok bool) {
			r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(body))
			r.Pattern = "POST /orders"
			r.Header["X-User-Id"] = []string{user}
			parsed = "body " + sha([]byte(body))
			if k != "" {
				r.Header["Idempotency-Key"] = []string{k}
				p, err := IdempotencyKey(nil)(idemReq(k))
				if err != nil {
					_, err = key(r)
					require.Error(t, err, "a key IdempotencyKey refuses was accepted: %q", k)
					return "", "", false
				}
				parsed = "key " + p
			}
			id, err := key(r)
			return storekit.Key("throttle", "idempotent", id), parsed, err == nil
		}
		s1, p1, ok1 := build(user1, key1, body1)
		s2, p2, ok2 := build(user2, key2, body2)
		if ok1 && ok2 {
			require.Equal(t, user1 == user2 && p1 == p2, s1 == s2, "(%q, %s) -> %q; (%q, %s) -> %q", user1, p1, s1, user2, p2, s2)
		}
	})
}
