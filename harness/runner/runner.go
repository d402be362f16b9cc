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
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/runsc-cgroups/cgconform/harness/casefile"
	"github.com/runsc-cgroups/cgconform/harness/cgroupfs"
	"github.com/runsc-cgroups/cgconform/harness/ocispec"
	"github.com/runsc-cgroups/cgconform/harness/report"
	"golang.org/x/sys/unix"
)

// Options configure a run.
type Options struct {
	Cases    []*casefile.Case
	Runtimes []Runtime
	// RuntimeErrors maps a runtime name to why it cannot run (missing
	// binary): its results are skips with that reason.
	RuntimeErrors map[string]string
	// Filter selects "case [context]" names to run (nil: all).
	Filter *regexp.Regexp
	// Busybox is a static busybox binary for the rootfs.
	Busybox string
	// ModeLabel overrides the detected mode's label in the report.
	ModeLabel string
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
	if opt.Progress == nil {
		opt.Progress = io.Discard
	}
	host := opt.Host
	if host == nil {
		if host, err = cgroupfs.Detect(); err != nil {
			return nil, fmt.Errorf("reading the host's cgroup layout: %w", err)
		}
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
			if opt.Filter != nil && !opt.Filter.MatchString(c.Name+" ["+cx+"]") {
				continue
			}
			for _, rt := range opt.Runtimes {
				idx++
				if ctx.Err() != nil {
					res := r.baseResult(c, cx, rt)
					res.Outcome, res.Reason = report.Skip, "interrupted: "+ctx.Err().Error()
					rep.Results = append(rep.Results, res)
					continue
				}
				fmt.Fprintf(opt.Progress, "=== RUN %s [%s] %s\n", c.Name, cx, rt.Name)
				var res report.Result
				if !canRun {
					res = r.baseResult(c, cx, rt)
					res.Outcome, res.Reason = report.Skip, "needs root: the harness creates cgroups"
				} else {
					res = r.runOne(ctx, c, cx, rt, idx)
				}
				fmt.Fprintf(opt.Progress, "%-4s %-30s %-22s %-14s %6.1fs %s\n", report.Symbol(res.Outcome), c.Name, "["+cx+"]", rt.Name,
					float64(res.DurationMS)/1000, oneLine(res))
				rep.Results = append(rep.Results, res)
			}
		}
	}
	rep.Finished = time.Now().UTC()
	r.notesMu.Lock()
	rep.Host.Notes = append(rep.Host.Notes, r.notes...)
	r.notesMu.Unlock()
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
	for _, n := range r.notes {
		if n == s {
			return
		}
	}
	r.notes = append(r.notes, s)
}

func (r *Runner) hostInfo() report.Host {
	h := report.Host{Mode: r.host.Mode, Label: r.opt.ModeLabel, UID: os.Geteuid(), SystemdPID1: r.host.SystemdPID1, CgroupNS: r.host.CgroupNS}
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

// mode is the detected host mode: what when.modes and divergence modes
// match against, whatever -mode says.
func (r *Runner) mode() string { return r.host.Mode }

// modeLabel is the mode results carry (the -mode label, e.g. the VM
// matrix's "systemd-v2", else the detected mode).
func (r *Runner) modeLabel() string {
	if r.opt.ModeLabel != "" {
		return r.opt.ModeLabel
	}
	return r.host.Mode
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
		if err := r.host.EnableRootControllers(); err != nil {
			return err
		}
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
	rp, err := newReaper()
	if err != nil {
		return fmt.Errorf("becoming a child subreaper (needed to find detached sandboxes): %w", err)
	}
	r.reaper = rp
	if r.host.Mode == cgroupfs.ModeV2 {
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

// teardown kills what the run started, removes the test root in every
// hierarchy and anything named with the run token, unmounts what runtimes
// left mounted in the work folder and removes it. It returns what it could
// not remove.
func (r *Runner) teardown() []string {
	var left []string
	if r.reaper != nil {
		killAndWait(descendants(os.Getpid()), 5*time.Second)
	}
	if r.tree != nil {
		for _, h := range r.host.Hierarchies {
			for _, d := range cgroupfs.FindNamed(h, r.token, r.tree.Root) {
				left = append(left, cgroupfs.RemoveTree(h.Dir(d), 5*time.Second)...)
			}
			left = append(left, cgroupfs.RemoveTree(h.Dir(r.tree.Root), 5*time.Second)...)
		}
	}
	if r.work != "" {
		left = append(left, unmountUnder(r.work)...)
		if err := os.RemoveAll(r.work); err != nil {
			left = append(left, err.Error())
		}
	}
	if r.reaper != nil {
		r.reaper.close()
		r.reaper = nil
	}
	return left
}

// unmountUnder detaches every mount below dir (e.g. runsc's per-root
// null-netns bind mount), deepest first.
func unmountUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return []string{err.Error()}
	}
	var mnts []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			mnts = append(mnts, f[4])
		}
	}
	sort.Slice(mnts, func(i, j int) bool { return len(mnts[i]) > len(mnts[j]) })
	var left []string
	for _, m := range mnts {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			left = append(left, fmt.Sprintf("umount %s: %v", m, err))
		}
	}
	return left
}

func (r *Runner) baseResult(c *casefile.Case, cx string, rt Runtime) report.Result {
	return report.Result{Case: c.Name, Context: cx, Runtime: rt.Name, Mode: r.modeLabel(), HostMode: r.mode(), File: c.File, Source: c.Source, Purpose: c.Purpose}
}

// skipReason says why a case cannot run here, or "".
func (r *Runner) skipReason(c *casefile.Case, cx string, rt Runtime) string {
	if why := r.opt.RuntimeErrors[rt.Name]; why != "" {
		return why
	}
	if why := r.refused[rt.Name]; why != "" {
		return why
	}
	var modes []string
	for _, q := range c.Requires {
		switch q {
		case "cgroup-v1", "hybrid", "cgroup-v2":
			modes = append(modes, q)
		case "v1-controllers":
			modes = append(modes, cgroupfs.ModeV1, cgroupfs.ModeHybrid)
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
		}
	}
	if len(modes) > 0 && !contains(modes, r.host.Mode) {
		return fmt.Sprintf("needs a %s host; this one is %s", strings.Join(modes, " or "), r.host.Mode)
	}
	switch cx {
	case "kubepods-delegated":
		if r.host.Mode != cgroupfs.ModeV2 {
			return "kubepods-delegated mounts cgroup2 at the root of a private cgroup namespace (the seed's fix): needs a cgroup v2 host"
		}
	case "systemd-unit":
		if !r.host.SystemdPID1 {
			return "systemd-unit needs systemd as PID 1 to start a Delegate=yes unit (runs in the systemd VMs)"
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !contains(b, x) {
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
}

// runCommand runs argv through the exec-in-cgroup re-exec, in the caller
// context's cgroups. stdio are files of its own (runsc sets O_NONBLOCK on
// its stdio and a detached sandbox inherits them).
func (r *Runner) runCommand(ctx context.Context, cs *caseState, argv []string, timeout time.Duration) cmdResult {
	n := cs.nextLog()
	logPath := filepath.Join(cs.logDir, fmt.Sprintf("%03d.log", n))
	res := cmdResult{argv: argv, exit: -1}
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		res.err = err
		return res
	}
	defer out.Close()
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
		helper = append(helper, "--cgroupns")
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
	pid, err := r.reaper.start(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	if err != nil {
		res.err = err
		return res
	}
	werr := cmd.Wait()
	res.dur = time.Since(start)
	r.reaper.release(pid)
	res.exit = cmd.ProcessState.ExitCode()
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
	global  []string
	notes   []string
	created bool
	deleted bool
	// before is the tree before the instance's create (for owned).
	before map[string]bool
	// pids by role as last observed; kept after the processes die so
	// later checks can tell they are gone.
	pids  map[string]int
	procs []report.Process
}

// caseState is one case x context x runtime in progress.
type caseState struct {
	c        *casefile.Case
	cx       string
	rt       Runtime
	res      *report.Result
	root     string            // the case's cgroup below the test root
	caller   map[string]string // hierarchy key -> caller cgroup
	joinDirs []string
	cgroupns bool
	holders  []int
	// callerHolders are the holders started in the caller's own cgroup.
	callerHolders []int
	extra         []string // cgroups outside the case root to watch (systemd unit)
	unit          string
	dir           string
	logDir        string
	insts         map[string][]*instance
	order         []*instance
	baseline      map[string]bool
	mu            sync.Mutex
	logN          int
	vars          map[string]string
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
	cs.res.Failures = append(cs.res.Failures, report.Failure{Step: step, Message: msg, Diff: diff})
}

func (r *Runner) runOne(ctx context.Context, c *casefile.Case, cx string, rt Runtime, idx int) (res report.Result) {
	res = r.baseResult(c, cx, rt)
	start := time.Now()
	defer func() { res.DurationMS = time.Since(start).Milliseconds() }()
	if why := r.skipReason(c, cx, rt); why != "" {
		res.Outcome, res.Reason = report.Skip, why
		return res
	}
	timeout := r.opt.CaseTimeout
	if c.Timeout.Duration > 0 {
		timeout = c.Timeout.Duration
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cs := &caseState{c: c, cx: cx, rt: rt, res: &res, root: fmt.Sprintf("%s/%03d", r.tree.Root, idx), insts: map[string][]*instance{}}
	cs.dir = filepath.Join(r.work, fmt.Sprintf("%03d", idx))
	cs.logDir = filepath.Join(cs.dir, "logs")
	if err := os.MkdirAll(cs.logDir, 0o755); err != nil {
		cs.fail("setup", err.Error(), "")
		res.Outcome = report.Fail
		return res
	}
	defer r.teardownCase(cs)
	if err := r.setupContext(ctx, cs); err != nil {
		cs.fail("setup", fmt.Sprintf("building the %s context: %v", cx, err), "")
		res.Outcome = report.Fail
		return res
	}
	if err := r.makeInstances(cs); err != nil {
		cs.fail("setup", err.Error(), "")
		res.Outcome = report.Fail
		return res
	}
	cs.baseline = r.snapshot(cs)
	res.TreeBefore = keys(cs.baseline)
	for i := range c.Steps {
		st := &c.Steps[i]
		if !st.When.Applies(r.mode(), cx) {
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
	if why := r.refusal(cs); why != "" {
		r.refused[rt.Name] = why
		res.Outcome, res.Reason, res.Failures = report.Skip, why, nil
		return res
	}
	r.decide(cs)
	return res
}

// refusal detects a runtime refusing the host outright.
func (r *Runner) refusal(cs *caseState) string {
	for _, s := range cs.res.Steps {
		if why := KnownRefusal(cs.rt.Kind, s.Output); why != "" {
			return why
		}
	}
	return ""
}

// decide turns failures and declared divergences into the outcome.
func (r *Runner) decide(cs *caseState) {
	res := cs.res
	if len(res.Failures) == 0 {
		res.Outcome = report.Pass
		for _, d := range cs.c.Divergences {
			if d.Runtime == cs.rt.Name && (len(d.Modes) == 0 || contains(d.Modes, r.mode())) {
				res.Reason = "declared divergence not observed: " + d.Reason
			}
		}
		return
	}
	unexpected := 0
	var reasons []string
	for i := range res.Failures {
		f := &res.Failures[i]
		for _, d := range cs.c.Divergences {
			if d.Covers(cs.rt.Name, r.mode(), f.Step) {
				f.Expected = true
				if !contains(reasons, d.Reason) {
					reasons = append(reasons, d.Reason)
				}
				break
			}
		}
		if !f.Expected {
			unexpected++
		}
	}
	if unexpected == 0 {
		res.Outcome, res.Reason = report.Divergence, strings.Join(reasons, " / ")
		return
	}
	res.Outcome = report.Fail
}

// setupContext builds the caller context below the case root.
func (r *Runner) setupContext(ctx context.Context, cs *caseState) error {
	if err := r.tree.Mkdir(cs.root); err != nil {
		return err
	}
	var caller string
	var holders []string // cgroups that get a long-running process
	switch cs.cx {
	case "host":
		caller = cs.root + "/host"
	case "container":
		caller = cs.root + "/container"
		holders = []string{caller}
	case "kubepods-privileged", "kubepods-delegated":
		pod := cs.root + "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + strings.ReplaceAll(fakeUUID(r.token, 1), "-", "_") + ".slice"
		pause := pod + "/cri-containerd-" + fakeHex(r.token, 2) + ".scope"
		caller = pod + "/cri-containerd-" + fakeHex(r.token, 3) + ".scope"
		holders = []string{pause, caller}
		cs.cgroupns = cs.cx == "kubepods-delegated"
	case "systemd-unit":
		return r.setupUnit(ctx, cs)
	default:
		return fmt.Errorf("unknown context %q", cs.cx)
	}
	for _, d := range append([]string{caller}, holders...) {
		if err := r.tree.Mkdir(d); err != nil {
			return err
		}
	}
	cs.caller = map[string]string{}
	for _, h := range r.host.Hierarchies {
		cs.caller[h.Key] = caller
		cs.joinDirs = append(cs.joinDirs, h.Dir(caller))
	}
	for _, hd := range holders {
		pid, err := r.startHolder(hd)
		if err != nil {
			return err
		}
		cs.holders = append(cs.holders, pid)
		if hd == caller {
			cs.callerHolders = append(cs.callerHolders, pid)
		}
	}
	return nil
}

// startHolder starts a long-running process in cgroup rel (what a
// container's own processes are to a runtime started inside it).
func (r *Runner) startHolder(rel string) (int, error) {
	var args []string
	args = append(args, HelperCommand)
	for _, h := range r.host.Hierarchies {
		args = append(args, "--join", h.Dir(rel))
	}
	args = append(args, "--", "sleep", "100000")
	cmd := exec.Command(r.opt.Self, args...)
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer null.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, null
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	// The reaper collects it when it dies; it must be in rel before the
	// case starts.
	_ = cmd.Process.Release()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		cg, err := cgroupfs.ProcCgroup(pid)
		if err == nil && len(cmdline(pid)) > 0 && cmdline(pid)[0] == "sleep" {
			ok := true
			for _, h := range r.host.Hierarchies {
				if cg[h.Key] != rel {
					ok = false
				}
			}
			if ok {
				return pid, nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, fmt.Errorf("holder process %d did not reach %s", pid, rel)
}

// setupUnit starts a transient Delegate=yes unit holding a process; its
// cgroups are the caller context.
func (r *Runner) setupUnit(ctx context.Context, cs *caseState) error {
	cs.unit = fmt.Sprintf("cgconform-%s-%s.service", r.token, filepath.Base(cs.root))
	out, err := exec.CommandContext(ctx, "systemd-run", "--unit", cs.unit, "-p", "Delegate=yes", "--collect", "sleep", "100000").CombinedOutput()
	if err != nil {
		return fmt.Errorf("systemd-run: %v: %s", err, out)
	}
	var pid int
	for i := 0; i < 100 && pid == 0; i++ {
		o, _ := exec.CommandContext(ctx, "systemctl", "show", "-p", "MainPID", "--value", cs.unit).Output()
		fmt.Sscan(strings.TrimSpace(string(o)), &pid)
		if pid == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if pid == 0 {
		return fmt.Errorf("unit %s has no main PID", cs.unit)
	}
	cg, err := cgroupfs.ProcCgroup(pid)
	if err != nil {
		return err
	}
	cs.caller = map[string]string{}
	for _, h := range r.host.Hierarchies {
		if p, ok := cg[h.Key]; ok {
			cs.caller[h.Key] = p
			cs.joinDirs = append(cs.joinDirs, h.Dir(p))
			cs.extra = append(cs.extra, h.Key+"\x00"+p)
		}
	}
	return nil
}

func fakeHex(token string, n int) string {
	s := strings.Repeat(fmt.Sprintf("%s%02d", token, n), 8)
	return hex.EncodeToString([]byte(s))[:64]
}

func fakeUUID(token string, n int) string {
	h := fakeHex(token, n)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func (r *Runner) makeInstances(cs *caseState) error {
	callerAny := ""
	for _, p := range cs.caller {
		callerAny = p
		break
	}
	cs.vars = map[string]string{"token": r.token, "caseroot": cs.root, "caller": callerAny}
	for i := range cs.c.Sandboxes {
		sb := &cs.c.Sandboxes[i]
		n := sb.Instances()
		for k := 0; k < n; k++ {
			id := r.token + "-" + sb.ContainerID()
			label := sb.Name
			if sb.Count > 1 {
				// Same width for every instance: runsc resolves an ID
				// by prefix, so "x-1" would be ambiguous with "x-10".
				w := len(fmt.Sprint(n - 1))
				id = fmt.Sprintf("%s-%0*d", id, w, k)
				label = fmt.Sprintf("%s#%0*d", sb.Name, w, k)
			}
			in := &instance{sb: sb, label: label, id: id, pids: map[string]int{}}
			in.root = filepath.Join(cs.dir, "state", sb.RootName())
			in.bundle = filepath.Join(cs.dir, "bundles", strings.ReplaceAll(label, "#", "-"))
			if err := os.MkdirAll(in.root, 0o700); err != nil {
				return err
			}
			vars := map[string]string{"id": id}
			for k, v := range cs.vars {
				vars[k] = v
			}
			spec, err := ocispec.Merge(ocispec.Base(r.rootfs), sb.Spec, vars)
			if err != nil {
				return fmt.Errorf("%s: sandboxes %s: %w", cs.c.File, sb.Name, err)
			}
			if err := ocispec.WriteBundle(in.bundle, spec); err != nil {
				return err
			}
			in.global, in.notes = cs.rt.GlobalFlags(in.root, sb.Options)
			cs.insts[sb.Name] = append(cs.insts[sb.Name], in)
			cs.order = append(cs.order, in)
		}
	}
	return nil
}

// snapshot lists every cgroup below the case root, plus anything named
// with the run token elsewhere, plus the unit's subtree, as
// "<hierarchy>:<path>".
func (r *Runner) snapshot(cs *caseState) map[string]bool {
	out := map[string]bool{}
	for _, h := range r.host.Hierarchies {
		for _, d := range cgroupfs.Dirs(h, cs.root) {
			out[h.Name()+":"+d] = true
		}
		for _, d := range cgroupfs.FindNamed(h, r.token, r.tree.Root) {
			for _, x := range cgroupfs.Dirs(h, d) {
				out[h.Name()+":"+x] = true
			}
		}
		for _, e := range cs.extra {
			k, p, _ := strings.Cut(e, "\x00")
			if k == h.Key {
				for _, d := range cgroupfs.Dirs(h, p) {
					out[h.Name()+":"+d] = true
				}
			}
		}
	}
	return out
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func diffSets(before, after map[string]bool) (added, removed []string) {
	for k := range after {
		if !before[k] {
			added = append(added, k)
		}
	}
	for k := range before {
		if !after[k] {
			removed = append(removed, k)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	return added, removed
}

// observe finds the instance's processes and their cgroups.
func (r *Runner) observe(ctx context.Context, cs *caseState, in *instance) {
	found := map[string]int{}
	if st, err := r.state(ctx, cs, in); err == nil && st.Pid > 0 && alive(st.Pid) {
		found[cs.rt.StateRole()] = st.Pid
	}
	if cs.rt.Kind == "runsc" {
		for role, pid := range runscProcs(descendants(os.Getpid()), in.root, in.id) {
			found[role] = pid
		}
	}
	var procs []report.Process
	for role, pid := range found {
		cg, err := cgroupfs.ProcCgroup(pid)
		if err != nil {
			continue
		}
		in.pids[role] = pid
		procs = append(procs, report.Process{PID: pid, Role: role, Instance: in.label, Cgroups: cg})
	}
	sort.Slice(procs, func(i, j int) bool { return procs[i].Role < procs[j].Role })
	if len(procs) > 0 {
		in.procs = procs
	}
}

type ociState struct {
	Status string `json:"status"`
	Pid    int    `json:"pid"`
}

func (r *Runner) state(ctx context.Context, cs *caseState, in *instance) (ociState, error) {
	res := r.runCommand(ctx, cs, append([]string{cs.rt.Path}, cs.rt.Command(in.global, "state", in.id, in.bundle, nil, "")...), 30*time.Second)
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

func (r *Runner) finalCleanup(ctx context.Context, cs *caseState) {
	before := r.snapshot(cs)
	rec := report.Step{ID: "cleanup", Do: "delete-force"}
	t0 := time.Now()
	var notes []string
	for _, in := range cs.order {
		if !in.created || in.deleted {
			continue
		}
		res := r.runCommand(ctx, cs, append([]string{cs.rt.Path}, cs.rt.Command(in.global, "delete-force", in.id, in.bundle, nil, "")...), 60*time.Second)
		if res.exit != 0 {
			notes = append(notes, fmt.Sprintf("delete --force %s exited %d: %s", in.label, res.exit, trunc(res.output, 300)))
		}
	}
	// Give exiting sandboxes a moment, then look for what is left.
	var leaks []string
	deadline := time.Now().Add(3 * time.Second)
	for {
		leaks = r.leftovers(cs)
		if len(leaks) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	rec.DurationMS = time.Since(t0).Milliseconds()
	rec.Added, rec.Removed = diffSets(before, r.snapshot(cs))
	rec.Note = strings.Join(notes, "; ")
	cs.res.Steps = append(cs.res.Steps, rec)
	if len(leaks) > 0 {
		cs.res.Leaks = leaks
		cs.fail("cleanup", fmt.Sprintf("left behind after every sandbox was deleted: %d item(s)", len(leaks)), strings.Join(groupByPath(leaks, len(r.host.Hierarchies)), "\n"))
	}
}

// leftovers lists cgroups beyond the context's own and live processes
// the runtime started that are still around.
func (r *Runner) leftovers(cs *caseState) []string {
	var out []string
	now := r.snapshot(cs)
	added, _ := diffSets(cs.baseline, now)
	out = append(out, added...)
	for _, p := range r.strayProcs(cs) {
		out = append(out, fmt.Sprintf("pid %d (%s) %s", p, comm(p), strings.Join(cmdline(p), " ")))
	}
	return out
}

// strayProcs are live descendants of the harness other than the context's
// holders.
func (r *Runner) strayProcs(cs *caseState) []int {
	var out []int
	for _, p := range descendants(os.Getpid()) {
		if contains(intsToStrings(cs.holders), fmt.Sprint(p)) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func intsToStrings(xs []int) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprint(x)
	}
	return out
}

// teardownCase removes the context and everything below the case root.
func (r *Runner) teardownCase(cs *caseState) {
	if left := killAndWait(descendants(os.Getpid()), 5*time.Second); len(left) > 0 {
		cs.fail("teardown", fmt.Sprintf("processes survived SIGKILL: %v", left), "")
		cs.res.Outcome = report.Fail
	}
	if cs.unit != "" {
		_ = exec.Command("systemctl", "stop", cs.unit).Run()
	}
	var left []string
	for _, h := range r.host.Hierarchies {
		for _, d := range cgroupfs.FindNamed(h, r.token, r.tree.Root) {
			left = append(left, cgroupfs.RemoveTree(h.Dir(d), 5*time.Second)...)
		}
		left = append(left, cgroupfs.RemoveTree(h.Dir(cs.root), 5*time.Second)...)
	}
	mounts := unmountUnder(cs.dir)
	left = append(left, mounts...)
	if len(left) > 0 {
		cs.fail("teardown", "the harness could not remove everything", strings.Join(left, "\n"))
		if cs.res.Outcome != report.Skip {
			cs.res.Outcome = report.Fail
		}
	}
	_ = os.RemoveAll(cs.dir)
}

// callerOf returns the caller cgroup for hierarchy key.
func (cs *caseState) callerOf(key string) string { return cs.caller[key] }

// managedKeys are the hierarchies placement is checked in.
func (r *Runner) managedKeys() []string {
	var out []string
	for _, h := range r.host.Managed() {
		out = append(out, h.Key)
	}
	return out
}

func (r *Runner) hierarchyName(key string) string {
	for _, h := range r.host.Hierarchies {
		if h.Key == key {
			return h.Name()
		}
	}
	return key
}

// groupByPath folds "<hierarchy>:<cgroup>" items that differ only in the
// hierarchy into one line per cgroup; other items stay as they are.
func groupByPath(items []string, nHier int) []string {
	var order []string
	by := map[string][]string{}
	var out []string
	for _, it := range items {
		h, p, ok := strings.Cut(it, ":/")
		if !ok || strings.HasPrefix(it, "pid ") {
			out = append(out, it)
			continue
		}
		p = "/" + p
		if _, seen := by[p]; !seen {
			order = append(order, p)
		}
		by[p] = append(by[p], h)
	}
	var grouped []string
	for _, p := range order {
		hs := by[p]
		if len(hs) == nHier {
			grouped = append(grouped, fmt.Sprintf("%s (all %d hierarchies)", p, nHier))
		} else {
			grouped = append(grouped, fmt.Sprintf("%s (%s)", p, strings.Join(hs, " ")))
		}
	}
	return append(grouped, out...)
}
