package bench

import (
	"fmt"
	"os"
	"path"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/roottest"
	"github.com/runsc-cgroups/cgconform/harness/runner"
)

// The test binary doubles as cgbench for the spinners: exec-in-cgroup,
// then spin.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case runner.HelperCommand:
			os.Exit(runner.HelperMain(os.Args[1], os.Args[2:]))
		case SpinCommand:
			os.Exit(spinMain())
		}
	}
	os.Exit(m.Run())
}

func TestInCgroup(t *testing.T) {
	host := &cgroupfs.Host{Hierarchies: []cgroupfs.Hierarchy{{Mount: "/sys/fs/cgroup/memory"}, {Mount: "/sys/fs/cgroup/cpu"}}}
	got := inCgroup("/x/cgbench", host, "/t/load", "/x/cgbench", SpinCommand)
	want := []string{"/x/cgbench", "exec-in-cgroup", "--join", "/sys/fs/cgroup/memory/t/load", "--join", "/sys/fs/cgroup/cpu/t/load", "--", "/x/cgbench", "spin"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inCgroup (-want +got):\n%s", diff)
	}
	if d := SpinnerDescription(4, "/t/load"); !strings.Contains(d, "4 CPU spinners") || !strings.Contains(d, "/t/load") {
		t.Errorf("description %q", d)
	}
}

// TestSpinners starts two real spinners in a test tree of this host for a
// second and checks they burn CPU where they should, and go.
func TestSpinners(t *testing.T) {
	roottest.Require(t)
	host, err := cgroupfs.Detect()
	if err != nil {
		t.Fatal(err)
	}
	tree := &cgroupfs.Tree{Host: host, Root: fmt.Sprintf("/cgbench-test-%d", os.Getpid())}
	if err := tree.Create(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if left := tree.Remove(2 * time.Second); len(left) > 0 {
			t.Errorf("test tree left: %v", left)
		}
	})
	s, err := StartSpinners(tree, 2)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	var pids []int
	for _, h := range host.Hierarchies {
		p, _ := cgroupfs.Procs(h, path.Join(tree.Root, loadDir))
		pids = append(pids, p...)
	}
	cpu, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) == 0 {
		t.Error("no spinner was in the load cgroup")
	}
	if cpu.Spinners != 2 || cpu.Seconds <= 0.1 || cpu.Wall < 1 {
		t.Errorf("load CPU %+v: want 2 spinners, well above 0.1 s of CPU in at least 1 s", cpu)
	}
	for _, h := range host.Hierarchies {
		if _, err := os.Stat(h.Dir(path.Join(tree.Root, loadDir))); err == nil {
			t.Errorf("%s still there", h.Dir(path.Join(tree.Root, loadDir)))
		}
	}
	for _, p := range pids {
		if err := syscall.Kill(p, 0); err == nil {
			t.Errorf("spinner %d still alive", p)
		}
	}
}
