package cgroupfs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/roottest"
)

// Nest on a real cgroup2 (on a hybrid host, its unified hierarchy, which
// has no controllers): the cgroup's process moves into the leaf, and the
// cgroup's controllers are enabled for its children.
func TestNestMovesProcessesIntoLeaf(t *testing.T) {
	roottest.Require(t)
	host, err := Detect()
	if err != nil {
		t.Fatal(err)
	}
	var dir string
	for _, h := range host.Hierarchies {
		if h.V2 {
			dir = h.Dir(fmt.Sprintf("/cgconform-nest-test-%d", os.Getpid()))
		}
	}
	if dir == "" {
		t.Skip("no cgroup2 hierarchy mounted")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sleep := exec.Command("sleep", "100000")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sleep.Process.Kill()
		_ = sleep.Wait()
		if left := RemoveTree(dir, 5*time.Second); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	})
	if err := WritePid(dir, sleep.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := Nest(dir, "supervisor"); err != nil {
		t.Fatalf("Nest: %v", err)
	}
	if got, err := ReadProcs(dir); err != nil || len(got) != 0 {
		t.Errorf("%s still holds %v (%v)", dir, got, err)
	}
	if got, err := ReadProcs(filepath.Join(dir, "supervisor")); err != nil || !cmp.Equal(got, []int{sleep.Process.Pid}) {
		t.Errorf("the leaf holds %v (%v), want [%d]", got, err, sleep.Process.Pid)
	}
	avail, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	on, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if diff := cmp.Diff(strings.Fields(string(avail)), strings.Fields(string(on))); diff != "" {
		t.Errorf("subtree_control (-available +enabled):\n%s", diff)
	}
}
