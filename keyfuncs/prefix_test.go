package keyfuncs

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePrefixes(t *testing.T) {
	got, err := ParsePrefixes("10.0.0.0/8", " 192.0.2.10 ", "::1", "2001:db8::/32", "10.1.2.3/16", "::ffff:172.16.0.0/108")
	require.NoError(t, err)
	var want []netip.Prefix
	for _, s := range []string{"10.0.0.0/8", "192.0.2.10/32", "::1/128", "2001:db8::/32", "10.1.0.0/16", "172.16.0.0/12"} {
		want = append(want, netip.MustParsePrefix(s))
	}
	assert.Equal(t, want, got)

	got, err = ParsePrefixes()
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestParsePrefixesErrors(t *testing.T) {
	for _, s := range []string{"", "  ", "10.0.0.0/33", "10.0.0/8", "banana", "10.0.0.1/", "fe80::1%eth0", "1.2.3.4:80", "http://10.0.0.1"} {
		_, err := ParsePrefixes("10.0.0.0/8", s)
		require.Error(t, err, "ParsePrefixes(%q)", s)
		assert.Contains(t, err.Error(), "trusted proxy 2", "the error names the entry")
	}
}
