package cgroupfs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/mode"
)

const hybridMountinfo = `24 29 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
30 24 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 30 0:28 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
33 30 0:29 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
34 30 0:30 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,release_agent=/x,name=systemd
35 30 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
36 24 0:29 /sub /mnt/memsub rw,relatime - cgroup cgroup rw,memory
`

func TestParseMountinfo(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       string
		want     []Hierarchy
		wantMode mode.Cgroup
	}{
		{
			name: "hybrid, bind mount of a subtree ignored",
			in:   hybridMountinfo,
			want: []Hierarchy{
				{Key: "cpu", Mount: "/sys/fs/cgroup/cpu"},
				{Key: "cpuacct", Mount: "/sys/fs/cgroup/cpuacct"},
				{Key: "memory", Mount: "/sys/fs/cgroup/memory"},
				{Key: "name=systemd", Mount: "/sys/fs/cgroup/systemd"},
				{Key: "", Mount: "/sys/fs/cgroup/unified", V2: true},
			},
			wantMode: mode.Hybrid,
		},
		{
			name:     "pure v2",
			in:       "30 24 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n",
			want:     []Hierarchy{{Key: "", Mount: "/sys/fs/cgroup", V2: true}},
			wantMode: mode.V2,
		},
		{
			name:     "v1 with co-mounted cpu,cpuacct in kernel order",
			in:       "31 30 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpuacct,cpu\n",
			want:     []Hierarchy{{Key: "cpu,cpuacct", Mount: "/sys/fs/cgroup/cpu,cpuacct"}},
			wantMode: mode.V1,
		},
		{
			name:     "escaped mount point",
			in:       `31 30 0:27 / /tmp/a\040b rw - cgroup cgroup rw,pids` + "\n",
			want:     []Hierarchy{{Key: "pids", Mount: "/tmp/a b"}},
			wantMode: mode.V1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseMountinfo(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if m := ModeFor(got); m != tc.wantMode {
				t.Errorf("mode %q, want %q", m, tc.wantMode)
			}
		})
	}
}

func TestParseProcCgroup(t *testing.T) {
	in := "9:name=systemd:/\n4:memory:/process_api/x\n2:cpuacct,cpu:/a/b\n0::/c\n"
	got, err := ParseProcCgroup(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"name=systemd": "/", "memory": "/process_api/x", "cpu,cpuacct": "/a/b", "": "/c"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := ParseProcCgroup(strings.NewReader("garbage\n")); err == nil {
		t.Error("malformed line accepted")
	}
}

func TestManagedAndForFile(t *testing.T) {
	hs, _ := ParseMountinfo(strings.NewReader(hybridMountinfo))
	h := &Host{Mode: mode.Hybrid, Hierarchies: hs}
	var names []string
	for _, x := range h.Managed() {
		names = append(names, x.Name())
	}
	if diff := cmp.Diff([]string{"cpu", "cpuacct", "memory"}, names); diff != "" {
		t.Errorf("managed (-want +got):\n%s", diff)
	}
	// A controller's file is in its hierarchy; a file of the cgroup core
	// is in each of them (issue 28: cgroup.procs read the first one only).
	for file, want := range map[string]string{"memory.limit_in_bytes": "memory", "cpu.cfs_quota_us": "cpu", "cpuacct.usage": "cpuacct", "cgroup.procs": "cpu cpuacct memory", "tasks": "cpu cpuacct memory", "notify_on_release": "cpu cpuacct memory"} {
		got, err := h.ForFile(file)
		var names []string
		for _, x := range got {
			names = append(names, x.Name())
		}
		if err != nil || strings.Join(names, " ") != want {
			t.Errorf("ForFile(%q) = %q, %v; want %q", file, names, err, want)
		}
	}
	if _, err := h.ForFile("io.max"); err == nil || !strings.Contains(err.Error(), `no v1 hierarchy has the controller "io"`) {
		t.Errorf("ForFile(io.max) on a v1 host: %v, want no hierarchy", err)
	}
	v2 := &Host{Mode: mode.V2, Hierarchies: []Hierarchy{{Mount: "/u", V2: true}}}
	if got, err := v2.ForFile("io.max"); err != nil || len(got) != 1 || !got[0].V2 {
		t.Errorf("ForFile(io.max) on v2 = %v, %v; want the unified hierarchy", got, err)
	}
}

// A fake hierarchy in a temp dir: Mkdir, Dirs, FindNamed and RemoveTree
// work on plain directories, so no cgroup is touched.
func TestTreeOnFakeHierarchy(t *testing.T) {
	mnt := t.TempDir()
	h := Hierarchy{Key: "memory", Mount: mnt}
	tree := &Tree{Host: &Host{Mode: mode.V1, Hierarchies: []Hierarchy{h}}, Root: "/cgconform-T"}
	if err := tree.Mkdir("/cgconform-T/001/host"); err != nil {
		t.Fatal(err)
	}
	if err := tree.Mkdir("/elsewhere"); err == nil || !strings.Contains(err.Error(), "outside the test root") {
		t.Fatalf("Mkdir outside the root: %v", err)
	}
	if err := tree.Join(1, "/"); err == nil {
		t.Fatal("Join outside the root succeeded")
	}
	if err := os.MkdirAll(filepath.Join(mnt, "T-leak", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/cgconform-T", "/cgconform-T/001", "/cgconform-T/001/host"}, Dirs(h, "/cgconform-T")); diff != "" {
		t.Errorf("Dirs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/T-leak"}, FindNamed(h, "T-", "/cgconform-T")); diff != "" {
		t.Errorf("FindNamed (-want +got):\n%s", diff)
	}
	if left := RemoveTree(h.Dir("/cgconform-T"), time.Second); len(left) != 0 {
		t.Errorf("RemoveTree left %v", left)
	}
	if _, err := os.Stat(h.Dir("/cgconform-T")); !os.IsNotExist(err) {
		t.Errorf("test root still there: %v", err)
	}
}

func TestMkdirCopiesCpuset(t *testing.T) {
	mnt := t.TempDir()
	for f, v := range map[string]string{"cpuset.cpus": "0-1", "cpuset.mems": "0"} {
		if err := os.WriteFile(filepath.Join(mnt, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := Hierarchy{Key: "cpuset", Mount: mnt}
	tree := &Tree{Host: &Host{Mode: mode.V1, Hierarchies: []Hierarchy{h}}, Root: "/r"}
	if err := tree.Mkdir("/r/a"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(mnt, "r", "a", "cpuset.cpus"))
	if err != nil || string(b) != "0-1" {
		t.Errorf("cpuset.cpus = %q, %v", b, err)
	}
}

func TestIsUnder(t *testing.T) {
	for _, tc := range []struct {
		p, dir string
		want   bool
	}{
		{"/a/b", "/a", true},
		{"/a", "/a", true},
		{"/ab", "/a", false},
		{"/x", "/", true},
	} {
		if got := IsUnder(tc.p, tc.dir); got != tc.want {
			t.Errorf("IsUnder(%q, %q) = %v", tc.p, tc.dir, got)
		}
	}
}

// ReadProcs, Procs and EnableControllers on plain files standing in for
// cgroupfs.
func TestProcsAndControllersOnFakeFiles(t *testing.T) {
	mnt := t.TempDir()
	h := Hierarchy{Mount: mnt, V2: true}
	if err := os.MkdirAll(h.Dir("/a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.Dir("/a"), "cgroup.procs"), []byte("12\n7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadProcs(h.Dir("/a")); err != nil || !cmp.Equal(got, []int{12, 7}) {
		t.Errorf("ReadProcs = %v, %v; want [12 7]", got, err)
	}
	if got, err := Procs(h, "/missing"); err != nil || got != nil {
		t.Errorf("Procs of a missing cgroup = %v, %v; want nothing, no error", got, err)
	}
	if _, err := ReadProcs(h.Dir("/missing")); !os.IsNotExist(err) {
		t.Errorf("ReadProcs of a missing cgroup: %v, want not-exist", err)
	}
	dir := h.Dir("/a")
	if err := os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("memory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"memory", "cpu", "pids"}, EnableControllers(dir)); diff != "" {
		t.Errorf("EnableControllers (-want +got):\n%s", diff)
	}
}

// TestKill: a process listed in the cgroup is killed, the caller (listed
// too) is not, and a cgroup that is gone is no error.
func TestKill(t *testing.T) {
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	dir := t.TempDir()
	procs := fmt.Sprintf("%d\n%d\n", child.Process.Pid, os.Getpid())
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(procs), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Kill(dir); err != nil {
		t.Fatal(err)
	}
	err := child.Wait()
	if ws, ok := child.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the listed child: %v, want killed by SIGKILL", err)
	}
	if err := Kill(filepath.Join(dir, "gone")); err != nil {
		t.Errorf("Kill of a missing cgroup: %v", err)
	}
}
