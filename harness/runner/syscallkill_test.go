package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/harness/casefile"
	"golang.org/x/sys/unix"
)

// TestStraceArgv runs what straceArgv builds under the real strace: the
// injection lands on the calls it names, on the paths given (a pathless
// call on any), and the command runs as given.
func TestStraceArgv(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("no strace on this host")
	}
	if out, err := exec.Command(strace, "-f", "-qq", "-o", "/dev/null", "true").CombinedOutput(); err != nil {
		t.Skipf("strace cannot trace here: %v %s", err, out)
	}
	mkdir := "mkdir" // coreutils' call: mkdirat where the architecture has no mkdir
	if runtime.GOARCH != "amd64" {
		mkdir = "mkdirat"
	}
	run := func(t *testing.T, call, errno string, nth int, hold time.Duration, paths, argv []string) (out, record string, err error) {
		log := filepath.Join(t.TempDir(), "x.strace")
		c := straceArgv(strace, log, call, errno, nth, hold, paths, argv)
		b, err := exec.Command(c[0], c[1:]...).CombinedOutput()
		r, _ := os.ReadFile(log)
		return string(b), string(r), err
	}
	t.Run("an injected error on the paths only", func(t *testing.T) {
		dir := t.TempDir()
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		out, record, err := run(t, mkdir, "ENOSPC", 0, 0, []string{a}, []string{"mkdir", a, b})
		if err == nil || !strings.Contains(out, "No space left on device") {
			t.Errorf("mkdir %s %s: %v %s, want ENOSPC on the first", a, b, err, out)
		}
		if _, err := os.Stat(a); err == nil {
			t.Errorf("%s made despite the injected error", a)
		}
		if _, err := os.Stat(b); err != nil {
			t.Errorf("%s, not on the paths, was not made: %v", b, err)
		}
		if !strings.Contains(record, "(INJECTED)") {
			t.Errorf("the record says nothing injected:\n%s", record)
		}
	})
	t.Run("a path call held, then done", func(t *testing.T) {
		a := filepath.Join(t.TempDir(), "a")
		start := time.Now()
		out, _, err := run(t, mkdir, "", 0, 300*time.Millisecond, []string{a}, []string{"mkdir", a})
		if err != nil {
			t.Fatalf("mkdir under strace: %v %s", err, out)
		}
		if d := time.Since(start); d < 300*time.Millisecond {
			t.Errorf("mkdir returned after %v, want it held 300ms", d)
		}
		if _, err := os.Stat(a); err != nil {
			t.Errorf("held mkdir did not make %s: %v", a, err)
		}
	})
	t.Run("clone has no path: killed at the nth, paths or not", func(t *testing.T) {
		out, _, err := run(t, "clone", "", 2, 0, []string{"/nonexistent"}, []string{"sh", "-c", "(true); echo one; (true); echo two"})
		if strings.TrimSpace(out) != "one" {
			t.Errorf("output %q, want the shell killed at its second clone, after one", out)
		}
		if err == nil || err.Error() != "signal: killed" {
			t.Errorf("strace ended %v, want killed by SIGKILL as the shell was", err)
		}
	})
}

// TestCallStarts counts the calls started over all threads, a call still
// held (its line not ended) included, resumptions, signals and exits not.
func TestCallStarts(t *testing.T) {
	for _, tc := range []struct {
		name, record string
		want         int
	}{
		{"none", "", 0},
		{"one held", "10 fsync(7", 1},
		{"two threads, one resumed", "10 fsync(7 <unfinished ...>\n11 fsync(8) = 0\n10 <... fsync resumed>) = 0\n11 fsync(9", 3},
		{"signals and exits", "10 --- SIGURG {si_signo=SIGURG} ---\n10 fsync(7) = ?\n10 +++ killed by SIGKILL +++\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := callStarts(tc.record); got != tc.want {
				t.Errorf("callStarts = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestCreatedLevels(t *testing.T) {
	for _, tc := range []struct {
		name, path, base, root string
		want                   []string
	}{
		{"relative, two levels", "sweep-t/id", "/cg/001/host", "/cg/001", []string{"/cg/001/host/sweep-t", "/cg/001/host/sweep-t/id"}},
		{"relative, clamped", "../../x-t/id", "/cg/001/host", "/cg/001", []string{"/cg/001/host/x-t", "/cg/001/host/x-t/id"}},
		{"absolute below the case root", "/cg/001/abs/id", "/cg/001/host", "/cg/001", []string{"/cg/001/abs", "/cg/001/abs/id"}},
		{"absolute elsewhere: every level", "/x-t/id", "/cg/001/host", "/cg/001", []string{"/x-t", "/x-t/id"}},
		{"none", "", "/cg/001/host", "/cg/001", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, createdLevels(tc.path, tc.base, tc.root)); diff != "" {
				t.Errorf("levels (-want +got):\n%s", diff)
			}
		})
	}
}

// sweepPaths: the levels of the bundle's cgroupsPath where a relative path
// lands in every hierarchy (beneath C on hybrid, beside it on v2), through
// every symlink to a mount too, then the runtime's state files.
func TestSweepPaths(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode mode.Cgroup
		kind string
		want []string
	}{
		{"hybrid runsc", mode.Hybrid, "runsc", []string{
			"M/cpu,cpuacct/cg/001/host/sweep-t", "M/cpu,cpuacct/cg/001/host/sweep-t/id",
			"M/cpu/cg/001/host/sweep-t", "M/cpu/cg/001/host/sweep-t/id",
			"M/memory/cg/001/host/sweep-t", "M/memory/cg/001/host/sweep-t/id",
			"R/id_sandbox:id.state", "R/id_sandbox:id.state.tmp", "R/id_sandbox:id.lock"}},
		{"v2 runc", mode.V2, "runc", []string{
			"M/cpu,cpuacct/cg/001/sweep-t", "M/cpu,cpuacct/cg/001/sweep-t/id",
			"M/cpu/cg/001/sweep-t", "M/cpu/cg/001/sweep-t/id",
			"M/memory/cg/001/sweep-t", "M/memory/cg/001/sweep-t/id",
			"R/id", "R/id/state.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mnt, root, bundle := t.TempDir(), t.TempDir(), t.TempDir()
			for _, d := range []string{"cpu,cpuacct", "memory"} {
				if err := os.Mkdir(filepath.Join(mnt, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink("cpu,cpuacct", filepath.Join(mnt, "cpu")); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(bundle, "config.json"), []byte(`{"linux": {"cgroupsPath": "sweep-t/id"}}`), 0o644); err != nil {
				t.Fatal(err)
			}
			r := &Runner{host: &cgroupfs.Host{Mode: tc.mode, Hierarchies: []cgroupfs.Hierarchy{
				{Key: "cpu,cpuacct", Mount: filepath.Join(mnt, "cpu,cpuacct")},
				{Key: "memory", Mount: filepath.Join(mnt, "memory")},
			}}}
			cs := &caseState{cx: "host", rt: Runtime{Kind: tc.kind}, root: "/cg/001", caller: map[string]string{"cpu,cpuacct": "/cg/001/host", "memory": "/cg/001/host"}}
			got, err := r.sweepPaths(cs, &instance{id: "id", root: root, bundle: bundle})
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				got[i] = strings.NewReplacer(mnt, "M", root, "R").Replace(got[i])
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("not in a cgroup namespace", func(t *testing.T) {
		r := &Runner{host: &cgroupfs.Host{Mode: mode.V2}}
		cs := &caseState{cx: "kubepods-delegated", cgroupns: true}
		if _, err := r.sweepPaths(cs, &instance{}); err == nil || !strings.Contains(err.Error(), "runs only in the host, container contexts") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestKilledCall(t *testing.T) {
	for _, tc := range []struct{ name, record, want string }{
		{"one thread", `10 mkdirat(AT_FDCWD, "/sys/fs/cgroup/pids/c/s", 0755) = 0
10 mkdirat(AT_FDCWD, "/sys/fs/cgroup/pids/c/s/id", 0755) = ?
10 +++ killed by SIGKILL +++
`, `mkdirat(AT_FDCWD, "/sys/fs/cgroup/pids/c/s/id", 0755) = ?`},
		{"resumed after another thread's line", `10 renameat(AT_FDCWD, "/r/a.state.tmp", AT_FDCWD, "/r/a.state" <unfinished ...>
11 openat(AT_FDCWD, "/r/a.lock", O_RDWR) = 7
10 <... renameat resumed>)           = ?
11 +++ killed by SIGKILL +++
10 +++ killed by SIGKILL +++
`, `renameat(AT_FDCWD, "/r/a.state.tmp", AT_FDCWD, "/r/a.state") = ?`},
		{"a signal line between", `10 openat(AT_FDCWD, "/r/a.lock", O_RDWR|O_CREAT, 0640) = ?
12 --- SIGURG {si_signo=SIGURG, si_code=SI_TKILL, si_pid=2596, si_uid=0} ---
12 +++ killed by SIGKILL +++
10 +++ killed by SIGKILL +++
`, `openat(AT_FDCWD, "/r/a.lock", O_RDWR|O_CREAT, 0640) = ?`},
		{"never resumed", `10 clone(child_stack=0x1, flags=CLONE_VM <unfinished ...>
10 +++ killed by SIGKILL +++
`, `clone(child_stack=0x1, flags=CLONE_VM`},
		{"not killed", `10 fsync(5) = 0
`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := killedCall(tc.record); got != tc.want {
				t.Errorf("killedCall = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOrdinal(t *testing.T) {
	var got []string
	for _, n := range []int{1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111} {
		got = append(got, ordinal(n))
	}
	want := []string{"1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ordinals (-want +got):\n%s", diff)
	}
}

// A create that strace killed counts as killed; one that ran to its end,
// exit 0, as not killed and not a failure; one that failed on its own is
// a failure of the step.
func TestSyscallKilledAccounting(t *testing.T) {
	record := filepath.Join(t.TempDir(), "x.strace")
	if err := os.WriteFile(record, []byte("10 write(5, \"{\", 1) = ?\n10 +++ killed by SIGKILL +++\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := &casefile.Step{ID: "create-killed", Do: "create", Kill: &casefile.Kill{Syscall: "write", Nth: &casefile.Nth{Trial: true}}}
	for _, tc := range []struct {
		name              string
		res               cmdResult
		killed, notKilled bool
		sweepKilled, note string
		failures          int
	}{
		{"killed", cmdResult{exit: -1, signal: unix.SIGKILL}, true, false, "create-killed", `SIGKILLed at its 3rd write: write(5, "{", 1) = ?`, 0},
		{"ran to its end", cmdResult{exit: 0}, false, true, "", "not killed: the create ran to its end (exit 0) without a 3rd write on its paths", 0},
		{"failed on its own", cmdResult{exit: 1}, false, false, "", "a: the create exited 1 before its 3rd write, not killed", 1},
		{"timed out", cmdResult{exit: -1, signal: unix.SIGKILL, err: errTest("timed out after 1m30s")}, false, false, "", "a: the create timed out after 1m30s before its 3rd write", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &report.Result{}
			cs := &caseState{res: res, trial: 2, trials: 8}
			note := (&Runner{}).syscallKilled(cs, st, &instance{label: "a"}, tc.res, record, "")
			if !strings.HasPrefix(note, tc.note) {
				t.Errorf("note = %q, want it to start with %q", note, tc.note)
			}
			if cs.killed != tc.killed || cs.notKilled != tc.notKilled || cs.sweepKilled != tc.sweepKilled || len(res.Failures) != tc.failures {
				t.Errorf("killed %v, notKilled %v, sweepKilled %q, failures %+v; want %v, %v, %q, %d failures", cs.killed, cs.notKilled, cs.sweepKilled, res.Failures, tc.killed, tc.notKilled, tc.sweepKilled, tc.failures)
			}
		})
	}
}

// A held kill (kill: {hold, started}) is the harness's, never a sweep's:
// its note names the process it killed and the held call it was in.
func TestSyscallKilledHeld(t *testing.T) {
	record := filepath.Join(t.TempDir(), "x.strace")
	if err := os.WriteFile(record, []byte("10 fsync(7) = ?\n10 +++ killed by SIGKILL +++\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := &casefile.Step{ID: "create-killed", Do: "create", Kill: &casefile.Kill{Syscall: "fsync", Hold: casefile.Duration{Duration: 3 * time.Second}, Started: "sandbox"}}
	r := &Runner{}
	r.opt.TimeScale = 2
	for _, tc := range []struct {
		name, held, note string
		res              cmdResult
		killed           bool
	}{
		{"killed", "PID 42", "SIGKILLed (PID 42) in a fsync held 6s after its sandbox started: fsync(7) = ?", cmdResult{exit: -1, signal: unix.SIGKILL}, true},
		{"ran to its end", "", "not killed: the create ran to its end (exit 0) without a fsync held 6s after its sandbox started on its paths", cmdResult{exit: 0}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := &caseState{res: &report.Result{}, trial: 0, trials: 1}
			if note := r.syscallKilled(cs, st, &instance{label: "a"}, tc.res, record, tc.held); note != tc.note {
				t.Errorf("note = %q, want %q", note, tc.note)
			}
			if cs.killed != tc.killed || cs.sweepKilled != "" {
				t.Errorf("killed %v, sweepKilled %q; want %v and no sweep", cs.killed, cs.sweepKilled, tc.killed)
			}
		})
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }

// A sweep's kill whose record shows more calls started than its nth says
// so: the kill came after the nth call (or another thread's began).
func TestSyscallKilledLate(t *testing.T) {
	record := filepath.Join(t.TempDir(), "x.strace")
	rec := "10 write(5, \"a\", 1) = 1\n10 write(5, \"b\", 1) = 1\n10 write(5, \"c\", 1) = 1\n10 write(5, \"d\", 1) = ?\n10 +++ killed by SIGKILL +++\n"
	if err := os.WriteFile(record, []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	st := &casefile.Step{ID: "create-killed", Do: "create", Kill: &casefile.Kill{Syscall: "write", Nth: &casefile.Nth{Trial: true}}}
	for trial, want := range map[int]string{
		2: `SIGKILLed (PID 7) at its 3rd write (4 calls started by then): write(5, "d", 1) = ?`,
		3: `SIGKILLed (PID 7) at its 4th write: write(5, "d", 1) = ?`,
	} {
		cs := &caseState{res: &report.Result{}, trial: trial, trials: 8}
		if note := (&Runner{}).syscallKilled(cs, st, &instance{label: "a"}, cmdResult{exit: -1, signal: unix.SIGKILL}, record, "PID 7"); note != want {
			t.Errorf("trial %d: note %q, want %q", trial, note, want)
		}
	}
}

// TestPidOfOnlyDescendants: the process a kill step looks for by its
// command line is one the runner started; another process with the same
// command line, not below the runner (PID 1 here), is never chosen.
func TestPidOfOnlyDescendants(t *testing.T) {
	if init := cmdline(1); len(init) == 0 {
		t.Errorf("cannot read PID 1's command line")
	} else if got := pidOf(init); got != 0 {
		t.Errorf("pidOf(%q) = %d, want none: PID 1 is not the runner's", init, got)
	}
	child := exec.Command("sleep", "61.5")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	if got := pidOf(child.Args); got != child.Process.Pid {
		t.Errorf("pidOf = %d, want the runner's child %d", got, child.Process.Pid)
	}
}
