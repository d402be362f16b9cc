package cgtree

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/harness/cgroupfs"
)

func TestTreeHierarchies(t *testing.T) {
	v1 := cgroupfs.Hierarchy{Mount: "/c/memory", Key: "memory"}
	named := cgroupfs.Hierarchy{Mount: "/c/systemd", Key: "name=systemd"}
	v2 := cgroupfs.Hierarchy{Mount: "/c/unified", V2: true}
	for _, tc := range []struct {
		name     string
		hs       []cgroupfs.Hierarchy
		treeMnts []string
	}{
		{"v1 includes named hierarchies", []cgroupfs.Hierarchy{v1, named}, []string{"/c/memory", "/c/systemd"}},
		{"hybrid leaves unified alone", []cgroupfs.Hierarchy{v1, named, v2}, []string{"/c/memory", "/c/systemd"}},
		{"v2", []cgroupfs.Hierarchy{v2}, []string{"/c/unified"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mnts []string
			for _, h := range treeHierarchies(tc.hs) {
				mnts = append(mnts, h.Mount)
			}
			if diff := cmp.Diff(tc.treeMnts, mnts); diff != "" {
				t.Errorf("tree hierarchies (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCreateRefusesBadNames(t *testing.T) {
	hs := []cgroupfs.Hierarchy{{Mount: t.TempDir(), Key: "pids"}}
	for _, n := range []string{"", "..", "a/b", "../x", ".hidden", "a b"} {
		if _, err := Create(n, hs); err == nil {
			t.Errorf("Create(%q) accepted", n)
		}
	}
}

// A plain folder stands in for a cgroup mount: mkdir and rmdir behave alike
// for empty directories, which is all Create and Remove do there.
func TestCreateRemoveOnFakeMount(t *testing.T) {
	mnt := t.TempDir()
	hs := []cgroupfs.Hierarchy{{Mount: mnt, Key: "pids"}}
	tree, err := Create("cgbench-1", hs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "cgbench-1", CallerDir)); err != nil {
		t.Fatalf("caller leaf missing: %v", err)
	}
	if _, err := Create("cgbench-1", hs); err == nil {
		t.Error("Create reused an existing tree: it must refuse what it did not make")
	}
	if err := os.MkdirAll(filepath.Join(mnt, "cgbench-1", CallerDir, "sb", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub, err := tree.Subdirs(hs[0])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"caller/sb/deep", "caller/sb", "caller"}, sub); diff != "" {
		t.Errorf("subdirs, deepest first (-want +got):\n%s", diff)
	}
	if err := tree.Remove(false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "cgbench-1")); !os.IsNotExist(err) {
		t.Errorf("tree still there: %v", err)
	}
	if got := Exists(hs, "cgbench-1"); len(got) != 0 {
		t.Errorf("Exists = %v after Remove", got)
	}
}

func TestWatchLeaked(t *testing.T) {
	mnt := t.TempDir()
	hs := []cgroupfs.Hierarchy{{Mount: mnt, Key: "pids"}}
	tree, err := Create("cgbench-2", hs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Remove(false) })
	w := &Watch{Tree: tree, All: hs, Self: os.Getpid()}
	before, err := w.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	leak := filepath.Join(mnt, "cgbench-2", CallerDir, "sb1")
	top := filepath.Join(mnt, "run-pause")
	for _, d := range []string{leak, top} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := w.Leaked(before, "run-pause", "run-absent")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{leak, top}, got); diff != "" {
		t.Errorf("leaked (-want +got):\n%s", diff)
	}
	for _, d := range []string{leak, top} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s was not removed", d)
		}
	}
}

func TestCheckJoinable(t *testing.T) {
	hs := []cgroupfs.Hierarchy{{Mount: "/sys/fs/cgroup/memory", Key: "memory"}}
	for _, tc := range []struct {
		file string
		ok   bool
	}{
		{"/sys/fs/cgroup/memory/cgbench-1/caller/cgroup.procs", true},
		{"/sys/fs/cgroup/memory/process_api/x/cgroup.procs", false},
		{"/sys/fs/cgroup/memory/cgroup.procs", false},
		{"/sys/fs/cgroup/memory/cgbench-1/cgroup.procs", false},
		{"/sys/fs/cgroup/memory/cgbench-1/caller/../../x/cgroup.procs", false},
		{"/sys/fs/cgroup/memory/cgbench-1/caller/tasks", false},
		{"/tmp/cgbench-1/caller/cgroup.procs", false},
	} {
		err := checkJoinable(tc.file, hs)
		if (err == nil) != tc.ok {
			t.Errorf("checkJoinable(%s) = %v, want ok=%v", tc.file, err, tc.ok)
		}
	}
}
