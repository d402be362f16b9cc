package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestVMCommandRunsEachDriver(t *testing.T) {
	script := vmCommand([]string{"systemd", "cgroupfs"}, "-scenarios cri -tree=false")
	if n := strings.Count(script, "$P/cgclients prove"); n != 2 {
		t.Fatalf("%d prove lines, want 2:\n%s", n, script)
	}
	if !strings.Contains(script, "-systemd-cgroup -scenarios cri -tree=false -out \"$CGM_OUT/systemd\"") {
		t.Errorf("systemd line wrong:\n%s", script)
	}
	if strings.Contains(strings.Split(script, "cgroupfs\"\n")[1], "-systemd-cgroup") {
		t.Errorf("the cgroupfs run asks for systemd:\n%s", script)
	}
	if out, err := exec.Command("sh", "-n", "-c", script).CombinedOutput(); err != nil {
		t.Errorf("sh -n: %v %s", err, out)
	}
}

func TestCheckStatic(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	sh, _ = filepath.EvalSymlinks(sh)
	// Debian's dash is dynamic; a static busybox would pass.
	if out, _ := exec.Command("ldd", sh).CombinedOutput(); strings.Contains(string(out), "not a dynamic") {
		t.Skip("sh is static here")
	}
	if err := checkStatic(sh); err == nil {
		t.Errorf("%s passed as static", sh)
	}
}
