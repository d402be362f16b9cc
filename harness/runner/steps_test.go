package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runsc-cgroups/cgconform/harness/casefile"
	"github.com/runsc-cgroups/cgconform/harness/cgroupfs"
	"github.com/runsc-cgroups/cgconform/harness/mode"
	"github.com/runsc-cgroups/cgconform/harness/report"
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
