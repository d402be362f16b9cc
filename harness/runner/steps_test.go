package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/harness/casefile"
	"github.com/runsc-cgroups/cgconform/harness/check"
)

// fakeCase is a case in progress on a fake cgroupfs: each hierarchy is a
// folder of a temp dir, so the steps that only read and write cgroup files
// (check, write) run without root. The caller C is <root>/001/host.
type fakeCase struct {
	r  *Runner
	cs *caseState
}

// newFakeCase parses the case steps (below a fixed head) for host mode m:
// hybrid has memory and pids v1 hierarchies and cgroup2 at unified, v2 the
// unified one only.
func newFakeCase(t *testing.T, m mode.Cgroup, steps string) *fakeCase {
	t.Helper()
	c, err := casefile.Parse([]byte("name: fake\npurpose: p\nsource: s\nsandboxes: [{name: a}]\nsteps:\n" + steps))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	host := &cgroupfs.Host{Mode: m}
	if m != mode.V2 {
		host.Hierarchies = []cgroupfs.Hierarchy{{Key: "memory", Mount: filepath.Join(dir, "memory")}, {Key: "pids", Mount: filepath.Join(dir, "pids")}}
	}
	host.Hierarchies = append(host.Hierarchies, cgroupfs.Hierarchy{Key: "", Mount: filepath.Join(dir, "unified"), V2: true})
	r := &Runner{host: host, token: "cgc0fake", tree: &cgroupfs.Tree{Host: host, Root: "/cgconform-cgc0fake"}}
	cs := &caseState{c: c, cx: "host", res: &report.Result{}, root: r.tree.Root + "/001", caller: map[string]string{}, insts: map[string][]*instance{}}
	for _, h := range host.Hierarchies {
		cs.caller[h.Key] = cs.root + "/host"
	}
	cs.vars = map[string]string{"token": r.token, "caseroot": cs.root, "caller": cs.root + "/host"}
	f := &fakeCase{r: r, cs: cs}
	f.mkdir(t, cs.root+"/host")
	return f
}

// mkdir makes a cgroup in every hierarchy, with files "name=value".
func (f *fakeCase) mkdir(t *testing.T, rel string, files ...string) {
	t.Helper()
	for _, h := range f.r.host.Hierarchies {
		if err := os.MkdirAll(h.Dir(rel), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, kv := range files {
			k, v, _ := strings.Cut(kv, "=")
			if err := os.WriteFile(filepath.Join(h.Dir(rel), k), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// run runs every step and returns the step records and failures.
func (f *fakeCase) run(t *testing.T) ([]report.Step, []report.Failure) {
	t.Helper()
	for i := range f.cs.c.Steps {
		f.r.doStep(context.Background(), f.cs, &f.cs.c.Steps[i])
	}
	return f.cs.res.Steps, f.cs.res.Failures
}

// A check's cgroup reference is expanded like every other string of a case
// (issue 28 item 1: "caller/p-${token}" was read literally).
func TestCheckReferenceExpands(t *testing.T) {
	f := newFakeCase(t, mode.Hybrid, `  - {id: read, do: check, check: {file: {cgroup: "caller/p-${token}", name: pids.max, equals: "7"}}}`)
	f.mkdir(t, f.cs.root+"/host/p-cgc0fake", "pids.max=7")
	if _, fails := f.run(t); len(fails) > 0 {
		t.Errorf("failures: %+v", fails)
	}
}

// parent/x is C's sibling x (issue 28 item 2: it was read at C/parent/x),
// and base/x is where a relative cgroupsPath lands: C/x on v1 and hybrid
// hosts, C's sibling on v2.
func TestCheckReferenceResolves(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  mode.Cgroup
		ref   string
		where string // below the case root
	}{
		{"parent", mode.Hybrid, "parent/q-${token}", "q-cgc0fake"},
		{"base on hybrid", mode.Hybrid, "base/q-${token}", "host/q-cgc0fake"},
		{"base on v2", mode.V2, "base/q-${token}", "q-cgc0fake"},
		{"base itself on v2", mode.V2, "base", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCase(t, tc.mode, `  - {id: read, do: check, check: {file: {cgroup: "`+tc.ref+`", name: pids.max, equals: "3"}}}`)
			f.mkdir(t, strings.TrimSuffix(f.cs.root+"/"+tc.where, "/"), "pids.max=3")
			if _, fails := f.run(t); len(fails) > 0 {
				t.Errorf("failures: %+v", fails)
			}
		})
	}
}

// On v1 a file of the cgroup core (cgroup.procs) is read in every managed
// hierarchy, and a prefix that names no mounted controller is an error, not
// the first hierarchy's file (issue 28 item 5).
func TestCheckCoreFileEveryHierarchy(t *testing.T) {
	f := newFakeCase(t, mode.Hybrid, `  - {id: empty, do: check, check: {file: {cgroup: caller, name: cgroup.procs, empty: true}}}
  - {id: io, do: check, check: {file: {cgroup: caller, name: io.max, equals: "x"}}}`)
	f.mkdir(t, f.cs.root+"/host", "cgroup.procs=")
	if err := os.WriteFile(filepath.Join(f.r.host.Hierarchies[1].Dir(f.cs.root+"/host"), "cgroup.procs"), []byte("42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, fails := f.run(t)
	var got []string
	for _, x := range fails {
		got = append(got, x.Step+": "+x.Message)
	}
	want := []string{"empty: pids:/cgconform-cgc0fake/001/host/cgroup.procs: \"42\", want it empty", `io: io.max: no v1 hierarchy has the controller "io" (on v1 a file's prefix picks its hierarchy)`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
}

// A file check records what it read, pass or fail (issue 28 item 7): the
// report shows the value, not only that it matched.
func TestCheckFileRecordsValue(t *testing.T) {
	f := newFakeCase(t, mode.Hybrid, `  - {id: read, do: check, check: {file: {cgroup: caller, name: pids.max, equals: "7"}}}
  - {id: procs, do: check, check: {file: {cgroup: caller, name: cgroup.procs, empty: true}}}`)
	f.mkdir(t, f.cs.root+"/host", "pids.max=7", "cgroup.procs=")
	steps, fails := f.run(t)
	if len(fails) > 0 {
		t.Fatalf("failures: %+v", fails)
	}
	var got []string
	for _, s := range steps {
		got = append(got, s.Note)
	}
	want := []string{
		`read pids:/cgconform-cgc0fake/001/host/pids.max = "7"`,
		`read memory:/cgconform-cgc0fake/001/host/cgroup.procs = ""; read pids:/cgconform-cgc0fake/001/host/cgroup.procs = ""`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}

// exists holds in every managed hierarchy (the v1 controllers on a hybrid
// host, not cgroup2 there); absent in none at all (issue 28 item 3).
func TestCheckExistsAbsent(t *testing.T) {
	f := newFakeCase(t, mode.Hybrid, `  - {id: kept, do: check, check: {exists: "base/p-${token}"}}
  - {id: kept-leaf, do: check, check: {exists: "base/p-${token}/a"}}
  - {id: gone, do: check, check: {absent: "base/p-${token}/b"}}
  - {id: gone-parent, do: check, check: {absent: "base/p-${token}"}}`)
	p := f.cs.root + "/host/p-cgc0fake"
	f.mkdir(t, p)
	for _, h := range f.r.host.Hierarchies {
		if h.Key == "memory" {
			f.mkdir1(t, h, p+"/a")
		}
		if h.V2 {
			f.mkdir1(t, h, p+"/b")
		}
	}
	_, fails := f.run(t)
	var got []string
	for _, x := range fails {
		got = append(got, x.Step+": "+x.Message+" | "+x.Diff)
	}
	want := []string{
		"kept-leaf: base/p-cgc0fake/a is not a cgroup in pids | " + p + "/a (pids)",
		"gone: base/p-cgc0fake/b is still a cgroup in unified | " + p + "/b (unified)",
		"gone-parent: base/p-cgc0fake is still a cgroup in memory, pids, unified | " + p + " (all 3 hierarchies)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
}

// mkdir1 makes a cgroup in one hierarchy.
func (f *fakeCase) mkdir1(t *testing.T, h cgroupfs.Hierarchy, rel string) {
	t.Helper()
	if err := os.MkdirAll(h.Dir(rel), 0o755); err != nil {
		t.Fatal(err)
	}
}

// remove-empty is the operator's rmdir of a level a runtime left: it
// removes the level in every hierarchy where it is, passes where it is gone
// already, and fails naming the process or child cgroup that holds it.
func TestRemoveEmpty(t *testing.T) {
	const step = `  - {id: rm, do: remove-empty, cgroup: "base/p-${token}"}`
	pid := os.Getpid()
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		// make puts things below the level p in hierarchy h.
		make     func(t *testing.T, f *fakeCase, h cgroupfs.Hierarchy, p string)
		wantFail []string // the failure, then its lines; none: it passes
		wantNote string
	}{{
		name:     "absent everywhere",
		make:     func(*testing.T, *fakeCase, cgroupfs.Hierarchy, string) {},
		wantNote: "removed in: none; absent in: memory pids unified",
	}, {
		name:     "empty in every hierarchy",
		make:     func(t *testing.T, f *fakeCase, h cgroupfs.Hierarchy, p string) { f.mkdir1(t, h, p) },
		wantNote: "removed in: memory pids unified; absent in: none",
	}, {
		name: "empty in some",
		make: func(t *testing.T, f *fakeCase, h cgroupfs.Hierarchy, p string) {
			if h.Key == "memory" {
				f.mkdir1(t, h, p)
			}
		},
		wantNote: "removed in: memory; absent in: pids unified",
	}, {
		name: "a child and a process",
		make: func(t *testing.T, f *fakeCase, h cgroupfs.Hierarchy, p string) {
			f.mkdir1(t, h, p)
			switch h.Key {
			case "memory":
				f.mkdir1(t, h, p+"/b")
			case "pids":
				if err := os.WriteFile(filepath.Join(h.Dir(p), "cgroup.procs"), fmt.Appendf(nil, "%d\n", pid), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		},
		wantFail: []string{
			"rm: base/p-cgc0fake is not empty: rmdir refused in 2 of 3 hierarchies",
			"/cgconform-cgc0fake/001/host/p-cgc0fake (memory): directory not empty; holds child cgroup b",
			fmt.Sprintf("/cgconform-cgc0fake/001/host/p-cgc0fake (pids): directory not empty; holds pid %d %s", pid, strings.TrimSpace(string(comm))),
		},
		wantNote: "removed in: unified; absent in: none",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCase(t, mode.Hybrid, step)
			p := f.cs.root + "/host/p-cgc0fake"
			for _, h := range f.r.host.Hierarchies {
				tc.make(t, f, h, p)
			}
			steps, fails := f.run(t)
			var got []string
			for _, x := range fails {
				got = append(got, x.Step+": "+x.Message)
				got = append(got, strings.Split(x.Diff, "\n")...)
			}
			if diff := cmp.Diff(tc.wantFail, got); diff != "" {
				t.Errorf("failures (-want +got):\n%s", diff)
			}
			if steps[0].Note != tc.wantNote {
				t.Errorf("note %q, want %q", steps[0].Note, tc.wantNote)
			}
			for _, h := range f.r.host.Hierarchies {
				_, err := os.Stat(h.Dir(p))
				if busy := len(tc.wantFail) > 0 && h.Key != ""; busy != (err == nil) {
					t.Errorf("%s: level there: %v, want %v", h.Name(), err == nil, busy)
				}
			}
		})
	}
}

// remove-empty never removes the caller's cgroup or one above it, even
// when the kernel would (an empty C between runtime commands).
func TestRemoveEmptyKeepsCaller(t *testing.T) {
	f := newFakeCase(t, mode.V2, `  - {id: rm, do: remove-empty, cgroup: parent/host}`)
	_, fails := f.run(t)
	if len(fails) != 1 || !strings.Contains(fails[0].Message, "which holds the caller's cgroup") {
		t.Errorf("failures %+v, want one: the level holds the caller's cgroup", fails)
	}
	if _, err := os.Stat(f.r.host.Hierarchies[0].Dir(f.cs.root + "/host")); err != nil {
		t.Errorf("the caller's cgroup: %v", err)
	}
}

// TestStrayState checks which files of a --root count as left behind: only
// those of a deleted container, by the names runsc, runc and crun use.
func TestStrayState(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"null-netns", "runsc-tok-a.sock", "tok-sb_sandbox:tok-a.state", "tok-sb_sandbox:tok-a.lock", "tok-a", "tok-ab", "runsc-tok-ab.sock", "runsc-tok-b.sock"} {
		if err := os.WriteFile(filepath.Join(root, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	insts := []*instance{{id: "tok-a", root: root, deleted: true}, {id: "tok-b", root: root}}
	var want []string
	for _, n := range []string{"runsc-tok-a.sock", "tok-a", "tok-sb_sandbox:tok-a.lock", "tok-sb_sandbox:tok-a.state"} {
		want = append(want, "state "+filepath.Join(root, n))
	}
	if diff := cmp.Diff(want, strayState(insts)); diff != "" {
		t.Errorf("strayState (-want +got):\n%s", diff)
	}
}

// A throwaway case's snapshots hold the whole of every hierarchy, so a
// level a runtime made at the real root that names nothing of the run
// (/system.slice in a v1 hierarchy systemd does not manage) is left
// behind, not only the scope in it (issue 47 item 1); elsewhere they hold
// what names the run.
func TestSnapshotWholeWhenThrowaway(t *testing.T) {
	for _, tc := range []struct {
		name     string
		requires []string
		want     []string
	}{
		{"shared host", nil, []string{"pids:/system.slice/x-cgc0fake-a.scope"}},
		{"throwaway", []string{"throwaway"}, []string{"pids:/system.slice", "pids:/system.slice/x-cgc0fake-a.scope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCase(t, mode.Hybrid, "  - {do: check, check: {nothingLeft: true}}")
			f.cs.c.Requires = tc.requires
			f.mkdir(t, "/user.slice")
			before := f.r.snapshot(f.cs)
			if err := os.MkdirAll(f.r.host.Hierarchies[1].Dir("/system.slice/x-cgc0fake-a.scope"), 0o755); err != nil {
				t.Fatal(err)
			}
			added, removed := diffSets(before, f.r.snapshot(f.cs))
			if diff := cmp.Diff(tc.want, added); diff != "" || removed != nil {
				t.Errorf("added (-want +got):\n%s\nremoved: %v", diff, removed)
			}
		})
	}
}

// strace's notes about its own tracees are not the runtime's output
// (issue 47 item 4); its other lines, and the runtime's, stay.
func TestWithoutStraceNoise(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"delayed wait data", "/usr/bin/strace: dispatch_event: pid 14157 has delayed wait data set already\ncreating container: x\n", "creating container: x\n"},
		{"bare name, unknown pid", "strace: Exit of unknown pid 7 ignored\nok", "ok"},
		{"strace cannot run it", "/usr/bin/strace: exec: No such file or directory\n", "/usr/bin/strace: exec: No such file or directory\n"},
		{"the runtime's own", "dispatch_event: pid 1 has delayed wait data set already\n", "dispatch_event: pid 1 has delayed wait data set already\n"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, withoutStraceNoise(tc.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A step's error lists its misses joined with "; ", never beginning with
// one (issue 47 item 4).
func TestExpectJoinsErrors(t *testing.T) {
	cs := &caseState{res: &report.Result{}}
	st := &casefile.Step{ID: "refused", Expect: &casefile.Expect{Fail: true, Output: casefile.Outputs{"refused"}}}
	var rec report.Step
	(&Runner{}).expect(cs, st, "a: ", check.Command{Output: "created\n"}, &rec)
	want := `exited 0, want a failure; output lacks "refused": created`
	if rec.Error != want {
		t.Errorf("error %q, want %q", rec.Error, want)
	}
}

// In a throwaway case's whole-tree snapshot, only the v1 hierarchies of
// controllers systemd manages may hide a unit's cgroup it realized there;
// a runtime's level in cpuset or freezer stays seen.
func TestSystemdRealizes(t *testing.T) {
	for key, want := range map[string]bool{
		"cpu,cpuacct": true, "blkio": true, "memory": true, "devices": true, "pids": true,
		"cpuset": false, "freezer": false, "net_cls,net_prio": false, "name=systemd": false, "misc": false,
	} {
		if got := systemdRealizes(cgroupfs.Hierarchy{Key: key}); got != want {
			t.Errorf("systemdRealizes(%q) = %t, want %t", key, got, want)
		}
	}
	if systemdRealizes(cgroupfs.Hierarchy{V2: true}) {
		t.Error("the unified hierarchy hides cgroups")
	}
}
