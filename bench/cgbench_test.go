package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runsc-cgroups/cgconform/base/proc"
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

func TestOtherQEMU(t *testing.T) {
	all := []proc.Stat{
		{PID: 100, Comm: "qemu-system-x86", PPID: 7},    // ours: parent 7
		{PID: 200, Comm: "qemu-system-x86", PPID: 1},    // another run's
		{PID: 300, Comm: "qemu-system-aarch", PPID: 42}, // another run's
		{PID: 400, Comm: "sleep", PPID: 1},              // not qemu
	}
	if got := otherQEMU(all, 7); got != 2 {
		t.Errorf("otherQEMU = %d, want 2 (the two qemus whose parent is not 7)", got)
	}
}
