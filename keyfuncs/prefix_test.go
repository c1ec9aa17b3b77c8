package keyfuncs

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParsePrefixes(t *testing.T) {
	got, err := ParsePrefixes("10.0.0.0/8", " 192.0.2.10 ", "::1", "2001:db8::/32", "10.1.2.3/16", "::ffff:172.16.0.0/108")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "192.0.2.10/32", "::1/128", "2001:db8::/32", "10.1.0.0/16", "172.16.0.0/12"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != netip.MustParsePrefix(want[i]) {
			t.Errorf("%d: got %v, want %v", i, got[i], want[i])
		}
	}
	if p, err := ParsePrefixes(); err != nil || len(p) != 0 {
		t.Fatalf("empty: %v, %v", p, err)
	}
}

func TestParsePrefixesErrors(t *testing.T) {
	for _, s := range []string{"", "  ", "10.0.0.0/33", "10.0.0/8", "banana", "10.0.0.1/", "fe80::1%eth0", "1.2.3.4:80", "http://10.0.0.1"} {
		_, err := ParsePrefixes("10.0.0.0/8", s)
		if err == nil {
			t.Errorf("ParsePrefixes(%q) succeeded", s)
			continue
		}
		if !strings.Contains(err.Error(), "trusted proxy 2") {
			t.Errorf("error %q does not say which entry", err)
		}
	}
}
