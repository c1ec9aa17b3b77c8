//go:build !race

package memstore

const raced = false
