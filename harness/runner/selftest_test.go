package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/google/go-cmp/cmp"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/proc"
	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/base/roottest"
	"github.com/runsc-cgroups/cgconform/harness/casefile"
)

// The test binary doubles as the exec-in-cgroup helper and, when invoked
// through a symlink named runc-right or runc-wrong, as a fake OCI runtime
// (runc dialect) that puts its container beneath the caller's cgroup
// (right), beside it (wrong), beneath it but never removes it (leaky),
// beneath it with an init that dies at start (dead), or where a relative
// cgroupsPath lands, as runsc and runc put it (path).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == HelperCommand || os.Args[1] == mountCommand) {
		os.Exit(HelperMain(os.Args[1], os.Args[2:]))
	}
	switch filepath.Base(os.Args[0]) {
	case "runc-right", "runc-wrong", "runc-leaky", "runc-dead", "runc-slow", "runc-refuse", "runc-path":
		os.Exit(fakeRuntime(filepath.Base(os.Args[0]), os.Args[1:]))
	}
	os.Exit(m.Run())
}

type fakeState struct {
	Pid  int      `json:"pid"`
	Dirs []string `json:"dirs"`
}

func fakeRuntime(kind string, args []string) int {
	// One thread for every system call of the main goroutine: strace
	// counts a syscall kill's nth per thread (TestSelfTestSyscallKill).
	runtime.LockOSThread()
	right := kind != "runc-wrong"
	if len(args) < 3 || args[0] != "--root" {
		fmt.Fprintln(os.Stderr, "fake runtime: want --root DIR CMD ...")
		return 2
	}
	root, cmd, rest := args[1], args[2], args[3:]
	id := rest[len(rest)-1]
	stateFile := filepath.Join(root, id+".json")
	var st fakeState
	b, err := os.ReadFile(stateFile)
	known := err == nil && json.Unmarshal(b, &st) == nil
	switch cmd {
	case "create":
		if kind == "runc-refuse" {
			fmt.Fprintln(os.Stderr, "fake runtime: refusing this cgroupsPath")
			return 1
		}
		// Shows the bundle's annotations, and refuses a spec that asks
		// it to (fake.refuse), as a kernel refuses a limit.
		var spec struct {
			Annotations map[string]string
			Linux       struct{ CgroupsPath string }
		}
		if len(rest) == 3 && rest[0] == "--bundle" {
			b, _ := os.ReadFile(filepath.Join(rest[1], "config.json"))
			_ = json.Unmarshal(b, &spec)
		}
		a, _ := json.Marshal(spec.Annotations)
		fmt.Printf("annotations %s\n", a)
		if spec.Annotations["fake.refuse"] != "" {
			fmt.Fprintln(os.Stderr, "fake runtime: refusing this spec")
			return 1
		}
		host, err := cgroupfs.Detect()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		self, _ := cgroupfs.ProcCgroup(os.Getpid())
		sleep := exec.Command("sleep", "100000")
		sleep.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := sleep.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		st.Pid = sleep.Process.Pid
		for _, h := range host.Hierarchies {
			caller := self[h.Key]
			target := path.Join(caller, "fake-"+id)
			if !right {
				target = path.Join(path.Dir(caller), "fake-"+id)
			}
			if cp := spec.Linux.CgroupsPath; cp != "" && kind == "runc-path" {
				// A relative cgroupsPath, where a runtime puts it.
				base := caller
				if host.Mode == mode.V2 {
					base = path.Dir(caller)
				}
				target = path.Join(base, cp)
			}
			dir := h.Dir(target)
			if err := os.Mkdir(dir, 0o755); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			st.Dirs = append(st.Dirs, dir)
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				if v, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f)); err == nil {
					_ = os.WriteFile(filepath.Join(dir, f), v, 0o644)
				}
			}
			if err := cgroupfs.WritePid(dir, st.Pid); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		if kind == "runc-slow" {
			// Everything is made, nothing recorded yet: a SIGKILL now
			// leaves cgroups and a process no delete can find.
			time.Sleep(20 * time.Second)
		}
		b, _ := json.Marshal(st)
		return exitOn(os.WriteFile(stateFile, b, 0o644))
	case "start":
		if kind == "runc-dead" && known {
			killPID(st.Pid)
		}
		return 0
	case "state":
		if !known {
			fmt.Fprintln(os.Stderr, "container does not exist")
			return 1
		}
		status := "running"
		if !alive(st.Pid) {
			status = "stopped"
		}
		fmt.Printf(`{"ociVersion":"1.0.2","id":%q,"status":%q,"pid":%d}`+"\n", id, status, st.Pid)
		return 0
	case "update":
		// Shows what it was handed: the resources file's content.
		if len(rest) != 3 || rest[0] != "--resources" {
			fmt.Fprintln(os.Stderr, "fake runtime: want update --resources FILE ID")
			return 2
		}
		b, err := os.ReadFile(rest[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("%s\n", b)
		return 0
	case "kill":
		if known {
			_ = syscall.Kill(st.Pid, syscall.SIGKILL)
		}
		return 0
	case "delete":
		if !known {
			return 0
		}
		killPID(st.Pid)
		if kind == "runc-leaky" {
			st.Dirs = nil
		}
		for i := len(st.Dirs) - 1; i >= 0; i-- {
			cgroupfs.RemoveTree(st.Dirs[i], 5*time.Second)
		}
		return exitOn(os.Remove(stateFile))
	}
	fmt.Fprintf(os.Stderr, "fake runtime: %s not implemented\n", cmd)
	return 2
}

func exitOn(err error) int {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

const selfTestCase = `
name: self-test
purpose: a fake runtime that places its container beside the caller must fail a beneath expectation
source: harness self-test
requires: [root]
contexts: [host, container]
sandboxes:
  - name: a
steps:
  - {do: run, sandbox: a}
  - {id: placed-beneath, do: check, check: {placement: {sandbox: a, relation: beneath, path: "fake-${id}"}}}
  - {id: delete, do: delete-force, sandbox: a}
  - {id: nothing-left, do: check, check: {nothingLeft: true}}
`

// TestSelfTest runs the real runner, on this host's cgroups, against the
// fake runtimes: right must pass, wrong must fail on exactly the
// placement (and pass as an expected divergence once one is declared).
// It needs root (roottest) and works only under its own test root, which
// Run creates and removes.
func TestSelfTest(t *testing.T) {
	busybox := "/usr/bin/busybox"
	roottest.Require(t, busybox)
	if _, err := cgroupfs.Detect(); err != nil {
		t.Fatalf("no cgroups here: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range []string{"runc-right", "runc-wrong", "runc-leaky", "runc-dead"} {
		if err := os.Symlink(self, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name       string
		divergence bool
		want       map[string]report.Outcome
	}{
		{"violations fail", false, map[string]report.Outcome{"runc-right": report.Pass, "runc-wrong": report.Fail, "runc-leaky": report.Fail, "runc-dead": report.Fail}},
		{"declared divergence", true, map[string]report.Outcome{"runc-right": report.Pass, "runc-wrong": report.Divergence, "runc-leaky": report.Fail, "runc-dead": report.Fail}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := selfTestCase
			if tc.divergence {
				src += "divergences:\n  - {runtime: runc-wrong, reason: it is built to be wrong, steps: [placed-beneath]}\n"
			}
			c, err := casefile.Parse([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			var progress strings.Builder
			rep, err := Run(context.Background(), Options{
				Cases: []*casefile.Case{c},
				Runtimes: []Runtime{
					{Name: "runc-right", Path: filepath.Join(dir, "runc-right"), Kind: "runc"},
					{Name: "runc-wrong", Path: filepath.Join(dir, "runc-wrong"), Kind: "runc"},
					{Name: "runc-leaky", Path: filepath.Join(dir, "runc-leaky"), Kind: "runc"},
					{Name: "runc-dead", Path: filepath.Join(dir, "runc-dead"), Kind: "runc"},
				},
				Busybox:     busybox,
				Self:        self,
				CaseTimeout: time.Minute,
				Progress:    &progress,
			})
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, progress.String())
			}
			for _, res := range rep.Results {
				if got := res.Outcome; got != tc.want[res.Runtime] {
					t.Errorf("%s [%s]: outcome %s, want %s; failures %+v", res.Runtime, res.Context, got, tc.want[res.Runtime], res.Failures)
				}
				if res.Runtime == "runc-leaky" {
					steps := map[string]bool{}
					for _, f := range res.Failures {
						steps[f.Step] = true
					}
					if !steps["nothing-left"] || !steps["cleanup"] || len(res.Leaks) == 0 {
						t.Errorf("%s: leak not reported: %+v", res.Context, res.Failures)
					}
				}
				if res.Runtime == "runc-dead" {
					// The check can only say "no process observed"; the
					// run step says why.
					if len(res.Steps) == 0 || !strings.Contains(res.Steps[0].Note, "no process observed: state: status \"stopped\"") {
						t.Errorf("%s: run step does not say why no process was seen: %+v", res.Context, res.Steps)
					}
				}
				if res.Runtime != "runc-wrong" {
					continue
				}
				for _, f := range res.Failures {
					if f.Step != "placed-beneath" {
						t.Errorf("%s: unexpected failure %s: %s %s", res.Context, f.Step, f.Message, f.Diff)
					}
				}
				if len(res.Failures) == 0 || !strings.Contains(res.Failures[0].Diff, "fake-") {
					t.Errorf("%s: no placement diff: %+v", res.Context, res.Failures)
				}
			}
			assertNoTestRootLeft(t, rep.RunID)
		})
	}
}

const killTrialsCase = `
name: kill-trials
purpose: a create SIGKILLed after it made its cgroups but before it saved its state leaks, every trial
source: harness self-test
requires: [root]
trials: 3
sandboxes:
  - name: a
steps:
  - {id: create-killed, do: create, sandbox: a, kill: {after: 1s}}
  - {id: delete, do: delete-force, sandbox: a}
  - {id: nothing-left, do: check, check: {nothingLeft: true}}
`

// TestSelfTestKillAndTrials: a kill step really kills the runtime command,
// trials count what they should, and every trial starts from a clean tree.
func TestSelfTestKillAndTrials(t *testing.T) {
	busybox := "/usr/bin/busybox"
	roottest.Require(t, busybox)
	rep := runSelfTest(t, killTrialsCase, busybox, "runc-slow", "runc-right")
	for _, res := range rep.Results {
		tr := res.Trials
		if tr == nil {
			t.Fatalf("%s: no trial summary: %+v", res.Runtime, res)
		}
		want := report.Trials{Trials: 3}
		if res.Runtime == "runc-slow" {
			// Killed after its cgroups and process exist, before its state
			// does: delete finds nothing, every trial leaks.
			want.Killed, want.Failed, want.Leaked = 3, 3, 3
		}
		got := *tr
		got.LeakedItems, got.MaxDeleteMS = 0, 0
		if got != want {
			t.Errorf("%s: trials %+v, want %+v (failures %+v)", res.Runtime, *tr, want, res.Failures)
		}
		if res.Runtime == "runc-slow" {
			if res.Outcome != report.Fail || !strings.Contains(res.Steps[0].Note, "SIGKILLed the runtime command after 1s") {
				t.Errorf("runc-slow: outcome %s, first step %+v", res.Outcome, res.Steps[0])
			}
			// Each trial's leak is its own: the scrub between trials
			// leaves the next one a clean tree.
			for _, f := range res.Failures {
				if f.Step == "nothing-left" && strings.Count(f.Diff, "fake-") != 1 {
					t.Errorf("a trial saw another trial's leaks: %s", f.Diff)
				}
			}
		}
	}
	assertNoTestRootLeft(t, rep.RunID)
}

const respawnCase = `
name: respawn
purpose: a setup process a trial kills is there again for the next trial
source: harness self-test
requires: [root]
trials: 3
setup:
  - {do: mkdir, cgroup: "parent/tenant-${token}"}
  - {do: process, cgroup: "parent/tenant-${token}", name: intruder}
sandboxes:
  - name: a
steps:
  - {id: run, do: run, sandbox: a}
  - {id: intruder-joins, do: join, sandbox: a, process: intruder}
  - {id: intruder-exits, do: kill-process, process: intruder}
  - {id: delete, do: delete-force, sandbox: a}
  - {id: nothing-left, do: check, check: {nothingLeft: true}}
`

// TestSelfTestTrialsRespawnSetup: -trials works for a case whose steps end
// a setup process (measured before the fix: every trial after the first
// failed to move the dead intruder, "no such process", for every runtime).
func TestSelfTestTrialsRespawnSetup(t *testing.T) {
	busybox := "/usr/bin/busybox"
	roottest.Require(t, busybox)
	rep := runSelfTest(t, respawnCase, busybox, "runc-right")
	for _, res := range rep.Results {
		if res.Outcome != report.Pass || res.Trials == nil || res.Trials.Failed != 0 {
			t.Errorf("%s: outcome %s, trials %+v, failures %+v", res.Runtime, res.Outcome, res.Trials, res.Failures)
		}
	}
	assertNoTestRootLeft(t, rep.RunID)
}

const tableCase = `
name: table
purpose: the table protocol sorts inputs into works and refused
source: harness self-test
requires: [root]
sandboxes:
  - name: sb
    spec:
      linux: {cgroupsPath: "${input}"}
inputs:
  - {name: fine, path: "x-${token}", expect: works, placement: {relation: beneath, path: "fake-${id}"}}
  - {name: bad, path: "y-${token}", expect: refused}
`

func TestSelfTestTable(t *testing.T) {
	busybox := "/usr/bin/busybox"
	roottest.Require(t, busybox)
	rep := runSelfTest(t, tableCase, busybox, "runc-right", "runc-refuse")
	for _, res := range rep.Results {
		var cats []string
		for _, in := range res.Inputs {
			cats = append(cats, in.Category)
		}
		failed := map[string]bool{}
		for _, f := range res.Failures {
			failed[f.Step] = true
		}
		switch res.Runtime {
		case "runc-right":
			// The fake ignores the path and makes fake-<id> beneath C.
			if strings.Join(cats, ",") != "works,works" || !failed["input-bad"] || failed["input-fine"] {
				t.Errorf("runc-right: categories %v, failures %+v", cats, res.Failures)
			}
		case "runc-refuse":
			if strings.Join(cats, ",") != "refused,refused" || !failed["input-fine"] || failed["input-bad"] {
				t.Errorf("runc-refuse: categories %v, failures %+v", cats, res.Failures)
			}
		}
	}
	assertNoTestRootLeft(t, rep.RunID)
}

const podRetryCase = `
name: pod-retry
purpose: a container names its sandbox's ID in every trial, and one ID is refused with a step's spec, then created (and cycled) with its own in the same root
source: harness self-test (issue 37)
requires: [root]
trials: 2
sandboxes:
  - name: sb
  - name: ctr
    spec:
      annotations: {io.kubernetes.cri.sandbox-id: "${id.sb}"}
steps:
  - {do: run, sandbox: sb}
  - {id: refused, do: create, sandbox: ctr, spec: {annotations: {fake.refuse: "${id}"}}, expect: {fail: true, output: "refusing this spec"}}
  - {do: delete-force, sandbox: ctr}
  - {id: cycled, do: cycle, sandbox: ctr, repeat: 1}
  - {id: refused-again, do: create, sandbox: ctr, spec: {annotations: {fake.refuse: "${id}"}}, expect: {fail: true}}
  - {do: delete-force, sandbox: ctr}
  - {id: again, do: create, sandbox: ctr, expect: {output: '"io.kubernetes.cri.sandbox-id":"${id.sb}"}'}}
  - {do: start, sandbox: ctr}
  - {do: delete-force, sandbox: ctr}
  - {do: delete-force, sandbox: sb}
  - {id: nothing-left, do: check, check: {nothingLeft: true}}
`

// TestSelfTestPodRetry: ${id.NAME} is another sandbox's ID with this
// trial's suffix, in a spec and in an expectation; a create step's spec is
// that create's only (issue 37 items 1 and 2).
func TestSelfTestPodRetry(t *testing.T) {
	busybox := "/usr/bin/busybox"
	roottest.Require(t, busybox)
	rep := runSelfTest(t, podRetryCase, busybox, "runc-right")
	for _, res := range rep.Results {
		if res.Outcome != report.Pass || res.Trials == nil || res.Trials.Failed != 0 {
			t.Errorf("%s: outcome %s, trials %+v, failures %+v", res.Runtime, res.Outcome, res.Trials, res.Failures)
		}
		for _, s := range res.Steps {
			if s.ID == "again" {
				if !strings.Contains(s.Output, rep.RunID+"-sb-t0") {
					t.Errorf("the first trial's container names %q, want its sandbox %s-sb-t0", s.Output, rep.RunID)
				}
				break
			}
		}
	}
	assertNoTestRootLeft(t, rep.RunID)
}

const removeEmptyCase = `
name: remove-empty
purpose: remove-empty refuses a level that holds a process, removes it once empty in every hierarchy, and passes once it is gone
source: harness self-test
requires: [root]
sandboxes:
  - name: a
steps:
  - {do: run, sandbox: a}
  - {id: busy, do: remove-empty, cgroup: "caller/fake-${token}-a"}
  - {do: delete-force, sandbox: a}
  - {id: removed, do: remove-empty, cgroup: "caller/fake-${token}-a"}
  - {id: gone, do: check, check: {absent: "caller/fake-${token}-a"}}
  - {id: again, do: remove-empty, cgroup: "caller/fake-${token}-a"}
  - {id: nothing-left, do: check, check: {nothingLeft: true}}
`

// TestSelfTestRemoveEmpty: on the host's cgroups the kernel's rmdir is the
// judge. runc-leaky leaves its leaf C/fake-<id> in every hierarchy after
// its delete: while its process runs, remove-empty fails naming it in all
// of them; after the delete it removes the leaf everywhere, and once it
// is gone it passes.
func TestSelfTestRemoveEmpty(t *testing.T) {
	busybox := "/usr/bin/busybox"
	roottest.Require(t, busybox)
	host, err := cgroupfs.Detect()
	if err != nil {
		t.Fatal(err)
	}
	rep := runSelfTest(t, removeEmptyCase, busybox, "runc-leaky")
	for _, res := range rep.Results {
		if len(res.Failures) != 1 || res.Failures[0].Step != "busy" {
			t.Fatalf("failures %+v, want one, of step busy", res.Failures)
		}
		f := res.Failures[0]
		want := fmt.Sprintf("is not empty: rmdir refused in %d of %d hierarchies", len(host.Hierarchies), len(host.Hierarchies))
		if !strings.Contains(f.Message, want) || !strings.Contains(f.Diff, fmt.Sprintf("(all %d hierarchies): device or resource busy; holds pid ", len(host.Hierarchies))) || !strings.Contains(f.Diff, " sleep") {
			t.Errorf("failure %q\n%s\nwant %q, every hierarchy busy with the sleep named", f.Message, f.Diff, want)
		}
		for _, s := range res.Steps {
			if s.ID == "removed" && !strings.HasSuffix(s.Note, "; absent in: none") || s.ID == "again" && !strings.HasPrefix(s.Note, "removed in: none;") {
				t.Errorf("step %s: note %q", s.ID, s.Note)
			}
		}
	}
	assertNoTestRootLeft(t, rep.RunID)
}

const updateCase = `
name: update
purpose: the update step hands the runtime's own update its resources fragment, expanded, as a file
source: harness self-test
requires: [root]
sandboxes:
  - name: a
steps:
  - {do: run, sandbox: a}
  - {id: update, do: update, sandbox: a, resources: {pids: {limit: 100}, unified: {x: "${token}"}}, expect: {output: '"pids":{"limit":100}'}}
  - {id: expanded, do: update, sandbox: a, resources: {unified: {x: "${id}"}}, expect: {output: '"unified":{"x":"${id}"}'}}
  - {do: delete-force, sandbox: a}
  - {id: nothing-left, do: check, check: {nothingLeft: true}}
`

// TestSelfTestUpdate: the update step runs the runtime's update with the
// step's fragment, its variables expanded (issue 28 item 4).
func TestSelfTestUpdate(t *testing.T) {
	busybox := "/usr/bin/busybox"
	roottest.Require(t, busybox)
	rep := runSelfTest(t, updateCase, busybox, "runc-right")
	for _, res := range rep.Results {
		if res.Outcome != report.Pass {
			t.Errorf("%s: outcome %s, failures %+v", res.Runtime, res.Outcome, res.Failures)
		}
		for _, s := range res.Steps {
			if s.ID == "expanded" && !strings.Contains(s.Output, rep.RunID+"-a") {
				t.Errorf("${id} not expanded in the fragment: %q", s.Output)
			}
		}
	}
	assertNoTestRootLeft(t, rep.RunID)
}

// runSelfTest runs one case against fake runtimes (symlinks to the test
// binary) and returns the report.
func runSelfTest(t *testing.T, src, busybox string, fakes ...string) *report.Report {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := casefile.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var rts []Runtime
	for _, n := range fakes {
		if err := os.Symlink(self, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
		rts = append(rts, Runtime{Name: n, Path: filepath.Join(dir, n), Kind: "runc"})
	}
	var progress strings.Builder
	rep, err := Run(context.Background(), Options{Cases: []*casefile.Case{c}, Runtimes: rts, Busybox: busybox, Self: self, CaseTimeout: time.Minute, Progress: &progress})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	return rep
}

func assertNoTestRootLeft(t *testing.T, runID string) {
	t.Helper()
	host, err := cgroupfs.Detect()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range host.Hierarchies {
		ents, _ := os.ReadDir(h.Mount)
		for _, e := range ents {
			// Only this run's: other runs may share the host.
			if strings.Contains(e.Name(), runID) {
				t.Errorf("left behind: %s", filepath.Join(h.Mount, e.Name()))
			}
		}
	}
}

// TestSelfTestRuntimeCases checks that a runtime limited to some cases
// (-runtime-cases) runs only those, while the others run every case.
func TestSelfTestRuntimeCases(t *testing.T) {
	busybox := "/usr/bin/busybox"
	roottest.Require(t, busybox)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := casefile.Parse([]byte(selfTestCase))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var rts []Runtime
	for _, n := range []string{"runc-right", "runc-wrong"} {
		if err := os.Symlink(self, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
		rts = append(rts, Runtime{Name: n, Path: filepath.Join(dir, n), Kind: "runc"})
	}
	rts[1].Cases = regexp.MustCompile(`^self-test \[host\]$`)
	var progress strings.Builder
	rep, err := Run(context.Background(), Options{Cases: []*casefile.Case{c}, Runtimes: rts, Busybox: busybox, Self: self, CaseTimeout: time.Minute, Progress: &progress})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	var got []string
	for _, res := range rep.Results {
		got = append(got, res.Runtime+" "+res.Context)
	}
	if diff := cmp.Diff([]string{"runc-right host", "runc-wrong host", "runc-right container"}, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	assertNoTestRootLeft(t, rep.RunID)
}

const syscallKillCase = `
name: syscall-kill
purpose: a create killed at its nth mkdirat of its cgroups, for nth = 1..trials
source: harness self-test
requires: [root]
trials: %d
sandboxes:
  - name: a
    spec:
      linux: {cgroupsPath: "fake-${id}"}
steps:
  - {id: create-killed, do: create, sandbox: a, kill: {syscall: mkdirat, nth: trial}}
  - {id: delete, do: delete-force, sandbox: a}
  - {id: nothing-left, do: check, check: {nothingLeft: true}}
`

// TestSelfTestSyscallKill: the fake runtime makes its cgroup in each of
// the host's H hierarchies, one mkdirat each on one thread, so a sweep of
// H+1 trials is killed at each of them and runs to its end in the last
// (not killed, not a failure); a sweep cut short (one trial: killed at its
// first mkdirat) never gets there and fails saying so.
func TestSelfTestSyscallKill(t *testing.T) {
	busybox := "/usr/bin/busybox"
	roottest.Require(t, busybox)
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("needs strace (apt-get install strace)")
	}
	host, err := cgroupfs.Detect()
	if err != nil {
		t.Skip(err)
	}
	h := len(host.Hierarchies)
	for _, tc := range []struct {
		name     string
		trials   int
		complete bool
	}{
		{"complete", h + 1, true},
		{"cut short", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := runSelfTest(t, fmt.Sprintf(syscallKillCase, tc.trials), busybox, "runc-path")
			res := rep.Results[0]
			if tc.complete {
				if res.Trials == nil {
					t.Fatalf("no trial summary: %+v", res)
				}
				if got, want := *res.Trials, (report.Trials{Trials: h + 1, Killed: h, NotKilled: 1, Failed: h, Leaked: h}); got.Trials != want.Trials || got.Killed != want.Killed || got.NotKilled != want.NotKilled || got.Failed != want.Failed || got.Leaked != want.Leaked {
					t.Errorf("trials %+v, want %+v (leakedItems and maxDeleteMs aside)", got, want)
				}
			}
			if note := res.Steps[0].Note; !strings.HasPrefix(note, "SIGKILLed (PID ") || !strings.Contains(note, ") at its 1st mkdirat: mkdirat(AT_FDCWD, \"") {
				t.Errorf("trial 1's create: note %q", note)
			}
			cut := false
			for _, f := range res.Failures {
				if f.Step == "create-killed" && strings.Contains(f.Message, "the sweep did not reach its end") {
					cut = true
				}
				if strings.Contains(f.Message, fmt.Sprintf("trial %d/%d", tc.trials, tc.trials)) && tc.complete {
					t.Errorf("the trial that ran to its end failed: %+v", f)
				}
			}
			if cut == tc.complete {
				t.Errorf("sweep cut short reported: %v, want %v (failures %+v)", cut, !tc.complete, res.Failures)
			}
		})
	}
}

const stoppedCreateCase = `
name: stopped-create
purpose: a create stopped once its container's process exists ends with exit 0 once continued
source: harness self-test
requires: [root]
sandboxes:
  - name: a
steps:
  - {id: create-stopped, do: create, sandbox: a, kill: {signal: STOP, started: sandbox}}
  - {id: create-continues, do: continue, sandbox: a}
  - {id: delete, do: delete-force, sandbox: a}
  - {id: nothing-left, do: check, check: {nothingLeft: true}}
`

// TestSelfTestStoppedCreate: the slow fake's create (20 s after its
// process exists) is stopped in the background at its child, and the
// continue step waits for its exit 0.
func TestSelfTestStoppedCreate(t *testing.T) {
	busybox := "/usr/bin/busybox"
	roottest.Require(t, busybox)
	rep := runSelfTest(t, stoppedCreateCase, busybox, "runc-slow")
	res := rep.Results[0]
	if res.Outcome != report.Pass {
		t.Errorf("outcome %s, failures %+v", res.Outcome, res.Failures)
	}
	if note := res.Steps[0].Note; !strings.HasPrefix(note, "SIGSTOPped the create (PID ") || !strings.Contains(note, "once its init (PID ") {
		t.Errorf("create: note %q", note)
	}
	if s := res.Steps[1]; s.Exit == nil || *s.Exit != 0 || !strings.HasPrefix(s.Note, "SIGCONT the create (PID ") {
		t.Errorf("continue: %+v", s)
	}
	assertNoTestRootLeft(t, rep.RunID)
}

const injectCase = `
name: inject
purpose: an injected error fails the runtime's calls on its state files only, or on every path
source: harness self-test
requires: [root]
sandboxes:
  - name: a
steps:
  - {id: run, do: run, sandbox: a}
  - {id: everywhere, do: delete-force, sandbox: a, inject: {syscall: unlinkat, error: EPERM}, expect: {fail: true, output: "operation not permitted"}}
  - {id: state-files, do: delete-force, sandbox: a, inject: {syscall: unlinkat, error: EPERM, paths: state}}
  - {id: nothing-left, do: check, check: {nothingLeft: true}}
`

// TestSelfTestInject: the fake keeps its state at <root>/<id>.json, not
// where runc does (the state files an inject's paths name), so only the
// injection without paths reaches its delete's rmdir and unlink.
func TestSelfTestInject(t *testing.T) {
	busybox := "/usr/bin/busybox"
	roottest.Require(t, busybox)
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("needs strace (apt-get install strace)")
	}
	rep := runSelfTest(t, injectCase, busybox, "runc-right")
	res := rep.Results[0]
	if res.Outcome != report.Pass {
		t.Errorf("outcome %s, failures %+v", res.Outcome, res.Failures)
	}
	for i, want := range map[int]string{1: "unlinkat call(s) with EPERM", 2: "strace failed 0 unlinkat call(s) on the state files with EPERM"} {
		if note := res.Steps[i].Note; !strings.Contains(note, want) || i == 1 && strings.HasPrefix(note, "strace failed 0 ") {
			t.Errorf("step %s: note %q, want %q", res.Steps[i].ID, note, want)
		}
	}
	assertNoTestRootLeft(t, rep.RunID)
}

// killPID is the fake runtimes' kill of the process their state names.
func killPID(pid int) {
	if p, err := proc.Identify(pid); err == nil {
		killAndWait([]proc.Process{p}, 5*time.Second)
	}
}
