package keyfuncs

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-throttle/throttle/internal/storekit"
)

func TestFirstOf(t *testing.T) {
	key := FirstOf(Header("X-User-ID"), RemoteIP())
	tests := []struct {
		name string
		r    *http.Request
		want string
	}{
		{"header wins", req("192.0.2.1:1", "X-User-ID", "42"), storekit.JoinID("0", "42")},
		{"falls back to the IP", req("192.0.2.1:1"), storekit.JoinID("1", "192.0.2.1")},
		{"header that looks like an IP", req("192.0.2.9:1", "X-User-ID", "192.0.2.1"), storekit.JoinID("0", "192.0.2.1")},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got, err := key(tt.r)
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.want, got, tt.name)
		require.NotContains(t, seen, got, "%s shares a key", tt.name)
		seen[got] = tt.name
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
	require.NoError(t, err)
	assert.Equal(t, storekit.JoinID("a:b", "POST", "orders"), got)

	// Separators in a value cannot forge another list.
	a, _ := Join(Static("a:b"), Static("c"))(nil)
	b, _ := Join(Static("a"), Static("b:c"))(nil)
	assert.NotEqual(t, a, b)

	// Many parts (beyond the stack buffer) still work.
	fs := make([]Func, 20)
	parts := make([]string, 20)
	for i := range fs {
		parts[i] = string(rune('a' + i))
		fs[i] = Static(parts[i])
	}
	got, err = Join(fs...)(nil)
	require.NoError(t, err)
	assert.Equal(t, storekit.JoinID(parts...), got)
}

func TestJoinFirstErrorWins(t *testing.T) {
	_, err := Join(Static("x"), fail(413, "first"), fail(400, "second"))(req("1.2.3.4:1"))
	wantErr(t, err, 413, "first")
	custom := errors.New("custom")
	_, err = Join(func(*http.Request) (string, error) { return "", custom })(nil)
	require.Equal(t, custom, err)
}

func TestCombinatorsPanicOnMisuse(t *testing.T) {
	assert.Panics(t, func() { FirstOf[Func]() }, "FirstOf()")
	assert.Panics(t, func() { Join[Func]() }, "Join()")
	assert.Panics(t, func() { FirstOf(RemoteIP(), nil) }, "FirstOf(nil)")
	assert.Panics(t, func() { Join[Func](nil) }, "Join(nil)")
}

func TestFirstOfCopiesFuncs(t *testing.T) {
	fs := []Func{Static("a")}
	key := FirstOf(fs...)
	fs[0] = Static("b")
	got, err := key(nil)
	require.NoError(t, err)
	assert.Equal(t, storekit.JoinID("0", "a"), got)
}
