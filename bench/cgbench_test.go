package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestReplaceMarked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCH.md")
	begin, end := marks("vm-v2")
	doc := "# B\n\nprose before\n\n" + begin + "\n\nold table\n\n" + end + "\n\nprose after\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := replaceMarked(path, "vm-v2", "new table\n\n"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "# B\n\nprose before\n\n" + begin + "\n\nnew table\n\n" + end + "\n\nprose after\n"
	if string(got) != want {
		t.Errorf("doc =\n%s\nwant\n%s", got, want)
	}
	if err := replaceMarked(path, "host", "x"); err == nil || !strings.Contains(err.Error(), "markers") {
		t.Errorf("a missing marker: %v", err)
	}
	fresh := filepath.Join(t.TempDir(), "new.md")
	if err := replaceMarked(fresh, "host", "t"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(fresh); !strings.HasPrefix(string(got), "# Benchmarks\n\n<!-- BEGIN cgbench report host") {
		t.Errorf("a new file = %q", got)
	}
}

func TestPpid(t *testing.T) {
	if got := ppid("/proc", strconv.Itoa(os.Getpid())); got != os.Getppid() {
		t.Errorf("ppid(self) = %d, want %d", got, os.Getppid())
	}
	if got := ppid("/proc", "0"); got != -1 {
		t.Errorf("ppid of no process = %d, want -1", got)
	}
}

// statTail is the rest of a /proc/PID/stat line after pgrp.
const statTail = " 34 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 777 1000 200 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0"

func TestOtherQEMU(t *testing.T) {
	proc := t.TempDir()
	for _, p := range []struct{ pid, comm, stat string }{
		{"100", "qemu-system-x86\n", "100 (qemu-system-x86) S 7 100" + statTail},    // ours: parent 7
		{"200", "qemu-system-x86\n", "200 (qemu-system-x86) S 1 200" + statTail},    // another run's
		{"300", "qemu-system-aarch\n", "300 (qemu-system-aarch) S 42 3" + statTail}, // another run's
		{"400", "sleep\n", "400 (sleep) S 1 400" + statTail},                        // not qemu
		{"self", "x\n", "1 (x) S 0 1" + statTail},                                   // not a PID
	} {
		dir := filepath.Join(proc, p.pid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "comm"), []byte(p.comm), 0o644)
		os.WriteFile(filepath.Join(dir, "stat"), []byte(p.stat), 0o644)
	}
	if got := countOtherQEMU(proc, 7); got != 2 {
		t.Errorf("countOtherQEMU = %d, want 2 (the two qemus whose parent is not 7)", got)
	}
}
