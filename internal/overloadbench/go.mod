module github.com/go-throttle/throttle/internal/overloadbench

go 1.25.0

replace github.com/go-throttle/throttle => ../..

require (
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/go-throttle/throttle v0.0.0-00010101000000-000000000000
)

require (
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
)
