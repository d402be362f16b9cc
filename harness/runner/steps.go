package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/proc"
	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/harness/casefile"
	"github.com/runsc-cgroups/cgconform/harness/check"
	"golang.org/x/sys/unix"
)

const commandTimeout = 90 * time.Second

// commandLimit is the hang guard of one runtime command, scaled with the
// case bounds: under emulation (-time-scale 10) on a loaded 2-core host, one
// of 32 parallel runsc creates in the systemd-v2 VM was still running at 90 s.
func (r *Runner) commandLimit() time.Duration {
	return r.scaled(commandTimeout)
}

// scaled is d multiplied by -time-scale, for every limit the harness sets
// itself (a state or cleanup command beside 31 others under TCG takes far
// longer than on a host).
func (r *Runner) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * r.opt.TimeScale)
}

// caseLimit bounds one case x context x runtime: -timeout, or the case's
// own timeout scaled like its other bounds (parallel-32 takes 270-320 s of
// its 8 minutes in a TCG VM that shares the host with another).
func (r *Runner) caseLimit(c *casefile.Case) time.Duration {
	if c.Timeout.Duration > 0 {
		return r.scaled(c.Timeout.Duration)
	}
	return r.opt.CaseTimeout
}

// doStep runs one step, records it and its failures.
func (r *Runner) doStep(ctx context.Context, cs *caseState, st *casefile.Step) {
	before := r.snapshot(cs)
	t0 := time.Now()
	var recs []report.Step
	switch st.Do {
	case "create", "start", "run", "exec", "kill", "pause", "resume", "delete", "delete-force", "state", "list", "update", "runtime-delete":
		recs = r.forInstances(ctx, cs, st, r.commandStep)
	case "continue":
		recs = r.forInstances(ctx, cs, st, r.continueStep)
	case "kill-sandbox", "kill-gofer", "kill-shim":
		recs = r.forInstances(ctx, cs, st, r.killStep)
	case "cycle":
		recs = r.forInstances(ctx, cs, st, r.cycleStep)
	case "join":
		recs = r.forInstances(ctx, cs, st, r.joinStep)
	case "wait-stopped":
		recs = r.forInstances(ctx, cs, st, r.waitStoppedStep)
	case "burn":
		recs = r.forInstances(ctx, cs, st, r.burnStep)
	case "stop-unit":
		recs = r.forInstances(ctx, cs, st, r.stopUnitStep)
	case "write-state", "write-lock", "remove-lock":
		recs = r.forInstances(ctx, cs, st, r.writeStateStep)
	case "kill-process":
		recs = []report.Step{r.killProcessStep(cs, st)}
	case "write", "remove-empty":
		recs = []report.Step{r.cgroupStep(cs, st)}
	case "sleep":
		select {
		case <-time.After(st.Duration.Duration):
		case <-ctx.Done():
		}
		recs = []report.Step{{ID: st.ID, Do: st.Do}}
	case "check":
		recs = []report.Step{r.checkStep(ctx, cs, st)}
	case "kubelet-cpu":
		recs = []report.Step{r.kubeletCPUStep(ctx, cs, st)}
	case "remove-pod":
		recs = []report.Step{r.removePodStep(ctx, cs, st)}
	case "restart-daemon":
		recs = []report.Step{r.restartDaemonStep(ctx, cs, st)}
	}
	after := r.snapshot(cs)
	added, removed := diffSets(before, after)
	if len(recs) > 0 {
		recs[0].Added, recs[0].Removed = added, removed
		if len(recs) == 1 {
			recs[0].DurationMS = time.Since(t0).Milliseconds()
		}
	}
	cs.res.Steps = append(cs.res.Steps, recs...)
}

// cgroupStep runs a write step (into a file of an existing cgroup below
// the case root) or a remove-empty step.
func (r *Runner) cgroupStep(cs *caseState, st *casefile.Step) report.Step {
	rec := report.Step{ID: st.ID, Do: st.Do}
	est, err := casefile.Expanded(*st, cs.vals(nil))
	msg, detail := "", ""
	switch {
	case err != nil:
		msg = err.Error()
	case st.Do == "write":
		dirs, err := r.cgroupDirs(cs, est.Write.Cgroup)
		if err == nil {
			err = r.writeIn(dirs, est.Write.File, est.Write.Value)
		}
		if err != nil {
			msg = err.Error()
		}
	default:
		rec.Note, msg, detail = r.removeEmptyStep(cs, est.Cgroup)
	}
	if msg != "" {
		cs.fail(st.ID, msg, detail)
		rec.Error = msg
	}
	return rec
}

// forInstances runs fn on every instance of the step's sandbox, all at
// once (that is what count: N means), each with the step's texts expanded
// for it, and checks each against the step's expectation.
func (r *Runner) forInstances(ctx context.Context, cs *caseState, st *casefile.Step, fn func(context.Context, *caseState, *casefile.Step, *instance) (report.Step, *check.Command)) []report.Step {
	insts := cs.insts[st.Sandbox]
	recs := make([]report.Step, len(insts))
	var wg sync.WaitGroup
	for i, in := range insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			est, err := casefile.Expanded(*st, cs.vals(in))
			if err != nil {
				cs.fail(st.ID, in.label+": "+err.Error(), "")
				recs[i] = report.Step{ID: st.ID, Do: st.Do, Sandbox: in.label, Error: err.Error()}
				return
			}
			rec, res := fn(ctx, cs, &est, in)
			rec.ID, rec.Do, rec.Sandbox = st.ID, st.Do, in.label
			if res != nil {
				r.expect(cs, &est, in.label+": ", *res, &rec)
			}
			recs[i] = rec
		}()
	}
	wg.Wait()
	return recs
}

// expect checks a command against the step's expectation (default: exit
// 0), failing the case with prefix on each miss.
func (r *Runner) expect(cs *caseState, st *casefile.Step, prefix string, res check.Command, rec *report.Step) {
	e := check.Expect{}
	if x := st.Expect; x != nil {
		e = check.Expect{Fail: x.Fail, AnyExit: x.AnyExit, Output: x.Output, Within: r.scaled(x.Within.Duration)}
	}
	for _, m := range check.Evaluate(e, res) {
		cs.fail(st.ID, prefix+m, "")
		rec.Error = joinErr(rec.Error, m)
	}
}

// joinErr appends m to a step's error, "; " between them.
func joinErr(err, m string) string {
	if err == "" {
		return m
	}
	return err + "; " + m
}

// straceNoise is what strace says about its own bookkeeping of the
// tracees, in the runtime's output of a traced command: races of the
// tracees' exits with strace, nothing the runtime did.
var straceNoise = regexp.MustCompile(`^(\S*/)?strace: (dispatch_event: pid \d+ has delayed wait data set already|Exit of unknown pid \d+ ignored|Process \d+ (attached|detached))$`)

func withoutStraceNoise(out string) string {
	return strings.Join(slices.DeleteFunc(strings.SplitAfter(out, "\n"), func(l string) bool {
		return straceNoise.MatchString(strings.TrimRight(l, "\n"))
	}), "")
}

func (r *Runner) runtimeArgs(cs *caseState, in *instance, action string, st *casefile.Step) []string {
	args := st.Args
	if action == "update" {
		args = []string{resourcesFile(in, st)}
	}
	return append([]string{cs.rt.Path}, cs.rt.Command(in.global, action, in.id, in.bundle, args, st.Signal)...)
}

// resourcesFile is where an update step's fragment is written for the
// runtime to read: the instance's bundle folder, which the runtime
// commands of every context see.
func resourcesFile(in *instance, st *casefile.Step) string {
	return filepath.Join(in.bundle, "update-"+safeName(st.ID)+".json")
}

func record(res cmdResult) report.Step {
	exit := res.exit
	rec := report.Step{Command: res.argv, Exit: &exit, DurationMS: res.dur.Milliseconds(), Output: tail(res.output, 4000)}
	if res.err != nil {
		rec.Error = res.err.Error()
	}
	return rec
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func (r *Runner) commandStep(ctx context.Context, cs *caseState, st *casefile.Step, in *instance) (report.Step, *check.Command) {
	if m := cs.maker(); m != nil {
		return r.clientStep(ctx, cs, m, st, in)
	}
	actions := []string{st.Do}
	if st.Do == "run" {
		actions = []string{"create", "start"}
	}
	if st.Do == "update" {
		if err := os.WriteFile(resourcesFile(in, st), st.Resources, 0o644); err != nil {
			cs.fail(st.ID, in.label+": writing the resources file: "+err.Error(), "")
			return report.Step{Error: err.Error()}, nil
		}
	}
	var rec report.Step
	var last cmdResult
	total := time.Duration(0)
	killAfter := r.killDelay(cs, st)
	for _, a := range actions {
		var err error
		if a == "create" {
			if err = r.respec(cs, in, st); err == nil {
				in.before = r.snapshot(cs)
			}
		}
		argv, straced, injected := r.runtimeArgs(cs, in, a, st), "", ""
		if st.Kill != nil && st.Kill.Signal != "" && err == nil {
			in.created = true // whatever it gets to, delete must find it
			return report.Step{Command: argv, Note: r.stopCreate(ctx, cs, st, in, argv)}, nil
		}
		if st.Inject != nil && err == nil {
			argv, injected, err = r.straceWrap(cs, in, st, argv)
		}
		if st.Kill != nil && st.Kill.Syscall != "" && err == nil {
			in.created = true // as a failed create: cleanup deletes the ID
			argv, straced, err = r.straceWrap(cs, in, st, argv)
		}
		if err != nil {
			cs.fail(st.ID, in.label+": "+err.Error(), "")
			return report.Step{Error: err.Error()}, nil
		}
		if a == "create" {
			// Whatever a create gets to, killed or failed, cleanup must
			// try to delete it.
			in.created = true
		}
		stopKill := func() string { return "" }
		if straced != "" {
			stopKill = r.killTraced(cs, in, st.Kill, r.runtimeArgs(cs, in, a, st), straced)
		}
		last = r.runKilled(ctx, cs, in, argv, r.commandLimit(), killAfter)
		killedPid := stopKill()
		if straced != "" || injected != "" {
			last.output = withoutStraceNoise(last.output)
		}
		total += last.dur
		rec = record(last)
		if injected != "" {
			rec.Note = injectedNote(st.Inject, injected)
		}
		deletes := a == "delete" || a == "delete-force"
		if deletes {
			cs.noteDelete(last.dur)
		}
		if straced != "" {
			rec.Note = r.syscallKilled(cs, st, in, last, straced, killedPid)
			break
		}
		if st.Kill != nil {
			cs.learnKill(st, last)
			if last.killed {
				cs.mu.Lock()
				cs.killed = true
				cs.mu.Unlock()
				rec.Note = fmt.Sprintf("SIGKILLed the runtime command after %s", killAfter.Round(time.Millisecond))
			} else {
				rec.Note = fmt.Sprintf("the runtime command exited %d before its SIGKILL at %s", last.exit, killAfter.Round(time.Millisecond))
			}
			break
		}
		if last.exit != 0 || last.err != nil {
			break
		}
		in.deleted = in.deleted || deletes
	}
	notes := in.notes
	if rec.Note != "" {
		notes = append([]string{rec.Note}, notes...)
	}
	if st.Do == "update" {
		notes = append(notes, "resources "+string(st.Resources))
	}
	if len(st.Spec) > 0 {
		notes = append(notes, "spec "+string(st.Spec))
	}
	if st.Do == "create" || st.Do == "start" || st.Do == "run" {
		if why := r.observe(ctx, cs, in); why != "" && last.exit == 0 && last.err == nil && !last.killed {
			notes = append(notes, "no process observed: "+why)
		}
		rec.Processes = in.procs
	}
	rec.Note = strings.Join(notes, "; ")
	if last.err != nil {
		rec.Error = last.err.Error()
	}
	if st.Kill != nil {
		// A killed command has no exit status to hold it to; what it left
		// is for the steps after it to find.
		return rec, nil
	}
	return rec, &check.Command{Exit: last.exit, Output: last.output, Dur: total}
}

// stoppedCreate is a create left stopped by kill: {signal: STOP}: its PID
// (0 if it ended before it was stopped), its command line, and its result
// once it ends.
type stoppedCreate struct {
	pid  int
	argv []string
	done chan cmdResult
}

// stopCreate starts the create argv of step st and SIGSTOPs it once the
// runtime's k.Started process for in appears (runsc's sandbox or gofer;
// for runc and crun, which start neither, the create's first child, the
// container's init), so the create is alive and makes no progress. It is
// left so in the background, the processes found recorded for the checks,
// and says what it did; a continue step SIGCONTs it and takes its exit.
func (r *Runner) stopCreate(ctx context.Context, cs *caseState, st *casefile.Step, in *instance, argv []string) string {
	s := &stoppedCreate{argv: argv, done: make(chan cmdResult, 1)}
	in.stopped = s
	go func() { s.done <- r.runKilled(ctx, cs, in, argv, r.commandLimit(), 0) }()
	what := st.Kill.Started
	if cs.rt.Kind != "runsc" {
		what = "init"
	}
	for {
		select {
		case res := <-s.done:
			s.done <- res
			return fmt.Sprintf("not stopped: the create exited %d before its %s appeared", res.exit, what)
		case <-time.After(time.Millisecond): // runc's create lasts 40 ms
		}
		pid := pidOf(argv)
		if pid == 0 {
			continue
		}
		found := map[string]int{}
		if cs.rt.Kind == "runsc" {
			found = runscProcs(in.root, in.id, in.bundle)
		} else if kids := descendants(pid); len(kids) > 0 {
			found[what] = kids[0]
		}
		if found[what] == 0 || !slices.Equal(cmdline(pid), argv) || unix.Kill(pid, unix.SIGSTOP) != nil {
			continue
		}
		s.pid = pid
		for role, p := range found {
			in.pids[role] = p
		}
		return fmt.Sprintf("SIGSTOPped the create (PID %d) once its %s (PID %d) appeared", pid, what, found[what])
	}
}

// continueStep SIGCONTs the create an earlier step of the sandbox left
// stopped and waits for its exit, which the step's expect holds.
func (r *Runner) continueStep(ctx context.Context, cs *caseState, st *casefile.Step, in *instance) (report.Step, *check.Command) {
	s := in.stopped
	if s == nil {
		msg := in.label + ": no create of this sandbox is stopped (kill: {signal: STOP, started: ...} on an earlier create)"
		cs.fail(st.ID, msg, "")
		return report.Step{Error: msg}, nil
	}
	in.stopped = nil
	note := "the create had ended"
	if s.pid != 0 && slices.Equal(cmdline(s.pid), s.argv) && unix.Kill(s.pid, unix.SIGCONT) == nil {
		note = fmt.Sprintf("SIGCONT the create (PID %d)", s.pid)
	}
	res := <-s.done
	if res.signal != 0 {
		note += "; it died of " + unix.SignalName(res.signal)
	}
	rec := record(res)
	rec.Note = note
	if why := r.observe(ctx, cs, in); why != "" && res.exit == 0 {
		rec.Note += "; no process observed: " + why
	}
	rec.Processes = in.procs
	return rec, &check.Command{Exit: res.exit, Output: res.output, Dur: res.dur}
}

// respec writes the bundle a create of step st reads: the step's own spec
// merged onto the sandbox's, or, after such a create, the sandbox's again.
func (r *Runner) respec(cs *caseState, in *instance, st *casefile.Step) error {
	if len(st.Spec) == 0 && !in.respec {
		return nil
	}
	if err := r.writeBundle(cs, in, st.Spec); err != nil {
		return err
	}
	in.respec = len(st.Spec) > 0
	return nil
}

// killDelay is when to SIGKILL the runtime command of step st: the fixed
// delay, or a uniformly random one in [min, max), scaled like every bound
// (under emulation a create is slower, and so is the moment to hit inside
// it). max is only a bound: once a trial's command has ended before its
// kill, later trials draw below the longest such run, so that the kills
// land inside the command rather than after it (a storm whose kills miss
// proves little).
func (r *Runner) killDelay(cs *caseState, st *casefile.Step) time.Duration {
	k := st.Kill
	switch {
	case k == nil || k.Syscall != "" || k.Signal != "":
		return 0 // a syscall kill's moment is strace's; a stop's, the started process's
	case k.After.Duration > 0:
		return r.scaled(k.After.Duration)
	}
	lo, hi := r.scaled(k.Min.Duration), r.scaled(k.Max.Duration)
	cs.mu.Lock()
	d := cs.killRuns[killKey(st)]
	cs.mu.Unlock()
	if d > lo && d < hi {
		hi = d
	}
	return lo + time.Duration(rand.Int64N(int64(hi-lo)))
}

// learnKill records how long the command of kill step st ran when it ended
// before its kill (see killDelay).
func (cs *caseState) learnKill(st *casefile.Step, res cmdResult) {
	if st.Kill == nil || st.Kill.After.Duration > 0 || st.Kill.Syscall != "" || res.killed {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.killRuns == nil {
		cs.killRuns = map[string]time.Duration{}
	}
	if key := killKey(st); res.dur > cs.killRuns[key] {
		cs.killRuns[key] = res.dur
	}
}

func killKey(st *casefile.Step) string { return st.ID + "/" + st.Do + "/" + st.Sandbox }

// syscallKilled accounts for a create run under strace (kill: {syscall}),
// whose record is at straced, and says what happened: killed (killedPid
// names whom) at its nth call or in a held one, or run to its end (the
// nth call never came: not killed, and held to exit 0 like any create).
func (r *Runner) syscallKilled(cs *caseState, st *casefile.Step, in *instance, res cmdResult, straced, killedPid string) string {
	k := st.Kill
	at, by := fmt.Sprintf("%s held %s after its %s started", k.Syscall, r.scaled(k.Hold.Duration), k.Started), "in a "
	if k.Nth != nil {
		at, by = ordinal(k.Nth.At(cs.trial))+" "+k.Syscall, "at its "
	}
	if killedPid != "" {
		by = "(" + killedPid + ") " + by
	}
	if res.signal == unix.SIGKILL && res.err == nil {
		cs.mu.Lock()
		cs.killed = true
		if k.Nth != nil && k.Nth.Trial {
			cs.sweepKilled = st.ID
		}
		cs.mu.Unlock()
		b, _ := os.ReadFile(straced)
		late := ""
		if n := callStarts(string(b)); k.Nth != nil && !pathless[k.Syscall] && n > k.Nth.At(cs.trial) {
			// Another thread's call began in the hold, or the kill came late.
			late = fmt.Sprintf(" (%d calls started by then)", n)
		}
		if call := killedCall(string(b)); call != "" {
			return fmt.Sprintf("SIGKILLed %s%s%s: %s", by, at, late, call)
		}
		return "SIGKILLed " + by + at + late
	}
	if res.exit == 0 && res.err == nil {
		cs.mu.Lock()
		cs.notKilled = true
		cs.mu.Unlock()
		return fmt.Sprintf("not killed: the create ran to its end (exit 0) without a %s on its paths", at)
	}
	why := fmt.Sprintf("exited %d", res.exit)
	if res.err != nil {
		why = res.err.Error()
	} else if res.signal != 0 {
		why = "died of " + unix.SignalName(res.signal)
	}
	msg := fmt.Sprintf("%s: the create %s before its %s, not killed (strace's record: %s)", in.label, why, at, straced)
	cs.fail(st.ID, msg, "")
	return msg
}

// cycleStep runs Repeat rounds of create, start and delete --force of one
// instance, each command held to exit 0: instances of a count: N sandbox
// cycle side by side, so one's delete races another's create.
func (r *Runner) cycleStep(ctx context.Context, cs *caseState, st *casefile.Step, in *instance) (report.Step, *check.Command) {
	t0 := time.Now()
	var bad []string
	rounds := 0
	for ; rounds < st.Repeat && ctx.Err() == nil && len(bad) == 0; rounds++ {
		failed := false
		for _, a := range []string{"create", "start", "delete-force"} {
			if failed && a != "delete-force" {
				continue // still delete what this round made
			}
			if a == "create" {
				if err := r.respec(cs, in, st); err != nil {
					bad = append(bad, err.Error())
					break
				}
			}
			res := r.runCommand(ctx, cs, in, r.runtimeArgs(cs, in, a, st), r.commandLimit())
			switch a {
			case "create":
				in.created, in.deleted = true, false
			case "delete-force":
				cs.noteDelete(res.dur)
				if res.exit == 0 && res.err == nil {
					in.deleted = true
				}
			}
			if res.exit != 0 || res.err != nil {
				why := fmt.Sprintf("round %d: %s exited %d: %s", rounds+1, a, res.exit, check.LastLines(res.output, 3))
				if res.err != nil {
					why += " (" + res.err.Error() + ")"
				}
				bad = append(bad, why)
				failed = true
			}
		}
	}
	for _, b := range bad {
		cs.fail(st.ID, in.label+": "+b, "")
	}
	rec := report.Step{DurationMS: time.Since(t0).Milliseconds(), Note: fmt.Sprintf("%d of %d rounds of create, start, delete --force", rounds, st.Repeat)}
	if len(bad) > 0 {
		rec.Error = strings.Join(bad, "; ")
	}
	return rec, nil
}

// joinStep moves a setup process into the sandbox's cgroup in every
// hierarchy the sandbox's main process has one of its own: a foreign
// process inside a sandbox's cgroup (another tenant's, a debugging shell),
// which makes the cgroup busy at delete.
func (r *Runner) joinStep(ctx context.Context, cs *caseState, st *casefile.Step, in *instance) (report.Step, *check.Command) {
	pid := cs.foreign[st.Process].PID
	m, ok := check.Main(in.procs)
	if !ok {
		cs.fail(st.ID, in.label+": no process of the sandbox observed to find its cgroup", "")
		return report.Step{Error: "no sandbox process"}, nil
	}
	var moved []string
	for _, h := range r.host.Hierarchies {
		cg, ok := m.Cgroups[h.Key]
		if !ok || cg == cs.caller[h.Key] || cg == "/" {
			continue
		}
		// A client's container ID (cs.names) is this run's too.
		if !cgroupfs.IsUnder(cg, r.tree.Root) && !strings.Contains(cg, r.token) && !slices.ContainsFunc(cs.names, func(n string) bool { return strings.Contains(cg, n) }) {
			cs.fail(st.ID, fmt.Sprintf("%s: the sandbox's cgroup %s:%s is neither below the test root nor named with the run token or a client's ID of this run: not moving a process there", in.label, h.Name(), cg), "")
			continue
		}
		if err := cgroupfs.WritePid(h.Dir(cg), pid); err != nil {
			cs.fail(st.ID, fmt.Sprintf("%s: moving %s (pid %d) into %s:%s: %v", in.label, st.Process, pid, h.Name(), cg, err), "")
			continue
		}
		moved = append(moved, h.Name()+":"+cg)
	}
	if len(moved) == 0 {
		cs.fail(st.ID, in.label+": the sandbox has no cgroup of its own to join", "")
	}
	return report.Step{Note: fmt.Sprintf("%s (pid %d) joined %s", st.Process, pid, strings.Join(moved, " "))}, nil
}

// killProcessStep SIGKILLs a setup process and waits until it is gone.
func (r *Runner) killProcessStep(cs *caseState, st *casefile.Step) report.Step {
	p := cs.foreign[st.Process]
	rec := report.Step{ID: st.ID, Do: st.Do, Note: fmt.Sprintf("SIGKILL %s pid %d", st.Process, p.PID)}
	if left := killAndWait([]proc.Process{p}, r.scaled(10*time.Second)); len(left) > 0 {
		cs.fail(st.ID, fmt.Sprintf("%s (pid %d) survived SIGKILL", st.Process, p.PID), "")
		rec.Error = "survived SIGKILL"
	}
	return rec
}

// writeStateStep writes in the sandbox's --root what a crash can leave
// there: write-state the state file, with st.State; write-lock only what a
// create makes before it saves any state (runsc's empty lock file, runc's
// and crun's container directory). remove-lock removes runsc's lock file,
// as an operator's cleanup of the folder may (runc and crun keep none).
func (r *Runner) writeStateStep(ctx context.Context, cs *caseState, st *casefile.Step, in *instance) (report.Step, *check.Command) {
	files := stateFiles(cs.rt.Kind, in.root, in.id)
	dir, file := files[0], files[1] // runc's and crun's folder and state
	if cs.rt.Kind == "runsc" {
		dir, file = in.root, map[bool]string{true: files[0], false: files[2]}[st.Do == "write-state"]
	}
	if in.mountns != 0 {
		cs.fail(st.ID, in.label+": "+st.Do+" cannot reach a --root in the sandbox's own mount namespace", "")
		return report.Step{Error: "mountns"}, nil
	}
	if st.Do == "remove-lock" && cs.rt.Kind != "runsc" {
		return report.Step{Skipped: cs.rt.Kind + " keeps no lock file in --root"}, nil
	}
	note, err := "removed "+file, error(nil)
	if st.Do == "remove-lock" {
		err = os.Remove(file)
	} else if note, err = "made "+dir, os.MkdirAll(dir, 0o711); err == nil && (st.Do == "write-state" || cs.rt.Kind == "runsc") {
		content := ""
		if st.State != nil {
			content = *st.State
		}
		note = fmt.Sprintf("wrote %d bytes to %s", len(content), file)
		err = os.WriteFile(file, []byte(content), 0o640)
	}
	if err != nil {
		cs.fail(st.ID, in.label+": "+err.Error(), "")
		return report.Step{Error: err.Error()}, nil
	}
	return report.Step{Note: note}, nil
}

func (r *Runner) killStep(ctx context.Context, cs *caseState, st *casefile.Step, in *instance) (report.Step, *check.Command) {
	role := map[string]string{"kill-sandbox": "sandbox", "kill-gofer": "gofer", "kill-shim": "shim"}[st.Do]
	if cs.rt.Kind != "runsc" && role != "shim" {
		if role == "gofer" {
			return report.Step{Skipped: cs.rt.Kind + " has no gofer"}, nil
		}
		role = "init"
	}
	pid := in.pids[role]
	why := ""
	if pid == 0 {
		why = r.observe(ctx, cs, in)
		pid = in.pids[role]
	}
	if pid == 0 {
		cs.fail(st.ID, fmt.Sprintf("%s: no %s process observed to kill", in.label, role), why)
		return report.Step{Error: "no " + role + " process"}, nil
	}
	t0 := time.Now()
	limit := r.scaled(10 * time.Second)
	left := killAndWait(ours(pid), limit)
	if role == "shim" {
		// containerd answers a dead shim with `shim delete -id ID` once it
		// notices: wait for that cleanup to start (a grace period) and end.
		seen, grace := false, time.Now().Add(r.scaled(2*time.Second))
		for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if slices.ContainsFunc(descendants(os.Getpid()), func(p int) bool { return flagIs(cmdline(p), "id", in.id) }) {
				seen = true
			} else if seen || time.Now().After(grace) {
				break
			}
		}
	}
	rec := report.Step{Note: fmt.Sprintf("SIGKILL %s pid %d", role, pid), DurationMS: time.Since(t0).Milliseconds()}
	if len(left) > 0 {
		cs.fail(st.ID, fmt.Sprintf("%s: %s pid %d survived SIGKILL for %s", in.label, role, pid, limit), "")
	}
	return rec, nil
}

func (r *Runner) waitStoppedStep(ctx context.Context, cs *caseState, st *casefile.Step, in *instance) (report.Step, *check.Command) {
	t0 := time.Now()
	limit := r.scaled(15 * time.Second)
	deadline := t0.Add(limit)
	last := ""
	for time.Now().Before(deadline) && ctx.Err() == nil {
		s, err := r.state(ctx, cs, in)
		if err == nil && s.Status == "stopped" {
			return report.Step{DurationMS: time.Since(t0).Milliseconds()}, nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = "status " + s.Status
		}
		time.Sleep(200 * time.Millisecond)
	}
	cs.fail(st.ID, fmt.Sprintf("%s: not stopped after %s (%s)", in.label, limit, last), "")
	return report.Step{Error: last}, nil
}

// stopUnitStep stops a systemd unit that a sandbox's path named but that
// is its owner's to remove (a kubelet's pod slice), so that what is left
// after it is the runtime's.
func (r *Runner) stopUnitStep(ctx context.Context, cs *caseState, st *casefile.Step, in *instance) (report.Step, *check.Command) {
	out, err := r.reaper.output(exec.CommandContext(ctx, "systemctl", "stop", st.Unit))
	if err != nil {
		// A runtime that started no unit made no slice: nothing to stop.
		load, _ := r.reaper.output(exec.CommandContext(ctx, "systemctl", "show", "-p", "LoadState", "--value", st.Unit))
		if strings.TrimSpace(string(load)) == "not-found" {
			return report.Step{}, nil
		}
		msg := fmt.Sprintf("systemctl stop %s: %v: %s", st.Unit, err, strings.TrimSpace(string(out)))
		cs.fail(st.ID, msg, "")
		return report.Step{Error: msg}, nil
	}
	return report.Step{}, nil
}

// burnStep burns CPU inside the container and measures how much of what
// the sandbox's own cgroup was charged also reached the caller's cgroup
// (usage roll-up: what cAdvisor reports for the container that started
// the runtime). Comparing with the sandbox's own charge, not wall time,
// keeps the check honest on a loaded machine.
func (r *Runner) burnStep(ctx context.Context, cs *caseState, st *casefile.Step, in *instance) (report.Step, *check.Command) {
	key := r.cpuKey()
	m, ok := check.Main(in.procs)
	if !ok {
		cs.fail(st.ID, in.label+": no process observed to measure", "")
		return report.Step{Error: "no process"}, nil
	}
	sandboxCg, callerCg := m.Cgroups[key], cs.caller[key]
	read := func() (sb, caller time.Duration, err error) {
		if sb, err = r.host.Usage(sandboxCg); err != nil {
			return
		}
		caller, err = r.host.Usage(callerCg)
		return
	}
	sb0, c0, err := read()
	if err != nil {
		cs.fail(st.ID, "reading CPU usage: "+err.Error(), "")
		return report.Step{Error: err.Error()}, nil
	}
	res := r.burn(ctx, cs, in, st)
	sb1, c1, err := read()
	if err != nil {
		cs.fail(st.ID, "reading CPU usage: "+err.Error(), "")
		return report.Step{Error: err.Error()}, nil
	}
	secs := st.Duration.Seconds()
	rec := record(res)
	dSb, dC := sb1-sb0, c1-c0
	rec.Note = fmt.Sprintf("burned %.2fs wall; sandbox cgroup %s charged %.2fs; caller cgroup %s charged %.2fs", res.dur.Seconds(), sandboxCg, dSb.Seconds(), callerCg, dC.Seconds())
	if st.Expect != nil && st.Expect.RollupAtLeast > 0 {
		switch {
		case dSb < time.Duration(0.2*float64(st.Duration.Duration)):
			cs.fail(st.ID, fmt.Sprintf("%s: the sandbox's cgroup was charged only %.2fs for a %gs burn: the burn did not run (exit %d: %s)", in.label, dSb.Seconds(), secs, res.exit, trunc(res.output, 200)), "")
		case dC < time.Duration(st.Expect.RollupAtLeast*float64(dSb)):
			cs.fail(st.ID, fmt.Sprintf("%s: the caller's cgroup was charged %.2fs of the sandbox's %.2fs, want at least %.0f%% (the sandbox's CPU is not accounted to its caller)", in.label, dC.Seconds(), dSb.Seconds(), 100*st.Expect.RollupAtLeast), "")
		}
	}
	// timeout(1) ends the loop with a signal: its exit status is not the
	// point here.
	return rec, nil
}

// burn runs, in instance in, a loop that burns one CPU for the step's
// duration.
func (r *Runner) burn(ctx context.Context, cs *caseState, in *instance, st *casefile.Step) cmdResult {
	burn := *st
	burn.Args = []string{"/bin/timeout", fmt.Sprintf("%g", st.Duration.Seconds()), "/bin/sh", "-c", "while :; do :; done"}
	return r.runCommand(ctx, cs, in, r.runtimeArgs(cs, in, "exec", &burn), r.commandLimit())
}

// checkStep evaluates a check step: once, or, for a check about one
// sandbox, once for each of its instances, with that instance's ${id}.
func (r *Runner) checkStep(ctx context.Context, cs *caseState, st *casefile.Step) report.Step {
	rec := report.Step{ID: st.ID, Do: st.Do}
	insts := []*instance{nil}
	if name := st.Check.SandboxName(); name != "" {
		insts = cs.insts[name]
	}
	var msgs, diffs, seen []string
	for _, in := range insts {
		var msg, diff string
		var read []string
		c, err := casefile.Expanded(*st.Check, cs.vals(in))
		if err != nil {
			msg = err.Error()
		} else {
			msg, diff = r.check(ctx, cs, &c, in, &read)
		}
		if len(insts) > 1 {
			for i := range read {
				read[i] = in.label + ": " + read[i]
			}
			if msg != "" {
				msg = in.label + ": " + msg
			}
		}
		seen = append(seen, read...)
		if msg == "" {
			continue
		}
		msgs = append(msgs, msg)
		if diff != "" {
			diffs = append(diffs, diff)
		}
	}
	rec.Note = strings.Join(seen, "; ")
	if len(msgs) > 0 {
		rec.Error = strings.Join(msgs, "; ")
		cs.fail(st.ID, rec.Error, strings.Join(diffs, "\n"))
	}
	return rec
}

// check evaluates one check, its texts expanded, about instance in (nil
// for a check about no one sandbox). What it read for the record (a file's
// value, pass or fail) goes to read.
func (r *Runner) check(ctx context.Context, cs *caseState, c *casefile.Check, in *instance, read *[]string) (string, string) {
	keys, names := r.hierarchies()
	switch {
	case c.Placement != nil:
		p := c.Placement
		from := cs.origin()
		if in.from != nil {
			from = in.from
		}
		return check.PlacementFrom(r.want(p.Relation, p.Path), p.Roles, in.procs, cs.caller, from, keys, names)
	case len(c.Distinct) > 0:
		m := map[string][]report.Process{}
		for _, s := range c.Distinct {
			for _, in := range cs.insts[s] {
				m[in.label+" ("+filepath.Base(in.root)+")"] = in.procs
			}
		}
		return check.Distinct(m, keys, names)
	case c.Owned != "":
		return check.Owned(in.procs, in.before, keys, names)
	case c.Running != "" || c.Gone != "":
		return r.checkLive(ctx, cs, in, c.Running != "")
	case c.File != nil:
		return r.checkFile(cs, c.File, in, read)
	case c.Exists != "":
		return r.checkExists(cs, c.Exists, true)
	case c.Absent != "":
		return r.checkExists(cs, c.Absent, false)
	case c.NothingLeft:
		if left := r.leftovers(cs); len(left) > 0 {
			return fmt.Sprintf("%d item(s) left behind", len(left)), r.grouped(left)
		}
	case c.NoneNamed != "":
		added, _ := diffSets(cs.baseline, r.snapshot(cs))
		var bad []string
		for _, a := range added {
			if strings.Contains(path.Base(a), c.NoneNamed) {
				bad = append(bad, a)
			}
		}
		if len(bad) > 0 {
			return fmt.Sprintf("%d cgroup(s) named with %q created", len(bad), c.NoneNamed), r.grouped(bad)
		}
	case c.Holders != "":
		var procs []report.Process
		for _, pid := range cs.callerHolders {
			cg, err := cgroupfs.ProcCgroup(pid)
			if err != nil {
				return fmt.Sprintf("holder pid %d: %v", pid, err), ""
			}
			procs = append(procs, report.Process{PID: pid, Role: "holder", Instance: cs.cx, Cgroups: cg})
		}
		if len(procs) == 0 {
			return "the " + cs.cx + " context has no process of its own in the caller's cgroup", ""
		}
		return check.Placement(r.want(c.Holders, ""), nil, procs, cs.caller, keys, names)
	case c.RunscLog != nil:
		return r.checkRunscLog(cs, c.RunscLog, in)
	case c.KubeletSane:
		return r.checkKubeletSane(cs, read)
	case c.Unit != nil:
		name := c.Unit.Name
		out, err := r.reaper.output(exec.CommandContext(ctx, "systemctl", "show", "-p", "ActiveState", "--value", name))
		state := strings.TrimSpace(string(out))
		want := map[bool]string{true: "active", false: "gone"}[c.Unit.Active]
		switch {
		case err != nil:
			return "unit not " + want, fmt.Sprintf("systemctl show %s: %v: %s", name, err, state)
		case (state == "active") != c.Unit.Active:
			return "unit not " + want, fmt.Sprintf("%s is %q", name, state)
		}
	case c.NothingRemoved || c.NothingCreated:
		added, removed := diffSets(cs.baseline, r.snapshot(cs))
		what := "created"
		if c.NothingRemoved {
			added, what = removed, "of the baseline removed (a runtime removed what it did not create)"
		}
		if len(added) > 0 {
			return fmt.Sprintf("%d cgroup(s) %s", len(added), what), r.grouped(added)
		}
	}
	return "", ""
}

// checkLive holds instance in to be running (running) or gone: as the
// runtime's state says, and every process of it observed.
func (r *Runner) checkLive(ctx context.Context, cs *caseState, in *instance, running bool) (string, string) {
	var bad []string
	s, err := r.state(ctx, cs, in)
	switch {
	case running && err != nil:
		bad = append(bad, in.label+": state: "+err.Error())
	case running && s.Status != "running":
		bad = append(bad, in.label+": status "+s.Status)
	case !running && err == nil:
		bad = append(bad, in.label+": the runtime still reports it, status "+s.Status)
	}
	for role, pid := range in.pids {
		if alive(pid) != running {
			bad = append(bad, fmt.Sprintf("%s: %s pid %d %s", in.label, role, pid, map[bool]string{true: "is gone", false: "still alive"}[running]))
		}
	}
	if len(bad) > 0 {
		return map[bool]string{true: "not running", false: "not gone"}[running], strings.Join(bad, "\n")
	}
	return "", ""
}

// grouped lists paths in every hierarchy once per path (groupByPath), a
// line each.
func (r *Runner) grouped(paths []string) string {
	return strings.Join(groupByPath(paths, len(r.host.Hierarchies)), "\n")
}

// want is a placement as the case wrote it, with what base (where a
// relative cgroupsPath goes by default) means here: beneath the caller C
// on v1 and hybrid hosts, beside it (in C's parent) on v2.
func (r *Runner) want(relation, path string) check.Want {
	w := check.Want{Relation: relation, Path: path, Base: "beneath"}
	if r.host.Mode == mode.V2 {
		w.Base = "beside"
	}
	return w
}

// checkFile reads a file of the sandbox's cgroup or of a cgroup reference,
// in every hierarchy the file is in, records the value in read, and
// compares it.
func (r *Runner) checkFile(cs *caseState, f *casefile.FileCheck, in *instance, read *[]string) (string, string) {
	hs, err := r.host.ForFile(f.Name)
	if err != nil {
		return err.Error(), ""
	}
	for _, h := range hs {
		var d string
		if f.Sandbox != "" {
			m, ok := check.Main(in.procs)
			if !ok {
				return "no process observed", ""
			}
			d = m.Cgroups[h.Key]
		} else {
			d = r.resolveRef(cs.caller[h.Key], f.Cgroup)
			if _, err := os.Stat(h.Dir(d)); os.IsNotExist(err) && check.Optional(h.Key) {
				continue // A hierarchy no runtime need manage, as in checkExists.
			}
		}
		b, err := os.ReadFile(filepath.Join(h.Dir(d), f.Name))
		if err != nil {
			return fmt.Sprintf("reading %s in %s:%s: %v", f.Name, h.Name(), d, unwrapErrno(err)), ""
		}
		*read = append(*read, fmt.Sprintf("read %s:%s/%s = %q", h.Name(), d, f.Name, strings.TrimSpace(string(b))))
		if msg, diff := check.File(string(b), f.Equals, f.Contains, f.Empty); msg != "" {
			return fmt.Sprintf("%s:%s/%s: %s", h.Name(), d, f.Name, msg), diff
		}
	}
	return "", ""
}

// checkExists holds a cgroup reference to be a cgroup in every managed
// hierarchy (those a runtime places sandboxes in, check.Optional ones
// excepted) or, with want false, in no hierarchy at all.
func (r *Runner) checkExists(cs *caseState, ref string, want bool) (string, string) {
	hs := r.host.Hierarchies
	if want {
		hs = r.host.Managed()
	}
	var bad, where []string
	for _, h := range hs {
		c, ok := cs.caller[h.Key]
		if !ok || want && check.Optional(h.Key) {
			continue
		}
		p := r.resolveRef(c, ref)
		if st, err := os.Stat(h.Dir(p)); (err == nil && st.IsDir()) != want {
			bad, where = append(bad, h.Name()), append(where, h.Name()+":"+p)
		}
	}
	if len(bad) == 0 {
		return "", ""
	}
	return fmt.Sprintf("%s is %s a cgroup in %s", ref, map[bool]string{true: "not", false: "still"}[want], strings.Join(bad, ", ")), r.grouped(where)
}

// checkRunscLog looks for a line in the debug logs runsc wrote for every
// command on the sandbox's instances.
func (r *Runner) checkRunscLog(cs *caseState, l *casefile.LogCheck, in *instance) (string, string) {
	if cs.rt.Kind != "runsc" {
		return cs.rt.Kind + " writes no runsc debug log", ""
	}
	var found []string
	files, _ := filepath.Glob(filepath.Join(in.logs, "*"))
	if len(files) == 0 {
		return "runsc wrote no debug log into " + in.logs, ""
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err.Error(), ""
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, l.Lacks) {
				found = append(found, in.label+" "+filepath.Base(f)+": "+line)
			}
		}
	}
	if len(found) > 0 {
		return fmt.Sprintf("%d runsc log line(s) contain %q", len(found), l.Lacks), strings.Join(found, "\n")
	}
	return "", ""
}

func unwrapErrno(err error) error {
	if errno := unix.Errno(0); errors.As(err, &errno) {
		return errno
	}
	return err
}

// removeEmptyStep removes the level at ref as an operator would, with
// rmdir and nothing else, in every hierarchy where it is: the kernel
// refuses a cgroup that holds a process or a child cgroup, and the step
// fails naming what holds it. A level already gone passes (the last
// sandbox out may have been the one whose create made it).
func (r *Runner) removeEmptyStep(cs *caseState, ref string) (note, msg, detail string) {
	dirs, err := r.cgroupDirs(cs, ref)
	if err != nil {
		return "", err.Error(), ""
	}
	for _, d := range dirs {
		if c := cs.caller[d.h.Key]; cgroupfs.IsUnder(c, d.rel) {
			return "", fmt.Sprintf("%s is %s:%s, which holds the caller's cgroup %s: remove-empty removes only a level below it", ref, d.h.Name(), d.rel, c), ""
		}
	}
	// One line per cgroup and what holds it, its hierarchies named.
	var removed, absent, lines []string
	busy := map[string][]string{}
	n := 0
	for _, d := range dirs {
		err := unix.Rmdir(d.h.Dir(d.rel))
		switch {
		case err == nil:
			removed = append(removed, d.h.Name())
		case err == unix.ENOENT:
			absent = append(absent, d.h.Name())
		default:
			n++
			k := d.rel + "\x00" + err.Error() + holding(d.h.Dir(d.rel))
			if busy[k] == nil {
				lines = append(lines, k)
			}
			busy[k] = append(busy[k], d.h.Name())
		}
	}
	note = "removed in: " + report.OrNone(removed) + "; absent in: " + report.OrNone(absent)
	if n == 0 {
		return note, "", ""
	}
	for i, k := range lines {
		rel, what, _ := strings.Cut(k, "\x00")
		hs := strings.Join(busy[k], " ")
		if len(busy[k]) == len(dirs) {
			hs = fmt.Sprintf("all %d hierarchies", len(dirs))
		}
		lines[i] = fmt.Sprintf("%s (%s): %s", rel, hs, what)
	}
	return note, fmt.Sprintf("%s is not empty: rmdir refused in %d of %d hierarchies", ref, n, len(dirs)), strings.Join(lines, "\n")
}

// holding names what a cgroup directory holds: its processes (with their
// names) and its child cgroups.
func holding(dir string) string {
	var what []string
	pids, _ := cgroupfs.ReadProcs(dir)
	for _, pid := range pids {
		what = append(what, strings.TrimSpace(fmt.Sprintf("pid %d %s", pid, comm(pid))))
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			what = append(what, "child cgroup "+e.Name())
		}
	}
	if len(what) == 0 {
		return ""
	}
	return "; holds " + strings.Join(what, ", ")
}
