// Package runner runs conformance cases against OCI runtimes on this host
// and records what they did.
//
// Every case runs once per (context, runtime) in its own cgroup below the
// harness's test root, which exists in every mounted hierarchy. The
// runtime is always started through the exec-in-cgroup re-exec, so its
// "own cgroup" is the caller context the case asks for, never the
// harness's. After the case, everything the runtime left is recorded as a
// leak, then killed (by PID, only processes the harness started) and
// removed (deepest first).
package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/ocispec"
	"github.com/runsc-cgroups/cgconform/base/proc"
	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/clients/build"
	"github.com/runsc-cgroups/cgconform/harness/casefile"
	"golang.org/x/sys/unix"
)

// Options configure a run.
type Options struct {
	Cases    []*casefile.Case
	Runtimes []Runtime
	// RuntimeErrors maps a runtime name to why it cannot run (missing
	// binary): its results are skips with that reason.
	RuntimeErrors map[string]string
	// Filter selects "case [context]" names to run (nil: all), and Skip
	// leaves out those it matches (nil: none).
	Filter, Skip *regexp.Regexp
	// Busybox is a static busybox binary for the rootfs.
	Busybox string
	// MatrixHost is the matrix host this machine is (-mode): results carry
	// it, and the detected layout must be its layout.
	MatrixHost mode.Host
	// Throwaway says the host may be changed at will (a matrix VM): cases
	// and inputs that require throwaway run only then.
	Throwaway bool
	// Strict turns a declared divergence that did not happen into a
	// failure: the case must be updated.
	Strict bool
	// Trials, when > 0, overrides every case's trials (make killstorm).
	Trials int
	// CaseTimeout bounds each case x context x runtime.
	CaseTimeout time.Duration
	// Progress receives one line per result.
	Progress io.Writer
	// Self is the harness binary (for the re-exec).
	Self string
	// EnableRootControllers enables missing v2 controllers at the
	// hierarchy root (changes the host; for throwaway VMs).
	EnableRootControllers bool
	// Host, when set, replaces detection (tests).
	Host *cgroupfs.Host
	// Checkpoint, when set, gets the report after every result, so a run
	// cut short (a VM's time limit) still leaves what it measured.
	Checkpoint func(*report.Report)
	// TimeScale multiplies every "within" bound (slow emulation, e.g. QEMU
	// without KVM). 0 means 1.
	TimeScale float64
	// Clients are the real clients of the client contexts (containerd,
	// ctr, crictl, the shims); nil skips those contexts with ClientsError.
	Clients      *build.Binaries
	ClientsError string
	// ClientsVersion names them in the report's notes.
	ClientsVersion string
	// ClientsDebug runs runsc under the shim with --debug (full debug logs
	// in each case's logs/runsc folder).
	ClientsDebug bool
}

// Runner holds one run's state.
type Runner struct {
	opt     Options
	host    *cgroupfs.Host
	tree    *cgroupfs.Tree
	token   string
	work    string
	rootfs  string
	reaper  *reaper
	refused map[string]string
	notes   []string
	notesMu sync.Mutex
}

// Run executes every selected case and returns the report. The test root
// and work folder are removed before it returns, whatever happened.
func Run(ctx context.Context, opt Options) (rep *report.Report, err error) {
	if opt.CaseTimeout == 0 {
		opt.CaseTimeout = 5 * time.Minute
	}
	if opt.TimeScale <= 0 {
		opt.TimeScale = 1
	}
	if opt.Progress == nil {
		opt.Progress = io.Discard
	}
	host := opt.Host
	if host == nil {
		if host, err = cgroupfs.Detect(); err != nil {
			return nil, fmt.Errorf("reading the host's cgroup layout: %w", err)
		}
	}
	if opt.MatrixHost != "" && opt.MatrixHost.Cgroup() != host.Mode {
		return nil, fmt.Errorf("-mode %s is a %s host, but this one is %s: the matrix booted the wrong image, or -mode names another host", opt.MatrixHost, opt.MatrixHost.Cgroup(), host.Mode)
	}
	r := &Runner{opt: opt, host: host, refused: map[string]string{}}
	rep = &report.Report{Schema: report.Schema, Started: time.Now().UTC(), Host: r.hostInfo()}
	for _, rt := range opt.Runtimes {
		info := report.Runtime{Name: rt.Name, Path: rt.Path, Kind: rt.Kind, Skip: opt.RuntimeErrors[rt.Name]}
		if info.Skip == "" {
			info.Version = rt.Version(ctx)
		}
		rep.Runtimes = append(rep.Runtimes, info)
	}
	canRun := os.Geteuid() == 0
	if canRun {
		if err := r.setup(); err != nil {
			r.teardown()
			return nil, err
		}
		defer func() {
			if left := r.teardown(); len(left) > 0 {
				err = errors.Join(err, fmt.Errorf("could not remove everything the run created (remove by hand): %s", strings.Join(left, "; ")))
			}
		}()
	}
	rep.RunID = r.token
	idx := 0
	for _, c := range opt.Cases {
		for _, cx := range c.CaseContexts() {
			if !selected(opt.Filter, opt.Skip, c.Name+" ["+cx+"]") {
				continue
			}
			for _, rt := range opt.Runtimes {
				if rt.Cases != nil && !rt.Cases.MatchString(c.Name+" ["+cx+"]") {
					continue
				}
				idx++
				if ctx.Err() != nil {
					res := r.baseResult(c, cx, rt)
					res.Outcome, res.Reason = report.Skip, "interrupted: "+ctx.Err().Error()
					rep.Results = append(rep.Results, res)
					continue
				}
				start := r.baseResult(c, cx, rt)
				fmt.Fprintln(opt.Progress, report.StartLine(&start))
				var res report.Result
				if !canRun {
					res = r.baseResult(c, cx, rt)
					res.Outcome, res.Reason = report.Skip, "needs root: the harness creates cgroups"
				} else {
					res = r.runOne(ctx, c, cx, rt, idx)
				}
				fmt.Fprintln(opt.Progress, report.DoneLine(&res, oneLine(res)))
				rep.Results = append(rep.Results, res)
				if opt.Checkpoint != nil {
					rep.Finished = time.Now().UTC()
					rep.Host.Notes = r.notesCopy()
					rep.Summarize()
					opt.Checkpoint(rep)
				}
			}
		}
	}
	rep.Finished = time.Now().UTC()
	rep.Host.Notes = r.notesCopy()
	rep.Summarize()
	return rep, nil
}

func oneLine(res report.Result) string {
	switch res.Outcome {
	case report.Skip, report.Divergence:
		return trunc(res.Reason, 100)
	case report.Fail:
		for _, f := range res.Failures {
			if !f.Expected {
				return trunc(f.Step+": "+f.Message, 100)
			}
		}
	}
	return ""
}

func trunc(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func (r *Runner) note(s string) {
	r.notesMu.Lock()
	defer r.notesMu.Unlock()
	if !slices.Contains(r.notes, s) {
		r.notes = append(r.notes, s)
	}
}

func (r *Runner) notesCopy() []string {
	r.notesMu.Lock()
	defer r.notesMu.Unlock()
	return append([]string(nil), r.notes...)
}

func (r *Runner) hostInfo() report.Host {
	h := report.Host{CgroupMode: r.host.Mode, MatrixHost: r.opt.MatrixHost, UID: os.Geteuid(), SystemdPID1: r.host.SystemdPID1, CgroupNS: r.host.CgroupNS}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	h.Hostname, _ = os.Hostname()
	for _, x := range r.host.Hierarchies {
		h.Hierarchies = append(h.Hierarchies, report.Hierarchy{Key: x.Key, Mount: x.Mount, V2: x.V2})
	}
	return h
}

func (r *Runner) setup() error {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	r.token = "cgc" + hex.EncodeToString(b)
	r.tree = &cgroupfs.Tree{Host: r.host, Root: "/cgconform-" + r.token}
	work, err := os.MkdirTemp("", "cgconform-"+r.token+"-")
	if err != nil {
		return err
	}
	r.work = work
	if r.opt.EnableRootControllers {
		r.host.EnableRootControllers()
	}
	if err := r.tree.Mkdir(r.tree.Root); err != nil {
		return fmt.Errorf("creating the test root cgroup %s: %w", r.tree.Root, err)
	}
	r.rootfs = filepath.Join(work, "rootfs")
	if err := ocispec.BuildRootfs(r.rootfs, r.opt.Busybox); err != nil {
		return err
	}
	// Runtimes must reach the rootfs and state folders; MkdirTemp is 0700.
	if err := os.Chmod(work, 0o755); err != nil {
		return err
	}
	if r.opt.TimeScale != 1 {
		r.note(fmt.Sprintf("time bounds (expect.within, case and command limits) scaled by %g (-time-scale)", r.opt.TimeScale))
	}
	rp, err := newReaper()
	if err != nil {
		return fmt.Errorf("becoming a child subreaper (needed to find detached sandboxes): %w", err)
	}
	r.reaper = rp
	if r.host.Mode == mode.V2 {
		for _, x := range r.host.Hierarchies {
			if !x.V2 {
				continue
			}
			ctrl, _ := os.ReadFile(filepath.Join(x.Mount, "cgroup.controllers"))
			on, _ := os.ReadFile(filepath.Join(x.Mount, "cgroup.subtree_control"))
			if missing := minus(strings.Fields(string(ctrl)), strings.Fields(string(on))); len(missing) > 0 {
				r.note(fmt.Sprintf("root cgroup.subtree_control lacks %s: limits on those fail below the test root (pass -enable-root-controllers in a throwaway VM)", strings.Join(missing, " ")))
			}
		}
	}
	return nil
}

func (r *Runner) baseResult(c *casefile.Case, cx string, rt Runtime) report.Result {
	return report.Result{Case: c.Name, Context: cx, Runtime: rt.Name, CgroupMode: r.host.Mode, MatrixHost: r.opt.MatrixHost, File: c.File, Source: c.Source, Purpose: c.Purpose}
}

// skipReason says why a case cannot run here, or "".
func (r *Runner) skipReason(c *casefile.Case, cx string, rt Runtime) string {
	if why := r.opt.RuntimeErrors[rt.Name]; why != "" {
		return why
	}
	if why := r.refused[rt.Name]; why != "" {
		return why
	}
	if why := r.unmet(c.Requires); why != "" {
		return why
	}
	if d := r.newDriver(cx, nil); d != nil {
		if why := d.skip(rt); why != "" {
			return why
		}
	}
	switch cx {
	case "kubepods-delegated":
		if r.host.Mode != mode.V2 {
			return "kubepods-delegated mounts cgroup2 at the root of a private cgroup namespace (the seed's fix): needs a cgroup v2 host"
		}
	case "caller-nested", "caller-nested-cgroupns":
		if r.host.Mode != mode.V2 {
			return cx + " is the caller's own move into a leaf, which only cgroup v2's \"no internal processes\" rule calls for (on v1 a relative path is beneath the caller already): needs a cgroup v2 host"
		}
	case "systemd-unit", "systemd-unit-undelegated":
		if !r.host.SystemdPID1 {
			return "systemd-unit needs systemd as PID 1 to start a Delegate=yes unit (runs in the systemd VMs)"
		}
	}
	return ""
}

// nsdelegate reports whether the cgroup2 hierarchy treats cgroup namespaces
// as delegation boundaries (a flag of the hierarchy, shown in the super
// options of each of its mounts).
func nsdelegate() bool {
	ms, _ := mountinfo.GetMounts(mountinfo.FSTypeFilter("cgroup2"))
	return slices.ContainsFunc(ms, func(m *mountinfo.Info) bool { return slices.Contains(strings.Split(m.VFSOptions, ","), "nsdelegate") })
}

// unmet says which requirement this host does not meet, or "". Every
// requirement must hold (cases/README.md, "requires").
func (r *Runner) unmet(reqs []string) string {
	for _, q := range reqs {
		switch q {
		case string(mode.V1), string(mode.Hybrid), string(mode.V2):
			if string(r.host.Mode) != q {
				return fmt.Sprintf("needs a %s host; this one is %s", q, r.host.Mode)
			}
		case "v1-controllers":
			if !r.host.Mode.HasV1Controllers() {
				return fmt.Sprintf("needs v1 controllers (a cgroup-v1 or hybrid host); this one is %s", r.host.Mode)
			}
		case "root":
			if os.Geteuid() != 0 {
				return "needs root"
			}
		case "systemd":
			if !r.host.SystemdPID1 {
				return "needs systemd as PID 1 (runs in the systemd VMs)"
			}
		case "no-systemd":
			if r.host.SystemdPID1 {
				return "needs a host without systemd"
			}
		case "cgroupns":
			if _, err := os.Stat("/proc/self/ns/cgroup"); err != nil {
				return "needs cgroup namespaces"
			}
		case "no-nsdelegate":
			if nsdelegate() {
				return "cgroup2 is mounted with nsdelegate (systemd does): the kernel refuses a process outside a cgroup namespace to move any process into it there (ENOENT), for every runtime that uses cgroup2"
			}
		case "throwaway":
			if !r.opt.Throwaway {
				return "needs a throwaway host (-throwaway, set by the matrix in its VMs): it may reach the real root of a hierarchy"
			}
		case "clients":
			if why := r.needsClients(); why != "" {
				return why
			}
		}
	}
	return ""
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// cmdResult is one finished command.
type cmdResult struct {
	argv   []string
	exit   int
	output string
	dur    time.Duration
	err    error
	// killed: the harness SIGKILLed the command (runKilled).
	killed bool
	// signal is the signal the command died of, 0 if it exited (strace
	// dies of the SIGKILL it injected into the runtime).
	signal unix.Signal
}

// runCommand runs argv through the exec-in-cgroup re-exec, in the caller
// context's cgroups. stdio are files of its own (runsc sets O_NONBLOCK on
// its stdio and a detached sandbox inherits them).
func (r *Runner) runCommand(ctx context.Context, cs *caseState, in *instance, argv []string, timeout time.Duration) cmdResult {
	return r.runKilled(ctx, cs, in, argv, timeout, 0)
}

// runKilled is runCommand that, with killAfter > 0, SIGKILLs the runtime
// command itself (the helper execs it, so its PID is the runtime's) that
// long after it started, if it is still running: a runtime dying at any
// moment of create or start.
func (r *Runner) runKilled(ctx context.Context, cs *caseState, in *instance, argv []string, timeout, killAfter time.Duration) cmdResult {
	n := cs.nextLog()
	logPath := filepath.Join(cs.logDir, fmt.Sprintf("%03d.log", n))
	res := cmdResult{argv: argv, exit: -1}
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		res.err = err
		return res
	}
	defer out.Close()
	if d, ok := cs.client.(*execDriver); ok {
		return d.run(ctx, argv, timeout, logPath)
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		res.err = err
		return res
	}
	defer null.Close()
	helper := []string{HelperCommand}
	for _, d := range cs.joinDirs {
		helper = append(helper, "--join", d)
	}
	if cs.cgroupns {
		helper = append(helper, "--cgroupns-of", fmt.Sprint(cs.nsAnchor))
	}
	if cs.c.CallerMount == "read-only" {
		helper = append(helper, "--read-only")
	}
	if in != nil && in.mountns != 0 {
		helper = append(helper, "--mountns-of", fmt.Sprint(in.mountns))
	}
	helper = append(helper, "--")
	helper = append(helper, argv...)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, r.opt.Self, helper...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, out, out
	cmd.Dir = cs.dir
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	release, err := r.reaper.start(cmd)
	if err != nil {
		res.err = err
		return res
	}
	var killer *time.Timer
	killed := make(chan bool, 1)
	if killAfter > 0 {
		// os.Process signals through a pidfd: once Wait has reaped the
		// command, the kill fails instead of hitting a reused PID.
		killer = time.AfterFunc(killAfter, func() { killed <- cmd.Process.Signal(unix.SIGKILL) == nil })
	}
	werr := cmd.Wait()
	if killer != nil && !killer.Stop() {
		res.killed = <-killed // it fired: wait for its verdict
	}
	res.dur = time.Since(start)
	release()
	// Reap what the command left as zombies (a sandbox its delete killed)
	// before the next step, as a shim reaps on SIGCHLD: runsc counts a
	// zombie sandbox as alive (kill(pid, 0)), so the next delete would try
	// its gone control socket and fail.
	r.reaper.reap()
	res.exit = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.signal = ws.Signal()
	}
	if werr != nil {
		var ee *exec.ExitError
		if !errors.As(werr, &ee) {
			res.err = werr
		}
		if cctx.Err() != nil {
			res.err = fmt.Errorf("timed out after %v", timeout)
		}
	}
	b, _ := os.ReadFile(logPath)
	res.output = string(b)
	return res
}

// instance is one container of a sandbox entry.
type instance struct {
	sb      *casefile.Sandbox
	label   string
	id      string
	root    string
	bundle  string
	logs    string // runsc's --debug-log folder
	global  []string
	notes   []string
	created bool
	deleted bool
	// respec: the bundle holds a create step's own spec, so the next
	// create writes the sandbox's again.
	respec bool
	// before is the tree before the instance's create (for owned).
	before map[string]bool
	// pids by role as last observed; kept after the processes die so
	// later checks can tell they are gone.
	pids  map[string]int
	procs []report.Process
	// mountns is the PID holding the sandbox's private mount namespace
	// (sandbox mountns), 0 for the harness's own.
	mountns int
	// from is where the runtime was started from, when not the case's
	// origin (Podman: each container's conmon cgroup).
	from map[string]string
	// stopped is the create a kill: {signal: STOP} left stopped in the
	// background, until a continue step.
	stopped *stoppedCreate
}

// hierarchyPath is a cgroup in the hierarchy of that key.
type hierarchyPath struct{ key, path string }

// caseState is one case x context x runtime in progress.
type caseState struct {
	c      *casefile.Case
	cx     string
	rt     Runtime
	res    *report.Result
	root   string            // the case's cgroup below the test root
	caller map[string]string // hierarchy key -> caller cgroup
	// from is, per hierarchy key, the cgroup the runtime commands run in
	// when it is not C (kubepods-nsenter's shell); nil otherwise.
	from     map[string]string
	joinDirs []string
	cgroupns bool
	// nsAnchor is the caller's own process whose cgroup namespace (rooted
	// at the caller's cgroup) every runtime command enters.
	nsAnchor int
	holders  []int
	// callerHolders are the holders started in the caller's own cgroup.
	callerHolders []int
	extra         []hierarchyPath // cgroups outside the case root to watch (systemd unit)
	// foreign are the setup's processes by name: started by the harness,
	// not by a runtime, so never a leak.
	foreign map[string]proc.Process
	// mountns holds a process per named mount namespace (sandbox mountns).
	mountns map[string]int
	// trial is the current trial (0-based) of trials trials; a failure's
	// message names it when there are several.
	trial, trials int
	// suffix makes this trial's (or input's) container IDs fresh.
	suffix string
	// maxDelete is the longest delete command of the current trial, and
	// killed whether a kill step of it SIGKILLed its command.
	maxDelete time.Duration
	killed    bool
	// notKilled: a syscall kill's create ran to its end, exit 0 (its nth
	// call never came); sweepKilled names a sweep's step (nth: trial)
	// whose create was killed in this trial.
	notKilled   bool
	sweepKilled string
	// killRuns is, per kill step, the longest run of its command that
	// ended before the kill, over the trials so far (see killDelay).
	killRuns map[string]time.Duration
	// callerControl is C's cgroup.subtree_control (v2) at the baseline: a
	// runtime that made a cgroup below C enabled controllers there, and C
	// could hold no process after it (no internal processes); the scrub
	// between trials and inputs restores it.
	callerControl map[string][]string
	unit          string
	// client is the client context (containerd) of the case, nil for the
	// CLI contexts; names are IDs a client assigned (CRI sandbox and
	// container IDs), watched like the run token wherever they appear.
	client driver
	names  []string
	// mountBase are the mounts below the case's folder at the baseline
	// (a client context's pod): only what appears later can be a leak.
	mountBase map[string]bool
	dir       string
	logDir    string
	insts     map[string][]*instance
	order     []*instance
	baseline  map[string]bool
	// wholeInput: the table input under way requires throwaway (wholeTree).
	wholeInput bool
	mu         sync.Mutex
	logN       int
	vars       map[string]string
}

// vals are the values of the variables in a text about instance in (nil:
// about no one sandbox): the case's, every one-container sandbox's
// ${id.NAME} (this trial's, as the client named it once it has), and the
// instance's ${id}.
func (cs *caseState) vals(in *instance) map[string]string {
	out := maps.Clone(cs.vars)
	for name, insts := range cs.insts {
		if len(insts) == 1 {
			out["id."+name] = insts[0].id
		}
	}
	if in != nil {
		out["id"] = in.id
	}
	return out
}

func (cs *caseState) nextLog() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.logN++
	return cs.logN
}

func (cs *caseState) fail(step, msg, diff string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.trials > 1 {
		msg = fmt.Sprintf("trial %d/%d: %s", cs.trial+1, cs.trials, msg)
	}
	cs.res.Failures = append(cs.res.Failures, report.Failure{Step: step, Message: msg, Diff: diff})
}

// failStep fails the case at step rec with msg, and rec with it.
func (cs *caseState) failStep(rec report.Step, msg string) report.Step {
	cs.fail(rec.ID, msg, "")
	rec.Error = msg
	return rec
}

// noteDelete records the time of a delete command for the trial's maximum.
func (cs *caseState) noteDelete(d time.Duration) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.maxDelete = max(cs.maxDelete, d)
}

// timeDaemon records in the result that the daemon name took from t0 until
// now to start (or to fail with err): the matrix's time breakdown adds
// these up per host.
func (cs *caseState) timeDaemon(name string, t0 time.Time, err error) {
	d := report.Daemon{Name: name, DurationMS: time.Since(t0).Milliseconds()}
	if err != nil {
		d.Error = err.Error()
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.res.Daemons = append(cs.res.Daemons, d)
}

func (r *Runner) runOne(ctx context.Context, c *casefile.Case, cx string, rt Runtime, idx int) (res report.Result) {
	res = r.baseResult(c, cx, rt)
	start := time.Now()
	defer func() { res.DurationMS = time.Since(start).Milliseconds() }()
	if why := r.skipReason(c, cx, rt); why != "" {
		res.Outcome, res.Reason = report.Skip, why
		return res
	}
	// The case's time limit bounds each trial (runTrial) and each input of a
	// table (runInput), not their sum: 200 trials of a kill storm, or 18
	// inputs under emulation, each get the whole limit.
	cs := &caseState{c: c, cx: cx, rt: rt, res: &res, root: fmt.Sprintf("%s/%03d", r.tree.Root, idx), foreign: map[string]proc.Process{}, mountns: map[string]int{}}
	cs.dir = filepath.Join(r.work, fmt.Sprintf("%03d", idx))
	cs.logDir = filepath.Join(cs.dir, "logs")
	setupFailed := func(msg string) report.Result {
		cs.fail("setup", msg, "")
		res.Outcome = report.Fail
		return res
	}
	if err := os.MkdirAll(cs.logDir, 0o755); err != nil {
		return setupFailed(err.Error())
	}
	defer r.teardownCase(cs)
	if err := r.setupContext(ctx, cs); err != nil {
		return setupFailed(fmt.Sprintf("building the %s context: %v", cx, err))
	}
	cs.vars = map[string]string{"token": r.token, "caseroot": cs.root, "caller": r.callerVar(cs)}
	if err := r.setupCase(ctx, cs, c.Setup, false); err != nil {
		return setupFailed(err.Error())
	}
	if err := r.setupMountns(cs); err != nil {
		return setupFailed(err.Error())
	}
	if len(c.Inputs) > 0 {
		r.runTable(ctx, cs)
	} else {
		r.runTrials(ctx, cs)
	}
	if why := r.refusal(cs); why != "" {
		r.refused[rt.Name] = why
		res.Outcome, res.Reason, res.Failures = report.Skip, why, nil
		return res
	}
	r.decide(cs)
	return res
}

// trialsOf is how many times the case runs: -trials, else its own.
func (r *Runner) trialsOf(c *casefile.Case) int {
	if r.opt.Trials > 0 {
		return r.opt.Trials
	}
	return max(c.Trials, 1)
}

// keptTrials is how many failed trials keep their step records (the
// first trial always does): enough to read what went wrong, not 200.
const keptTrials = 3

// runTrials runs the case's steps once per trial, each with fresh container
// IDs and its own time limit, and sums the trials up. Between trials it
// removes what the last one left (after recording it), so every trial
// starts from the baseline.
func (r *Runner) runTrials(ctx context.Context, cs *caseState) {
	c, res := cs.c, cs.res
	n := r.trialsOf(c)
	cs.trials = n
	var stats report.Trials
	keptFailed := 0
	for t := 0; t < n; t++ {
		if ctx.Err() != nil {
			cs.fail("trials", fmt.Sprintf("interrupted before trial %d of %d", t+1, n), "")
			break
		}
		cs.trial, cs.maxDelete, cs.killed, cs.notKilled, cs.sweepKilled = t, 0, false, false, ""
		if n > 1 {
			cs.suffix = fmt.Sprintf("-t%0*d", len(fmt.Sprint(n-1)), t)
		}
		if t > 0 {
			if err := r.setupCase(ctx, cs, c.Setup, true); err != nil {
				cs.fail("trials", fmt.Sprintf("trial %d of %d: %v", t+1, n, err), "")
				break
			}
		}
		failuresBefore, stepsBefore, leaksBefore := len(res.Failures), len(res.Steps), len(res.Leaks)
		r.runTrial(ctx, cs)
		if t == n-1 && cs.sweepKilled != "" {
			cs.fail(cs.sweepKilled, fmt.Sprintf("the sweep did not reach its end: the create was still killed in the last trial (nth = %d); raise trials until a create runs to its end", n), "")
		}
		stats.Trials++
		failed := len(res.Failures) > failuresBefore
		if failed {
			stats.Failed++
		}
		if k := len(res.Leaks) - leaksBefore; k > 0 {
			stats.Leaked++
			stats.LeakedItems += k
		}
		stats.MaxDeleteMS = max(stats.MaxDeleteMS, cs.maxDelete.Milliseconds())
		if cs.killed {
			stats.Killed++
		}
		if cs.notKilled {
			stats.NotKilled++
		}
		if n > 1 {
			keep := t == 0 || (failed && keptFailed < keptTrials)
			if failed && t > 0 && keep {
				keptFailed++
			}
			if !keep {
				res.Steps = res.Steps[:stepsBefore]
			}
			r.scrub(cs)
		}
	}
	if n > 1 {
		res.Trials = &stats
	}
}

// runTrial is one run of the steps: fresh instances, a baseline, the
// steps, the final cleanup.
func (r *Runner) runTrial(parent context.Context, cs *caseState) {
	c, res := cs.c, cs.res
	timeout := r.caseLimit(c)
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	if err := r.makeInstances(cs); err != nil {
		cs.fail("setup", err.Error(), "")
		return
	}
	cs.baseline = r.snapshot(cs)
	cs.mountBase = r.mountsNow(cs)
	cs.callerControl = r.callerControl(cs)
	if res.TreeBefore == nil {
		res.TreeBefore = keys(cs.baseline)
	}
	for i := range c.Steps {
		st := &c.Steps[i]
		if !st.When.Applies(r.host.Mode, cs.cx) {
			res.Steps = append(res.Steps, report.Step{ID: st.ID, Do: st.Do, Sandbox: st.Sandbox, Skipped: "not for this mode/context"})
			continue
		}
		if ctx.Err() != nil {
			cs.fail(st.ID, fmt.Sprintf("case timed out after %v before this step", timeout), "")
			break
		}
		r.doStep(ctx, cs, st)
	}
	r.finalCleanup(context.WithoutCancel(ctx), cs)
}

// refusal detects a runtime refusing the host outright.
func (r *Runner) refusal(cs *caseState) string {
	outputs := make([]string, 0, len(cs.res.Steps))
	for _, s := range cs.res.Steps {
		outputs = append(outputs, s.Output)
	}
	for _, in := range cs.res.Inputs {
		outputs = append(outputs, in.Evidence...) // a table case's commands
	}
	for _, o := range outputs {
		if why := KnownRefusal(cs.rt.Kind, o); why != "" {
			return why
		}
	}
	return ""
}

// decide turns failures and declared divergences into the outcome. A
// divergence declared for this runtime, mode and context that covers no
// failure is stale: a note, or with -strict a failure of its own. A
// measured pass (passes: true) is the pass's note.
func (r *Runner) decide(cs *caseState) {
	res := cs.res
	used := make([]bool, len(cs.c.Divergences))
	unexpected := 0
	var reasons []string
	for i := range res.Failures {
		f := &res.Failures[i]
		for j, d := range cs.c.Divergences {
			if d.Covers(cs.rt.Name, r.host.Mode, cs.cx, f.Step) {
				f.Expected, used[j] = true, true
				if !slices.Contains(reasons, d.Reason) {
					reasons = append(reasons, d.Reason)
				}
				break
			}
		}
		if !f.Expected {
			unexpected++
		}
	}
	var stale, passes []string
	for j, d := range cs.c.Divergences {
		switch {
		case !d.AppliesTo(cs.rt.Name, r.host.Mode, cs.cx):
		case d.Passes:
			passes = append(passes, "measured passing: "+d.Reason)
		case !used[j]:
			stale = append(stale, "declared divergence not observed: "+d.Reason)
		}
	}
	if r.opt.Strict {
		for _, s := range stale {
			res.Failures = append(res.Failures, report.Failure{Step: "divergences", Message: "stale (-strict: update the case): " + s})
			unexpected++
		}
	}
	switch {
	case unexpected > 0:
		res.Outcome = report.Fail
	case len(res.Failures) > 0:
		res.Outcome, res.Reason = report.Divergence, strings.Join(reasons, " / ")
	default:
		res.Outcome, res.Reason = report.Pass, strings.Join(append(passes, stale...), " / ")
	}
}

// selected reports whether "case [context]" name is to run: filter (if
// any) matches it and skip (if any) does not.
func selected(filter, skip *regexp.Regexp, name string) bool {
	return (filter == nil || filter.MatchString(name)) && (skip == nil || !skip.MatchString(name))
}

// observe finds the instance's processes and their cgroups. When it finds
// none it says why (the state command's error, a dead init), for the step's
// record: a later check can only say "no process observed".
func (r *Runner) observe(ctx context.Context, cs *caseState, in *instance) (why string) {
	if m := cs.maker(); m != nil {
		return m.observe(ctx, in)
	}
	found := map[string]int{}
	st, err := r.state(ctx, cs, in)
	switch {
	case err != nil:
		why = "state: " + err.Error()
	case st.Pid <= 0:
		why = fmt.Sprintf("state: status %q with no pid", st.Status)
	case !alive(st.Pid):
		why = fmt.Sprintf("state: status %q, pid %d is gone", st.Status, st.Pid)
	default:
		found[cs.rt.StateRole()] = st.Pid
	}
	if cs.rt.Kind == "runsc" {
		for role, pid := range runscProcs(in.root, in.id, in.bundle) {
			found[role] = pid
		}
	}
	if ok, w := in.record(found); !ok {
		if w != "" {
			why = w
		}
		return why
	}
	return ""
}

type ociState struct {
	Status string `json:"status"`
	Pid    int    `json:"pid"`
}

// sortProcs orders processes by role, then PID.
func sortProcs(procs []report.Process) {
	sort.Slice(procs, func(i, j int) bool {
		if procs[i].Role != procs[j].Role {
			return procs[i].Role < procs[j].Role
		}
		return procs[i].PID < procs[j].PID
	})
}

func (r *Runner) state(ctx context.Context, cs *caseState, in *instance) (ociState, error) {
	if m := cs.maker(); m != nil {
		return m.state(ctx, in)
	}
	res := r.runCommand(ctx, cs, in, append([]string{cs.rt.Path}, cs.rt.Command(in.global, "state", in.id, in.bundle, nil, "")...), r.scaled(30*time.Second))
	var st ociState
	if res.err != nil {
		return st, res.err
	}
	if res.exit != 0 {
		return st, fmt.Errorf("state exited %d: %s", res.exit, trunc(res.output, 300))
	}
	// Runtimes may log before the JSON; decode from the first '{'.
	i := strings.Index(res.output, "{")
	if i < 0 {
		return st, fmt.Errorf("no JSON in state output: %s", trunc(res.output, 300))
	}
	err := json.NewDecoder(strings.NewReader(res.output[i:])).Decode(&st)
	return st, err
}

// hierarchies are the keys of the hierarchies placement is checked in, and
// each hierarchy's name by its key, for the checks' messages.
func (r *Runner) hierarchies() (keys []string, names map[string]string) {
	for _, h := range r.host.Managed() {
		keys = append(keys, h.Key)
	}
	names = map[string]string{}
	for _, h := range r.host.Hierarchies {
		names[h.Key] = h.Name()
	}
	return keys, names
}
