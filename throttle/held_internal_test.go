package throttle

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-throttle/throttle/throttle/memstore"
	"github.com/go-throttle/throttle/throttle/store"
)

// TestHeldTokens checks the tokens of leaseless holds: one per admission,
// never repeated, never the length of a store.NewToken token (so never
// equal to one), and freeing the key only for the hold that took it.
func TestHeldTokens(t *testing.T) {
	st := memstore.New()
	l, err := New(st, Policy{Name: "held", Mode: Dedupe, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !l.leaseless {
		t.Fatal("a Dedupe policy on memstore is not leaseless")
	}
	ctx := context.Background()
	seen := map[string]bool{}
	for i := range 1000 {
		h := l.heldRequest("id")
		if len(h.Token) != 12 || h.Token[0] != '~' || len(h.Token) == len(store.NewToken()) {
			t.Fatalf("token %q: want '~' and 11 characters", h.Token)
		}
		if strings.Trim(h.Token[1:], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			t.Fatalf("token %q is not base64url", h.Token)
		}
		if seen[h.Token] {
			t.Fatalf("token %q made twice (after %d)", h.Token, i)
		}
		seen[h.Token] = true
		if h.Key != l.key("id") {
			t.Fatalf("key %q, want %q", h.Key, l.key("id"))
		}
	}

	_, first, err := l.admitHeld(ctx, "a")
	if err != nil || first.Token == "" {
		t.Fatalf("admitHeld = %+v, %v", first, err)
	}
	// Another hold's token does not free the key; the holder's does.
	other := first
	other.Token = l.heldRequest("a").Token
	if err := l.releaseHeld(ctx, other); err == nil {
		t.Fatal("a release with another token succeeded")
	}
	if _, _, err := l.admitHeld(ctx, "a"); err == nil {
		t.Fatal("the key was freed by another token")
	}
	if err := l.releaseHeld(ctx, first); err != nil {
		t.Fatalf("release: %v", err)
	}
	if _, h, err := l.admitHeld(ctx, "a"); err != nil || h.Token == first.Token {
		t.Fatalf("after release: %+v, %v", h, err)
	}
}
