package redislua

import "testing"

// TestShare: the estimate rises with outcomes (a refused acquisition, say)
// past Frequent, falls back below it without, and after a run of calls
// without the outcome settles at exactly 0, where observing more writes
// nothing.
func TestShare(t *testing.T) {
	var r Share
	if r.Frequent() {
		t.Fatal("a new estimate says refusals are frequent")
	}
	for range 3 {
		r.Observe(true)
	}
	if !r.Frequent() {
		t.Fatalf("3 refusals in a row: rate %d/%d, below the pipeline's %d", r.v.Load(), shareOne, shareFrequent)
	}
	for range 1000 {
		r.Observe(true)
	}
	if v := r.v.Load(); v <= shareOne*15/16 || v > shareOne {
		t.Fatalf("after 1000 refusals the rate is %d/%d, want nearly all", v, shareOne)
	}
	grants := 0
	for r.Frequent() {
		r.Observe(false)
		grants++
	}
	// From nearly 1 to below 1/8 at 15/16 per grant: ln 8 / ln(16/15).
	if grants < 30 || grants > 34 {
		t.Fatalf("%d grants brought refusals back below frequent, want about 32", grants)
	}
	for range 1000 {
		r.Observe(false)
	}
	if v := r.v.Load(); v != 0 {
		t.Fatalf("after 1000 grants the rate is %d, want 0", v)
	}
}
