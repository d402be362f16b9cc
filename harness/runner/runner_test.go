package runner

import (
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/proc"
	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/harness/casefile"
)

func TestParseRuntimes(t *testing.T) {
	got, err := ParseRuntimes("runsc-patched=bin/runsc-patched, runc ,crun=/usr/bin/crun")
	if err != nil {
		t.Fatal(err)
	}
	want := []Runtime{
		{Name: "runsc-patched", Path: "bin/runsc-patched", Kind: "runsc"},
		{Name: "runc", Path: "runc", Kind: "runc"},
		{Name: "crun", Path: "/usr/bin/crun", Kind: "crun"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := ParseRuntimes("kata=/bin/kata"); err == nil || !strings.Contains(err.Error(), "cannot tell") {
		t.Errorf("unknown kind accepted: %v", err)
	}
}

func TestCommands(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rt      Runtime
		options []string
		action  string
		want    []string
		notes   int
	}{
		{"runsc create", Runtime{Kind: "runsc"}, nil, "create", []string{"--root", "/r", "--network=none", "--debug-log=/l/", "create", "--bundle", "/b", "id"}, 0},
		{"runsc nested delete", Runtime{Kind: "runsc"}, []string{"nested-cgroups"}, "delete-force", []string{"--root", "/r", "--network=none", "--debug-log=/l/", "--nested-cgroups", "delete", "--force", "id"}, 0},
		{"runc systemd", Runtime{Kind: "runc"}, []string{"systemd-cgroup"}, "start", []string{"--root", "/r", "--systemd-cgroup", "start", "id"}, 0},
		{"crun systemd", Runtime{Kind: "crun"}, []string{"systemd-cgroup"}, "kill", []string{"--root", "/r", "--cgroup-manager=systemd", "kill", "id", "KILL"}, 0},
		{"runc has no nested mode", Runtime{Kind: "runc"}, []string{"nested-cgroups"}, "state", []string{"--root", "/r", "state", "id"}, 1},
		{"crun ignore-cgroups", Runtime{Kind: "crun"}, []string{"ignore-cgroups"}, "create", []string{"--root", "/r", "--cgroup-manager=disabled", "create", "--bundle", "/b", "id"}, 0},
		{"runc has no ignore-cgroups", Runtime{Kind: "runc"}, []string{"ignore-cgroups"}, "create", []string{"--root", "/r", "create", "--bundle", "/b", "id"}, 1},
		// Each runtime's own update, reading the fragment from a file.
		{"runsc update", Runtime{Kind: "runsc"}, nil, "update", []string{"--root", "/r", "--network=none", "--debug-log=/l/", "update", "--resources", "/b/update.json", "id"}, 0},
		{"runc update", Runtime{Kind: "runc"}, nil, "update", []string{"--root", "/r", "update", "--resources", "/b/update.json", "id"}, 0},
		{"crun update", Runtime{Kind: "crun"}, nil, "update", []string{"--root", "/r", "update", "--resources", "/b/update.json", "id"}, 0},
		// pause and resume: one word and the ID in every runtime.
		{"runsc pause", Runtime{Kind: "runsc"}, nil, "pause", []string{"--root", "/r", "--network=none", "--debug-log=/l/", "pause", "id"}, 0},
		{"runsc resume", Runtime{Kind: "runsc"}, nil, "resume", []string{"--root", "/r", "--network=none", "--debug-log=/l/", "resume", "id"}, 0},
		{"runc pause", Runtime{Kind: "runc"}, nil, "pause", []string{"--root", "/r", "pause", "id"}, 0},
		{"runc resume", Runtime{Kind: "runc"}, []string{"systemd-cgroup"}, "resume", []string{"--root", "/r", "--systemd-cgroup", "resume", "id"}, 0},
		{"crun pause", Runtime{Kind: "crun"}, nil, "pause", []string{"--root", "/r", "pause", "id"}, 0},
		{"crun resume", Runtime{Kind: "crun"}, nil, "resume", []string{"--root", "/r", "resume", "id"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			global, notes := tc.rt.GlobalFlags("/r", "/l", tc.options)
			var args []string
			if tc.action == "update" {
				args = []string{"/b/update.json"}
			}
			got := tc.rt.Command(global, tc.action, "id", "/b", args, "")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if len(notes) != tc.notes {
				t.Errorf("notes %q", notes)
			}
			runtimeParses(t, tc.rt, tc.options, tc.action)
		})
	}
}

// runtimeParses runs the command for a container that does not exist with
// the real runc or crun, where installed (runsc is built, not installed):
// the runtime must refuse for want of the container, not for a flag or
// argument it does not know.
func runtimeParses(t *testing.T, rt Runtime, options []string, action string) {
	t.Helper()
	bin, err := exec.LookPath(rt.Kind)
	if rt.Kind == "runsc" || err != nil {
		return
	}
	dir := t.TempDir()
	global, _ := rt.GlobalFlags(filepath.Join(dir, "root"), filepath.Join(dir, "log")+"/", options)
	var args []string
	if action == "update" {
		args = []string{filepath.Join(dir, "update.json")}
	}
	out, err := exec.Command(bin, rt.Command(global, action, "id", filepath.Join(dir, "bundle"), args, "")...).CombinedOutput()
	usage := regexp.MustCompile(`Incorrect Usage|flag provided but not defined|unrecognized option|invalid option|requires? (exactly )?\d+ arguments?|too (many|few) arguments`)
	if m := usage.Find(out); m != nil || exitCode(err) == 64 { // crun's EX_USAGE
		t.Errorf("%s refused the command line itself (%v): %s", bin, err, out)
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return 0
}

func TestKnownRefusal(t *testing.T) {
	if KnownRefusal("crun", "Error: cgroups in hybrid mode not supported, drop all controllers from cgroupv2") == "" {
		t.Error("crun's hybrid refusal not recognised")
	}
	if KnownRefusal("runc", "cgroups in hybrid mode not supported") != "" {
		t.Error("refusal attributed to the wrong runtime")
	}
}

// A table case records its commands' output as input evidence, not as
// steps: a runtime refusing the host there is a skip too, not a failure of
// every input (crun on a hybrid host, when the table case runs alone).
func TestRefusalInTable(t *testing.T) {
	res := &report.Result{Inputs: []report.Input{{Input: "", Category: report.Refused, Evidence: []string{"create exited 1 in 0.03s: cgroups in hybrid mode not supported, drop all controllers from cgroupv2"}}}}
	r := &Runner{}
	if why := r.refusal(&caseState{rt: Runtime{Kind: "crun"}, res: res}); why == "" {
		t.Error("crun's hybrid refusal in a table input not recognised")
	}
}

// decide is where a violated expectation becomes a failure unless a
// divergence with a reason covers it.
func TestDecide(t *testing.T) {
	c := &casefile.Case{Divergences: []casefile.Divergence{
		{Runtime: "runsc-stock", Reason: "shares /pause", Steps: []string{"delete-first"}},
		{Runtime: "runc", Reason: "v2 only", Modes: []mode.Cgroup{mode.V2}},
		{Runtime: "crun", Reason: "on the hybrid host, 2026-12-06", Modes: []mode.Cgroup{mode.Hybrid}, Passes: true},
	}}
	for _, tc := range []struct {
		name     string
		runtime  string
		failures []string
		want     report.Outcome
		reason   string
	}{
		{"no failures", "runsc-patched", nil, report.Pass, ""},
		{"patched failure", "runsc-patched", []string{"delete-first"}, report.Fail, ""},
		{"covered step", "runsc-stock", []string{"delete-first"}, report.Divergence, "shares /pause"},
		{"uncovered step", "runsc-stock", []string{"delete-first", "cleanup"}, report.Fail, ""},
		{"divergence for another mode", "runc", []string{"x"}, report.Fail, ""},
		{"declared but not seen", "runsc-stock", nil, report.Pass, "declared divergence not observed: shares /pause"},
		{"strict: declared but not seen", "runsc-stock", nil, report.Fail, ""},
		{"strict: seen", "runsc-stock", []string{"delete-first"}, report.Divergence, "shares /pause"},
		// A measured pass (issue 47 item 3) is never stale and covers
		// nothing.
		{"strict: measured pass", "crun", nil, report.Pass, "measured passing: on the hybrid host, 2026-12-06"},
		{"strict: measured pass fails", "crun", []string{"x"}, report.Fail, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &report.Result{}
			for _, f := range tc.failures {
				res.Failures = append(res.Failures, report.Failure{Step: f, Message: "m"})
			}
			r := &Runner{host: &cgroupfs.Host{Mode: mode.Hybrid}, opt: Options{Strict: strings.HasPrefix(tc.name, "strict")}}
			r.decide(&caseState{c: c, rt: Runtime{Name: tc.runtime}, res: res})
			if res.Outcome != tc.want || res.Reason != tc.reason {
				t.Errorf("outcome %q reason %q, want %q %q", res.Outcome, res.Reason, tc.want, tc.reason)
			}
		})
	}
}

func TestGroupByPath(t *testing.T) {
	got := groupByPath([]string{"memory:/a", "pids:/a", "memory:/b", "pid 7 (sleep) sleep 1"}, 2)
	want := []string{"/a (all 2 hierarchies)", "/b (memory)", "pid 7 (sleep) sleep 1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestMatchRunsc(t *testing.T) {
	procs := map[int][]string{
		10: {"runsc-sandbox", "--root=/r", "--debug-log=/l/", "boot", "--bundle=/b", "id"},
		11: {"runsc-gofer", "--root", "/r", "gofer", "--bundle=/b", "id"},
		12: {"runsc-sandbox", "--root=/other", "boot", "id"},             // another --root
		13: {"runsc-sandbox", "--root=/r", "boot", "id-2"},               // another ID
		14: {"/usr/bin/runsc-sandbox", "--root=/r", "boot", "--root=/x"}, // ID missing
		15: {"sleep", "--root=/r", "id"},                                 // not runsc
		16: nil,                                                          // gone
		// The same root path and ID, another bundle: another mount
		// namespace's sandbox.
		17: {"runsc-sandbox", "--root=/r", "boot", "--bundle=/b2", "id"},
	}
	argv := func(pid int) []string { return procs[pid] }
	got := matchRunsc([]int{17, 10, 11, 12, 13, 14, 15, 16}, argv, "/r", "id", "/b")
	if diff := cmp.Diff(map[string]int{"sandbox": 10, "gofer": 11}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestNestedLeavesExemptOnlyTheCallersLeaf(t *testing.T) {
	r := &Runner{host: &cgroupfs.Host{Hierarchies: []cgroupfs.Hierarchy{{Key: "", V2: true}, {Key: "memory"}}}}
	nested := &casefile.Sandbox{Name: "a", Options: []string{"nested-cgroups"}}
	plain := &casefile.Sandbox{Name: "b"}
	cs := &caseState{caller: map[string]string{"": "/t/c", "memory": "/t/c"}}

	cs.order = []*instance{{sb: plain}}
	if got := r.nestedLeaves(cs); len(got) != 0 {
		t.Errorf("without nested-cgroups: exempt %v, want nothing", got)
	}
	cs.order = []*instance{{sb: plain}, {sb: nested}}
	want := map[string]bool{"unified:/t/c/supervisor": true, "memory:/t/c/supervisor": true}
	if diff := cmp.Diff(want, r.nestedLeaves(cs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if r.nestedLeaves(cs)["unified:/t/c/supervisor/x"] {
		t.Error("a cgroup beneath the leaf is exempt")
	}
}

func TestCaseLimitScalesOnlyTheCasesOwnBound(t *testing.T) {
	r := &Runner{opt: Options{CaseTimeout: 5 * time.Minute, TimeScale: 10}}
	long := &casefile.Case{Timeout: casefile.Duration{Duration: 8 * time.Minute}}
	if got := r.caseLimit(long); got != 80*time.Minute {
		t.Errorf("case timeout 8m at -time-scale 10: limit %s, want 80m", got)
	}
	if got := r.caseLimit(&casefile.Case{}); got != 5*time.Minute {
		t.Errorf("no case timeout: limit %s, want -timeout's 5m", got)
	}
}

func TestSelected(t *testing.T) {
	run, skip := regexp.MustCompile(`^(limits|parallel-32) `), regexp.MustCompile(`parallel-32`)
	for _, tc := range []struct {
		filter, skip *regexp.Regexp
		name         string
		want         bool
	}{
		{nil, nil, "limits [host]", true},
		{run, nil, "limits [host]", true},
		{run, nil, "delete [host]", false},
		{nil, skip, "nested-parallel-32 [container]", false},
		{nil, skip, "limits [host]", true},
		{run, skip, "parallel-32 [host]", false}, // skip wins
	} {
		if got := selected(tc.filter, tc.skip, tc.name); got != tc.want {
			t.Errorf("selected(%v, %v, %q) = %v, want %v", tc.filter, tc.skip, tc.name, got, tc.want)
		}
	}
}

// TestKillDelayLearns checks that a random kill window shrinks to the
// longest run of the command that ended before its kill, and never below
// min; a fixed delay and a landed kill teach nothing.
func TestKillDelayLearns(t *testing.T) {
	r := &Runner{opt: Options{TimeScale: 10}}
	st := &casefile.Step{ID: "create-killed", Do: "create", Sandbox: "a",
		Kill: &casefile.Kill{Min: casefile.Duration{Duration: 10 * time.Millisecond}, Max: casefile.Duration{Duration: 700 * time.Millisecond}}}
	cs := &caseState{}
	draw := func() (lo, hi time.Duration) {
		lo, hi = time.Hour, 0
		for i := 0; i < 2000; i++ {
			d := r.killDelay(cs, st)
			lo, hi = min(lo, d), max(hi, d)
		}
		return lo, hi
	}
	if lo, hi := draw(); lo < 100*time.Millisecond || hi >= 7*time.Second || hi < 6*time.Second {
		t.Errorf("before any run: delays in [%s, %s], want the scaled [100ms, 7s)", lo, hi)
	}
	cs.learnKill(st, cmdResult{dur: 5 * time.Second, killed: true})
	cs.learnKill(st, cmdResult{dur: 900 * time.Millisecond})
	cs.learnKill(st, cmdResult{dur: 400 * time.Millisecond})
	if lo, hi := draw(); lo < 100*time.Millisecond || hi >= 900*time.Millisecond {
		t.Errorf("after runs of 900ms and 400ms that ended first: delays in [%s, %s], want [100ms, 900ms)", lo, hi)
	}
	cs.learnKill(st, cmdResult{dur: 50 * time.Millisecond})
	if lo, _ := draw(); lo < 100*time.Millisecond {
		t.Errorf("a run shorter than min lowered the window below min: %s", lo)
	}
	fixed := &casefile.Step{ID: "k", Do: "start", Kill: &casefile.Kill{After: casefile.Duration{Duration: 300 * time.Millisecond}}}
	cs.learnKill(fixed, cmdResult{dur: 10 * time.Millisecond})
	if d := r.killDelay(cs, fixed); d != 3*time.Second {
		t.Errorf("fixed kill: %s, want the scaled 3s", d)
	}
}

// caller-nested stands for a caller that does on cgroup v2 what only v2's
// "no internal processes" rule calls for; elsewhere it is a skip that says
// so.
func TestCallerNestedOnlyOnV2(t *testing.T) {
	c := &casefile.Case{Name: "x"}
	for _, m := range []mode.Cgroup{mode.V1, mode.Hybrid, mode.V2} {
		for _, cx := range []string{"caller-nested", "caller-nested-cgroupns"} {
			r := &Runner{host: &cgroupfs.Host{Mode: m}}
			why := r.skipReason(c, cx, Runtime{Name: "runc", Kind: "runc"})
			if (why == "") != (m == mode.V2) || m != mode.V2 && !strings.Contains(why, "cgroup v2") {
				t.Errorf("%s on a %s host: skip reason %q", cx, m, why)
			}
		}
	}
}

// TestKillAndWaitByStartTime: a child named with its start time is killed;
// the same PID named with another start time (the PID gone to another
// process since it was listed) is left alone; ours names only the
// harness's descendants.
func TestKillAndWaitByStartTime(t *testing.T) {
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	p, err := proc.Identify(child.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	stale := proc.Process{PID: p.PID, Start: p.Start + 1}
	if left := killAndWait([]proc.Process{stale}, 200*time.Millisecond); len(left) != 0 {
		t.Fatalf("a stale start time: left %v, want it not reported", left)
	}
	// A SIGKILL ends a sleeping child within milliseconds.
	if p.Wait(nil, time.Second) {
		t.Fatal("the child named with a stale start time was killed")
	}
	if got := ours(1); got != nil {
		t.Errorf("ours(1) = %v: init is no descendant of the test", got)
	}
	if left := killAndWait(ours(p.PID), 5*time.Second); len(left) != 0 {
		t.Fatalf("the child survived: %v", left)
	}
	child.Wait()
	if ws := child.ProcessState.Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGKILL {
		t.Errorf("the child ended %v, want SIGKILL", child.ProcessState)
	}
}

// TestStrayProcs: a setup process is left out of the strays only while its
// PID names the process setup recorded (PID and start time), never by PID
// alone; a holder's PID is left out.
func TestStrayProcs(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	me, err := proc.Identify(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{}
	for _, tc := range []struct {
		name string
		cs   *caseState
		want bool
	}{
		{"unknown", &caseState{}, true},
		{"recorded", &caseState{foreign: map[string]proc.Process{"p": me}}, false},
		{"same PID, other start", &caseState{foreign: map[string]proc.Process{"p": {PID: me.PID, Start: me.Start + 1}}}, true},
		{"holder", &caseState{holders: []int{me.PID}}, false},
	} {
		if got := slices.Contains(r.strayProcs(tc.cs), me); got != tc.want {
			t.Errorf("%s: stray = %v, want %v", tc.name, got, tc.want)
		}
	}
}
