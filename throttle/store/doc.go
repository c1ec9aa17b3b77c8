// Package store is the contract between a throttle limiter and the place its
// locks live: the Store interface, its optional capabilities (Notifier,
// Quota, Recorder) and the values they exchange.
//
// Users pick memstore, redisstore, rueidisstore or redlock and never call a
// store themselves. Write one of your own when locks must live elsewhere, and
// check it with storetest.Run. See docs/stores.md in the repository for what
// a store promises.
package store
