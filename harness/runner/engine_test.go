package runner

import (
	"github.com/runsc-cgroups/cgconform/harness/casefile"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKillCreateWrapper runs the wrapper over a fake runtime whose create
// takes 1 s, with dash and with busybox's ash (the matrix's busybox
// modes): a create gets SIGKILLed at the delay written for it, once;
// other commands, and a create with no delay written, pass through; no
// timer outlives the wrapper.
func TestKillCreateWrapper(t *testing.T) {
	shells := [][]string{{"/bin/sh"}}
	if _, err := os.Stat("/bin/busybox"); err == nil {
		shells = append(shells, []string{"/bin/busybox", "sh"})
	}
	for _, sh := range shells {
		t.Run(filepath.Base(sh[0]), func(t *testing.T) { testKillCreateWrapper(t, sh) })
	}
}

func testKillCreateWrapper(t *testing.T, sh []string) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "fake")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\" >>\""+dir+"/calls\"\n[ \"$2\" = create ] && sleep 1\nexit 7\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := killCreateWrapper(dir, "fake-killed-create", fake)
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) int {
		t.Helper()
		err := exec.Command(sh[0], append(append(sh[1:], w), args...)...).Run()
		if e, ok := err.(*exec.ExitError); ok {
			return e.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0
	}
	exitFile := filepath.Join(dir, "create-exit")
	if err := os.WriteFile(filepath.Join(dir, "kill-after"), []byte("0.200"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := run("--root", "create", "id"); got != 137 {
		t.Errorf("killed create exited %d, want 137", got)
	}
	b, _ := os.ReadFile(exitFile)
	if f := strings.Fields(string(b)); len(f) != 2 || f[0] != "137" || len(f[1]) != 3 {
		t.Errorf("create-exit = %q, want 137 and a run time of 200-999 ms", b)
	}
	// A create that ends first: its status and time, and the wrapper
	// returns then, not at the kill.
	_ = os.Remove(exitFile)
	if err := os.WriteFile(filepath.Join(dir, "kill-after"), []byte("5.000"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if got := run("--root", "create", "id1"); got != 7 || time.Since(start) > 3*time.Second {
		t.Errorf("create exited %d after %s, want the runtime's 7 after about 1 s", got, time.Since(start))
	}
	b, _ = os.ReadFile(exitFile)
	if f := strings.Fields(string(b)); len(f) != 2 || f[0] != "7" || len(f[1]) != 4 {
		t.Errorf("create-exit = %q, want 7 and a run time of 1000-9999 ms", b)
	}
	ps, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range ps {
		if b, _ := os.ReadFile(p); string(b) == "sleep\x005.000\x00" {
			t.Errorf("the timer's sleep outlived the wrapper: %s", p)
		}
	}
	_ = os.Remove(exitFile)
	if got := run("--root", "create", "id2"); got != 7 {
		t.Errorf("the next create (no delay written) exited %d, want the runtime's 7", got)
	}
	if got := run("--root", "delete", "create"); got != 7 {
		t.Errorf("delete exited %d, want the runtime's 7", got)
	}
	if _, err := os.Stat(exitFile); err == nil {
		t.Errorf("a create that was not to be killed wrote %s", exitFile)
	}
	calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
	if want := "--root create id\n--root create id1\n--root create id2\n--root delete create\n"; string(calls) != want {
		t.Errorf("the runtime saw %q, want %q", calls, want)
	}
}

// TestSlowWrapper: the runtime a shim runs for slowCommand sleeps before
// that command only, and passes arguments and exit status through.
func TestSlowWrapper(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "fake")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\" >>\""+dir+"/calls\"\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := slowWrapper(dir, fake, &casefile.SlowCommand{Command: "state", Delay: casefile.Duration{Duration: 400 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		slow bool
	}{
		{[]string{"--root", "/r", "--log-format", "json", "state", "0123abcd"}, true},
		{[]string{"--root", "/r", "kill", "0123abcd", "9"}, false},
		{[]string{"--root", "/r", "stated", "x y"}, false},
	} {
		start := time.Now()
		err := exec.Command(w, tc.args...).Run()
		took := time.Since(start)
		if e, ok := err.(*exec.ExitError); !ok || e.ExitCode() != 3 {
			t.Errorf("%v: %v, want the runtime's exit 3", tc.args, err)
		}
		if slow := took >= 400*time.Millisecond; slow != tc.slow {
			t.Errorf("%v took %s, want slow %v", tc.args, took, tc.slow)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "calls"))
	if want := "--root /r --log-format json state 0123abcd\n--root /r kill 0123abcd 9\n--root /r stated x y\n"; string(b) != want {
		t.Errorf("runtime saw %q, want %q", b, want)
	}
}
