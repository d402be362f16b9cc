package cgtree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// This machine's mountinfo, trimmed: a hybrid host.
const hybridMountinfo = `25 30 0:23 / /sys rw,nosuid - sysfs sysfs rw
31 25 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:30 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
42 30 0:31 /some/sub /mnt/bound rw,relatime - cgroup cgroup rw,memory
43 30 0:38 / /mnt/with\040space rw,relatime shared:5 - cgroup cgroup rw,pids
`

func TestParseMountinfo(t *testing.T) {
	got, err := ParseMountinfo(strings.NewReader(hybridMountinfo))
	if err != nil {
		t.Fatal(err)
	}
	want := []Hierarchy{
		{Mount: "/sys/fs/cgroup/cpu", Controllers: "cpu"},
		{Mount: "/sys/fs/cgroup/cpuacct", Controllers: "cpuacct"},
		{Mount: "/sys/fs/cgroup/cpuset", Controllers: "cpuset"},
		{Mount: "/sys/fs/cgroup/memory", Controllers: "memory"},
		{Mount: "/sys/fs/cgroup/systemd", Controllers: "name=systemd"},
		{Mount: "/sys/fs/cgroup/unified", V2: true},
		{Mount: "/mnt/with space", Controllers: "pids"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hierarchies (-want +got):\n%s", diff)
	}
}

func TestModeAndTreeHierarchies(t *testing.T) {
	v1 := Hierarchy{Mount: "/c/memory", Controllers: "memory"}
	named := Hierarchy{Mount: "/c/systemd", Controllers: "name=systemd"}
	v2 := Hierarchy{Mount: "/c/unified", V2: true}
	for _, tc := range []struct {
		name     string
		hs       []Hierarchy
		mode     string
		treeMnts []string
	}{
		{"v1", []Hierarchy{v1, named}, ModeV1, []string{"/c/memory", "/c/systemd"}},
		{"hybrid leaves unified alone", []Hierarchy{v1, named, v2}, ModeHybrid, []string{"/c/memory", "/c/systemd"}},
		{"v2", []Hierarchy{v2}, ModeV2, []string{"/c/unified"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Mode(tc.hs); got != tc.mode {
				t.Errorf("Mode = %q, want %q", got, tc.mode)
			}
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
	hs := []Hierarchy{{Mount: t.TempDir(), Controllers: "pids"}}
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
	hs := []Hierarchy{{Mount: mnt, Controllers: "pids"}}
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
	hs := []Hierarchy{{Mount: mnt, Controllers: "pids"}}
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
	hs := []Hierarchy{{Mount: "/sys/fs/cgroup/memory", Controllers: "memory"}}
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
