package main

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
	if got := ppid(strconv.Itoa(os.Getpid())); got != os.Getppid() {
		t.Errorf("ppid(self) = %d, want %d", got, os.Getppid())
	}
	if got := ppid("0"); got != -1 {
		t.Errorf("ppid of no process = %d, want -1", got)
	}
	// Our own children are not "other" VMs; nothing here is qemu anyway.
	if n := otherQEMU(os.Getpid()); n < 0 {
		t.Errorf("otherQEMU = %d", n)
	}
}
