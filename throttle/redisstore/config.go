package redisstore

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// safePolicy is the only maxmemory-policy under which Redis never drops a
// lock: every other policy evicts keys when memory runs short, the
// volatile-* ones precisely the keys with a time to live, which every lock
// has. An evicted lock is simply gone: the next acquisition succeeds while
// the first holder still works, and nobody is told.
const safePolicy = "noeviction"

// checkEviction asks Redis once, in the background, for its
// maxmemory-policy and logs one warning when it is not noeviction: on a
// Cluster it asks every master, otherwise the server the client reaches.
// It is silent when it cannot ask (managed Redis services often rename or
// forbid CONFIG, and ACLs may deny it) or Redis does not answer; it never
// fails or delays New, and Close cancels it and waits for it.
func (w *watcher) checkEviction(client redis.UniversalClient, log *slog.Logger) {
	started := w.background(func(ctx context.Context) {
		defer close(w.checked)
		ctx, cancel := context.WithTimeout(ctx, w.s.watchTimeout)
		defer cancel()
		found, err := evictionPolicies(ctx, client)
		if err != nil {
			log.Debug("redisstore: cannot check maxmemory-policy", "err", err)
		}
		warnEviction(log, found)
	})
	if !started {
		close(w.checked)
	}
}

// evictionPolicies returns the maxmemory-policy of each server asked, by
// address ("" for a client that is not a Cluster client), and the first
// error; on a Cluster it returns the answers it got even when some master
// did not answer.
func evictionPolicies(ctx context.Context, client redis.UniversalClient) (map[string]string, error) {
	var mu sync.Mutex
	found := make(map[string]string)
	get := func(ctx context.Context, c redis.Cmdable, addr string) error {
		m, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
		if err != nil {
			return err
		}
		if p, ok := m["maxmemory-policy"]; ok {
			mu.Lock()
			found[addr] = p
			mu.Unlock()
		}
		return nil
	}
	var err error
	if cc, ok := client.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return get(ctx, c, c.Options().Addr)
		})
	} else {
		err = get(ctx, client, "")
	}
	mu.Lock()
	defer mu.Unlock()
	return found, err
}

// warnEviction logs one warning when any server in found evicts keys.
func warnEviction(log *slog.Logger, found map[string]string) {
	var addrs, policies []string
	for addr, p := range found {
		if strings.EqualFold(p, safePolicy) {
			continue
		}
		if addr != "" {
			addrs = append(addrs, addr)
		}
		if !slices.Contains(policies, p) {
			policies = append(policies, p)
		}
	}
	if len(policies) == 0 {
		return
	}
	slices.Sort(addrs)
	slices.Sort(policies)
	attrs := []any{"maxmemory-policy", strings.Join(policies, ",")}
	if len(addrs) > 0 {
		attrs = append(attrs, "nodes", addrs)
	}
	log.Warn("redisstore: Redis may evict keys when memory runs short, and an evicted lock is "+
		"silently lost (a duplicate gets through): set maxmemory-policy noeviction", attrs...)
}
