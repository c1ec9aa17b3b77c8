package storekit_test

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/go-throttle/throttle/internal/storekit"
)

// hashTag returns what Redis Cluster hashes for key: the part between the
// first '{' and the first '}' after it.
func hashTag(key string) string {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return key
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return key
	}
	return key[i+1 : i+1+j]
}

func TestKeyFormat(t *testing.T) {
	cases := []struct{ prefix, policy, id, want string }{
		{"throttle", "submit", "42", "throttle:{submit:42}"},
		{"p", "submit", "a:b", "p:{submit:a%3Ab}"},
		{"p", "x{y}", "%", "p:{x%7By%7D:%25}"},
		{"p", "s", "", "p:{s:}"},
		{"p", "s", "two words\n", "p:{s:two%20words%0A}"},
		{"p", "s", "é", "p:{s:%C3%A9}"},
	}
	for _, c := range []struct {
		job  storekit.Job
		rate string
		want string
	}{
		{storekit.QuotaJob, "search", "throttle:{search:42:quota}:search"},
		{storekit.QuotaJob, "fence", "throttle:{search:42:quota}:fence"},
		{storekit.QuotaJob, "a:b", "throttle:{search:42:quota}:a%3Ab"},
		{storekit.ReplayJob, "", "throttle:{search:42:replay}"},
	} {
		if got := string(storekit.AppendJobKey(nil, c.job, "throttle", "search", "42", c.rate)); got != c.want {
			t.Errorf("AppendJobKey(%v, %q) = %q, want %q", c.job, c.rate, got, c.want)
		}
	}
	for _, c := range cases {
		if got := storekit.Key(c.prefix, c.policy, c.id); got != c.want {
			t.Errorf("Key(%q, %q, %q) = %q, want %q", c.prefix, c.policy, c.id, got, c.want)
		}
	}
}

func TestKeyHashesLongComponents(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	k := storekit.Key("throttle", "submit", long)
	if len(k) > 128 {
		t.Fatalf("key for a 1 MiB id is %d bytes long", len(k))
	}
	if !strings.Contains(k, "%!") {
		t.Fatalf("long id not marked as hashed: %q", k)
	}
	other := storekit.Key("throttle", "submit", long[:len(long)-1]+"y")
	if k == other {
		t.Fatal("two different long ids share a key")
	}
	// The longest component kept as is, and the shortest one hashed.
	edge := strings.Repeat("a", storekit.MaxComponent)
	if k := storekit.Key("p", "s", edge); !strings.Contains(k, edge) {
		t.Fatalf("a %d-byte id was hashed: %q", storekit.MaxComponent, k)
	}
	if k := storekit.Key("p", "s", edge+"a"); strings.Contains(k, edge) {
		t.Fatalf("a %d-byte id was kept: %q", storekit.MaxComponent+1, k)
	}
	// The bound is on the escaped component: 21 colons escape to 63
	// bytes and are kept, 22 to 66 and are hashed, by Key and AppendKey
	// alike.
	kept, hashed := strings.Repeat(":", 21), strings.Repeat(":", 22)
	if k := storekit.Key("p", "s", kept); k != "p:{s:"+strings.Repeat("%3A", 21)+"}" {
		t.Fatalf("21 colons: %q", k)
	}
	sum := sha256.Sum256([]byte(hashed))
	want := "p:{s:%!" + base64.RawURLEncoding.EncodeToString(sum[:]) + "}"
	if k := storekit.Key("p", "s", hashed); k != want {
		t.Fatalf("22 colons: %q, want %q", k, want)
	}
	if k := string(storekit.AppendKey([]byte("x"), "p", "s", hashed)); k != "x"+want {
		t.Fatalf("AppendKey, 22 colons: %q, want x%q", k, want)
	}
}

func TestFenceKeySharesSlot(t *testing.T) {
	k := storekit.Key("throttle", "jobs", "customer:7")
	if hashTag(storekit.FenceKey(k)) != hashTag(k) {
		t.Fatalf("fence key %q and lock key %q hash differently", storekit.FenceKey(k), k)
	}
}

// TestKeyFamiliesNeverMeet checks, over a generated set of every job,
// prefix, policy, id and rate name, the tricky ones included (separators,
// the family and sibling words, escapes, hashed lengths), that two
// different (job, prefix, policy, id, rate, smooth or strict) never share a key, that no key
// is another's FenceKey or RecordKey, and that the hash tag of every key
// starts with its escaped policy and is shared by a quota's rates.
func TestKeyFamiliesNeverMeet(t *testing.T) {
	long := strings.Repeat("z", storekit.MaxComponent+1)
	parts := []string{"", "a", "fence", "record", "quota", "replay", "strict", "a:strict", "a:b", "a%3Ab", ":quota", "quota}:x",
		"{x}", "%", "%!", "a:quota}:fence", "x:replay", long, long + "y", strings.Repeat(":", 22)}
	type origin struct {
		job                      storekit.Job
		prefix, policy, id, rate string
	}
	owner := map[string]origin{}
	tags := map[[3]string]string{} // prefix, policy, id: the hash tag of its quota keys
	var siblings []string
	for _, job := range []storekit.Job{storekit.LockJob, storekit.QuotaJob, storekit.ReplayJob} {
		for _, prefix := range []string{"throttle", "t:x"} {
			for _, policy := range parts {
				for _, id := range parts {
					rates := parts
					if job != storekit.QuotaJob {
						rates = []string{""} // ignored
					}
					for _, rate := range rates {
						o := origin{job, prefix, policy, id, rate}
						k := string(storekit.AppendJobKey(nil, job, prefix, policy, id, rate))
						if prev, ok := owner[k]; ok {
							t.Fatalf("%+v and %+v share key %q", prev, o, k)
						}
						owner[k] = o
						siblings = append(siblings, storekit.FenceKey(k), storekit.RecordKey(k))
						if job == storekit.QuotaJob { // the strict rate's key, in the same hash tag
							s := k + storekit.StrictSuffix
							if prev, ok := owner[s]; ok {
								t.Fatalf("%+v and the strict form of %+v share key %q", prev, o, s)
							}
							owner[s] = origin{job, prefix, policy, id, rate + " (strict)"}
							siblings = append(siblings, storekit.FenceKey(s), storekit.RecordKey(s))
							if hashTag(s) != hashTag(k) {
								t.Fatalf("strict key %q and quota key %q hash differently", s, k)
							}
						}
						tag := hashTag(k)
						if want := hashTag(storekit.Key("", policy, id)); tag != want && !strings.HasPrefix(tag, want+":") {
							t.Fatalf("key %q of %+v: hash tag %q", k, o, tag)
						}
						if job == storekit.QuotaJob {
							at := [3]string{prefix, policy, id}
							if prev, ok := tags[at]; ok && prev != tag {
								t.Fatalf("quota keys of %q in hash tags %q and %q", at, prev, tag)
							}
							tags[at] = tag
						}
					}
				}
			}
		}
	}
	for _, s := range siblings {
		if o, ok := owner[s]; ok {
			t.Fatalf("sibling %q is the key of %+v", s, o)
		}
	}
	if got := string(storekit.AppendJobKey(nil, storekit.LockJob, "p", "s", "1", "x")); got != storekit.Key("p", "s", "1") {
		t.Fatalf("a lock's key %q is not Key's", got)
	}
}

func TestJoinID(t *testing.T) {
	if storekit.JoinID("a:b", "c") == storekit.JoinID("a", "b:c") {
		t.Fatal("JoinID is not injective over separators")
	}
	if got := storekit.JoinID("42", "POST"); got != "42:POST" {
		t.Fatalf("JoinID = %q", got)
	}
	if storekit.JoinID() != "" || storekit.JoinID("") == storekit.JoinID("", "") {
		t.Fatal("JoinID confuses empty lists")
	}
}

// FuzzKey checks the promises of Key: different ids give different keys,
// the key is bounded whatever the id, and the hash tag spans exactly the
// escaped policy and id.
func FuzzKey(f *testing.F) {
	for _, s := range [][2]string{
		{"42", "43"}, {"a:b", "a%3Ab"}, {"{x}", "%7Bx%7D"}, {"", "%"},
		{strings.Repeat("z", 100), strings.Repeat("z", 101)}, {"\x00\xff", "\x00"},
		{"%!abc", "x"}, {strings.Repeat(":", 30), strings.Repeat("%", 30)},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, kb := storekit.Key("throttle", "submit", a), storekit.Key("throttle", "submit", b)
		if a != b && ka == kb {
			t.Fatalf("ids %q and %q share key %q", a, b, ka)
		}
		for _, k := range []string{ka, kb} {
			if len(k) > len("throttle:{submit:}")+storekit.MaxComponent {
				t.Fatalf("key %q is %d bytes", k, len(k))
			}
			if strings.Count(k, "{") != 1 || strings.Count(k, "}") != 1 || !strings.HasSuffix(k, "}") {
				t.Fatalf("key %q breaks the hash tag", k)
			}
			if hashTag(k) != k[len("throttle:{"):len(k)-1] {
				t.Fatalf("hash tag of %q is %q", k, hashTag(k))
			}
		}
	})
}

// FuzzJoinID checks that two different pairs never join to the same id.
func FuzzJoinID(f *testing.F) {
	f.Add("a:b", "c", "a", "b:c")
	f.Add("", ":", ":", "")
	f.Add("%3A", "", ":", "")
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		if (a != c || b != d) && storekit.JoinID(a, b) == storekit.JoinID(c, d) {
			t.Fatalf("(%q, %q) and (%q, %q) join to %q", a, b, c, d, storekit.JoinID(a, b))
		}
		if storekit.JoinID(a) == storekit.JoinID(c, d) {
			t.Fatalf("(%q) and (%q, %q) join alike", a, c, d)
		}
	})
}

// keySink keeps BenchmarkKey's keys on the heap, where a store keeps them.
var keySink string

func BenchmarkKey(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		keySink = storekit.Key("throttle", "submit", "user-12345")
	}
}

func BenchmarkAppendKeyToken(b *testing.B) {
	b.ReportAllocs()
	var buf [160]byte
	for b.Loop() {
		k := storekit.AppendKey(buf[:0], "throttle", "submit", "10.1.2.3")
		_ = storekit.AppendToken(k)
	}
}

// TestAppendKey checks that AppendKey appends what Key returns, for ids
// that are escaped, hashed, or left as they are.
func TestAppendKey(t *testing.T) {
	for _, id := range []string{"", "user-42", "a:b{c}%d e\xff", strings.Repeat("x", 200), strings.Repeat(":", 40)} {
		got := string(storekit.AppendKey([]byte("before|"), "throttle", "sub:mit", id))
		if want := "before|" + storekit.Key("throttle", "sub:mit", id); got != want {
			t.Errorf("AppendKey(%q) = %q, want %q", id, got, want)
		}
	}
}
