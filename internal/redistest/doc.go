// Package redistest starts real redis-server processes for tests.
//
// Tests in this module never mock Redis: a mock agrees with whatever the
// code under test believes, while a real server checks the Lua scripts, the
// wire protocol and the expiry semantics. Each Start runs its own server on
// a free loopback port with persistence switched off and its files in the
// test's temporary directory, so parallel tests and parallel packages do not
// share state, and t.Cleanup stops the process by its PID.
//
// If redis-server is not installed, Start fails the test with the install
// command; under go test -short it skips instead.
package redistest
