package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeRuntime writes a shell script standing in for runsc: it logs each
// subcommand to calls, fails the one named failOn with exit 3 and a message
// on stderr, and answers state with a running sandbox.
func fakeRuntime(t *testing.T, name, failOn string) (Runtime, string) {
	t.Helper()
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	script := fmt.Sprintf(`#!/bin/sh
sub=
for a in "$@"; do
	case "$a" in create|start|delete|state|flags|sleep) sub=$a; break;; esac
done
echo "$sub" >>%q
if [ "$sub" = %q ]; then
	echo "fake %s: $sub failed: removing cgroup path: device or resource busy" >&2
	exit 3
fi
case "$sub" in
state) echo '{"id": "x", "status": "running"}';;
sleep) sleep 5;;
esac
exit 0
`, calls, failOn, name)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return Runtime{Name: name, Path: path}, calls
}

func readCalls(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

func TestRunnerSuccess(t *testing.T) {
	rt, _ := fakeRuntime(t, "fake-ok", "")
	r := &Runner{LogDir: t.TempDir()}
	res, out, _, err := r.Output(context.Background(), rt, "--root", "/x", "state", "id")
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit != 0 || res.Seconds <= 0 {
		t.Errorf("result %+v: want exit 0 and a positive time", res)
	}
	if !strings.Contains(string(out), `"running"`) {
		t.Errorf("stdout %q lacks the state", out)
	}
	if left, _ := os.ReadDir(r.LogDir); len(left) != 0 {
		t.Errorf("logs of a successful command were kept: %v", left)
	}
}

func TestRunnerFailureIsAnError(t *testing.T) {
	rt, _ := fakeRuntime(t, "fake-bad", "delete")
	r := &Runner{LogDir: t.TempDir()}
	_, err := r.Run(context.Background(), rt, "--root", "/x", "delete", "-force", "id")
	var rerr *RunError
	if !errors.As(err, &rerr) {
		t.Fatalf("error %v is not a *RunError", err)
	}
	if rerr.Result.Exit != 3 {
		t.Errorf("exit = %d, want 3", rerr.Result.Exit)
	}
	for _, want := range []string{"fake-bad", "delete -force id", "exit 3", "device or resource busy"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := os.Stat(rerr.Result.Log); err != nil {
		t.Errorf("the failed command's stderr file is gone: %v", err)
	}
}

func TestRunnerTimeoutKills(t *testing.T) {
	rt, _ := fakeRuntime(t, "fake-slow", "")
	r := &Runner{LogDir: t.TempDir(), Timeout: 200 * time.Millisecond}
	start := time.Now()
	_, err := r.Run(context.Background(), rt, "sleep")
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("error = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v: the hung command was not killed", d)
	}
}

func TestRunnerMissingBinary(t *testing.T) {
	r := &Runner{LogDir: t.TempDir()}
	_, err := r.Run(context.Background(), Runtime{Name: "nope", Path: "/nonexistent/runsc"}, "create")
	var rerr *RunError
	if !errors.As(err, &rerr) || rerr.Err == nil {
		t.Fatalf("error = %v, want a *RunError saying it could not start", err)
	}
}

func TestRunnerFlagsFirst(t *testing.T) {
	rt, _ := fakeRuntime(t, "fake", "")
	rt.Flags = []string{"--nested-cgroups"}
	r := &Runner{LogDir: t.TempDir()}
	res, err := r.Run(context.Background(), rt, "--root", "/x", "create", "id")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.Args, " "); got != "--nested-cgroups --root /x create id" {
		t.Errorf("args = %q", got)
	}
	if rt.Label() != "fake --nested-cgroups" {
		t.Errorf("label = %q", rt.Label())
	}
}
