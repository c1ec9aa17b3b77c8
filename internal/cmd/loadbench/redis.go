package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// server is a private redis-server started for the run, so that the figures
// do not depend on what else uses a shared one.
type server struct {
	addr string
	cmd  *exec.Cmd
}

// startRedis starts redis-server on a free loopback port without
// persistence and waits until it answers PING.
func startRedis() (*server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting redis-server (is it installed?): %w", err)
	}
	s := &server{addr: fmt.Sprintf("127.0.0.1:%d", port), cmd: cmd}
	c := redis.NewClient(&redis.Options{Addr: s.addr})
	defer func() { _ = c.Close() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("redis-server on %s does not answer: %w", s.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// redisFor returns the Redis at addr, or a private one when addr is empty.
func redisFor(addr string) (*server, error) {
	if addr != "" {
		return &server{addr: addr}, nil
	}
	return startRedis()
}

// stop ends the server started by startRedis; one given by -redis stays.
func (s *server) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}
