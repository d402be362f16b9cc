// Package roottest gates the tests that change the host: they create
// cgroups in every hierarchy and start processes, so they need root and
// must never run by surprise inside a plain `go test ./...`. They run only
// when the environment says so (make test does); asked for and unable to
// run, they fail instead of passing silently.
package roottest

import (
	"os"
	"testing"
)

// Env is the switch: CGCONFORM_ROOT_TESTS=1.
const Env = "CGCONFORM_ROOT_TESTS"

// Require skips t unless the switch is on, and fails it when the switch is
// on but the test cannot run (not root, or a file it needs is missing).
func Require(t *testing.T, files ...string) {
	t.Helper()
	if os.Getenv(Env) != "1" {
		t.Skipf("changes the host (cgroups, processes): runs only with %s=1, as make test sets it", Env)
	}
	if os.Geteuid() != 0 {
		t.Fatalf("%s=1 but not root: these tests create cgroups in every hierarchy; run them as root", Env)
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s=1 but %v", Env, err)
		}
	}
}
