package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The payload script must hand cgbench its flags exactly, whatever they
// hold: run it with a stand-in cgbench that prints its arguments.
func TestCommandPassesArgsThroughSh(t *testing.T) {
	args := []string{"-pairs", "20", "-variants", "control,nested", "-docs", "a b", "-x", `it's "quoted" $HOME`, "-e="}
	script := vmCommand(args)
	dir := t.TempDir()
	fake := filepath.Join(dir, "cgbench")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\necho warn >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	script = strings.ReplaceAll(script, payloadBin+"cgbench", fake)
	script = strings.ReplaceAll(script, "cd /run/cgm", "cd "+dir)
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "CGM_OUT="+out)
	console, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("script exit: %v, want cgbench's 3\n%s", err, console)
	}
	if !strings.Contains(string(console), "cgbench: exit=3") || !strings.Contains(string(console), "warn") {
		t.Errorf("console = %q: want cgbench's stderr and its exit code", console)
	}
	got, err := os.ReadFile(filepath.Join(out, "cgbench.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]string(nil), args...),
		"-stock", "/payload/bin/runsc-stock", "-patched", "/payload/bin/runsc-patched",
		"-busybox", "/bin/busybox", "-conformance-report=", "-matrix-report=", "-throwaway", "-out", out)
	if diff := cmp.Diff(want, strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")); diff != "" {
		t.Errorf("cgbench's arguments (-want +got):\n%s", diff)
	}
}

func TestWithBudget(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		limit time.Duration
		want  []string
	}{
		{"margin of 10 minutes", []string{"-pairs", "20"}, 110 * time.Minute, []string{"-pairs", "20", "-budget", "1h40m0s"}},
		{"a third of a short limit", nil, 15 * time.Minute, []string{"-budget", "10m0s"}},
		{"its own budget wins", []string{"-budget=5m"}, time.Hour, []string{"-budget=5m"}},
		{"its own budget wins, two words", []string{"-budget", "5m"}, time.Hour, []string{"-budget", "5m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, withBudget(tc.args, tc.limit)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckStatic(t *testing.T) {
	notELF := filepath.Join(t.TempDir(), "script")
	os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755)
	if err := checkStatic(notELF); err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Errorf("checkStatic(script) = %v", err)
	}
	// /bin/sh is dynamically linked on every Debian.
	if sh, err := filepath.EvalSymlinks("/bin/sh"); err == nil {
		if err := checkStatic(sh); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
			t.Errorf("checkStatic(%s) = %v, want a dynamic-linking error", sh, err)
		}
	}
	if bb, err := exec.LookPath("busybox"); err == nil {
		if err := checkStatic(bb); err != nil {
			t.Errorf("checkStatic(%s), a static busybox: %v", bb, err)
		}
	}
}

func TestRunVMNeedsClientsInSystemdModes(t *testing.T) {
	sec := &Section{Dir: t.TempDir()}
	err := runVM(t.Context(), &suiteOpts{}, "systemd-v2", nil, time.Minute, nil, sec)
	if err == nil || !strings.Contains(err.Error(), "make clients") {
		t.Errorf("runVM(systemd-v2) without the clients = %v", err)
	}
	if err := runVM(t.Context(), &suiteOpts{}, "v3", nil, time.Minute, nil, sec); err == nil {
		t.Error("runVM accepted an unknown mode")
	}
}
