// Package servetest is the part of the engines' tests that runs a server
// for the length of one test: the HTTP kind's and the fortio kind's tests
// start the same server and stop it the same way.
package servetest

import (
	"context"
	"testing"
)

// Serve runs serve in its own goroutine until the test ends; at cleanup it
// cancels serve's context, waits for serve to return and fails the test
// if serve returned an error, so that a server that does not stop cleanly
// is noticed.
func Serve(t testing.TB, serve func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}
