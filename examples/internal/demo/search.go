package demo

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/go-throttle/throttle/throttle"
	"github.com/go-throttle/throttle/throttle/store"
)

// The quota of GET /search: SearchLimit requests per SearchWindow per user,
// all of which may come at once. It is fixed: -window is /submit's.
const (
	SearchLimit  = 10
	SearchWindow = time.Minute
)

// SearchRate is the rate of GET /search: 10 requests per minute per user,
// all of which may come at once (Burst 10), refilled smoothly, one request
// every 6 s. Its RateLimit-Policy field is "search";q=10;w=60, and the 11th
// request within the minute gets 429 with a Retry-After of about 6 s.
var SearchRate = throttle.Rate{Limit: SearchLimit, Window: SearchWindow, Burst: SearchLimit}

// SearchQuota returns the config of GET /search's Quota (the rate,
// SearchRate, is given to guard.Quota). While Redis fails it does what
// -fail says, as /submit does.
func SearchQuota(s Settings) throttle.QuotaConfig {
	return throttle.QuotaConfig{Name: "search", Options: s.Options()}
}

// NewSearchQuota returns the Quota of GET /search: SearchQuota on
// s.Quotas, the store the flags chose for quotas (store itself, but for
// Redlock, which keeps no quotas), or on store when s.Quotas is nil.
func NewSearchQuota(store store.Store, s Settings) (*throttle.Quota, error) {
	if s.Quotas != nil {
		store = s.Quotas
	}
	return throttle.NewQuota(store, SearchQuota(s))
}

// SearchResult is one hit of GET /search.
type SearchResult struct {
	Title string `json:"title"`
	URL   string `json:"url"`
}

// SearchResponse is the JSON body of GET /search.
type SearchResponse struct {
	Query   string         `json:"query"`
	Results []SearchResult `json:"results"`
}

// catalogue is what GET /search searches: a few made-up pages.
var catalogue = []SearchResult{
	{"Rate limiting with GCRA", "https://example.com/articles/gcra"},
	{"RateLimit header fields for HTTP", "https://example.com/articles/ratelimit-headers"},
	{"Deduplicating form submissions", "https://example.com/articles/dedupe"},
	{"Idempotent retries with Idempotency-Key", "https://example.com/articles/idempotency"},
}

// Search returns the answer to the query q: the pages whose title contains
// it, ignoring case; all of them for an empty query.
func Search(q string) SearchResponse {
	resp := SearchResponse{Query: q, Results: []SearchResult{}} // [] rather than null when nothing matches
	needle := strings.ToLower(q)
	for _, r := range catalogue {
		if strings.Contains(strings.ToLower(r.Title), needle) {
			resp.Results = append(resp.Results, r)
		}
	}
	return resp
}

// SearchJSON returns the body of GET /search for r, the same bytes in every
// example: Search of the q query parameter (empty when absent), as JSON,
// valid whatever q holds (quotes, non-ASCII, invalid UTF-8, which becomes
// U+FFFD). Send it with Content-Type application/json.
func SearchJSON(r *http.Request) []byte {
	b, err := json.Marshal(Search(r.URL.Query().Get("q")))
	if err != nil { // cannot happen: only strings
		return []byte(`{"query":"","results":[]}` + "\n")
	}
	return append(b, '\n')
}
