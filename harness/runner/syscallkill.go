package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/harness/casefile"
	"golang.org/x/sys/unix"
)

// A kill at a system call (kill: {syscall, nth}) runs the runtime's create
// under strace, which holds every call of that system call on the paths the
// create will make (its cgroup directories in every hierarchy and its state
// files) for a moment, and the harness SIGKILLs the create while the nth
// such call, counted over all its threads, is held: strace writes a call's
// start to its record before the hold. Swept over nth = 1, 2, ... (nth:
// trial) until a create runs to its end, it visits every such kill point.
// (strace's own when=N counts per thread: a sweep with it missed the kill
// points a thread did not reach first.) clone and the other pathless calls
// keep strace's own kill at the nth call per thread: held, they make the
// Go runtime start thread after thread (8 clones became 329).
//
// -P restricts the tracing and the hold to the paths; --detach-on=execve
// lets the gofer and sandbox, which runsc re-executes from itself, run
// untraced (a traced sandbox cannot boot).

// sweepHold is how long strace holds each call of a swept system call:
// time enough for the harness to see its start in the record and kill.
const sweepHold = 30 * time.Millisecond

// pathless are system calls with no path: strace watches every one of the
// create's (its threads and the forks of its gofer and sandbox), not only
// those on the create's paths.
var pathless = map[string]bool{"clone": true, "clone3": true, "fork": true, "vfork": true}

// straceArgv is the command that runs runtime argv under strace, holding
// every call of syscall on paths for hold, or with nth > 0 (a pathless
// system call: every such call counts) killing it at the nth on a thread,
// or with errno failing every such call with it; strace's own record goes
// to out.
func straceArgv(strace, out, syscall, errno string, nth int, hold time.Duration, paths, argv []string) []string {
	c := []string{strace, "-f", "--detach-on=execve", "-qq", "-o", out}
	if !pathless[syscall] {
		for _, p := range paths {
			c = append(c, "-P", p)
		}
	}
	inject := fmt.Sprintf("inject=%s:delay_enter=%d:when=1+", syscall, hold.Microseconds())
	switch {
	case nth > 0:
		inject = fmt.Sprintf("inject=%s:signal=KILL:when=%d", syscall, nth)
	case errno != "":
		inject = fmt.Sprintf("inject=%s:error=%s:when=1+", syscall, errno)
	}
	c = append(c, "-e", "trace="+syscall, "-e", inject)
	return append(c, argv...)
}

// createdLevels are the cgroups (paths in one hierarchy) a create of
// cgroupsPath may make there, given base, where a relative path lands, and
// the case's own cgroup caseRoot: every level of a relative path below
// base, and every level of an absolute one below caseRoot (all of them if
// it is not there: a throwaway case's path at the root).
func createdLevels(cgroupsPath, base, caseRoot string) []string {
	if cgroupsPath == "" {
		return nil
	}
	var top, full string
	if path.IsAbs(cgroupsPath) {
		full = path.Clean(cgroupsPath)
		top = "/"
		if cgroupfs.IsUnder(full, caseRoot) {
			top = path.Clean("/" + caseRoot)
		}
	} else {
		top = path.Clean("/" + base)
		// Lexically clamped, as runc's CleanPath does: no level above base.
		full = path.Join(top, path.Clean("/"+cgroupsPath))
	}
	var out []string
	for p := full; p != top && p != "/" && cgroupfs.IsUnder(p, top); p = path.Dir(p) {
		out = append(out, p)
	}
	slices.Reverse(out)
	return out
}

// stateFiles are the files of a container's state in the runtime's --root
// that a create makes: runsc's state, its temporary copy and its lock;
// runc's and crun's state folder and its state file.
func stateFiles(kind, root, id string) []string {
	switch kind {
	case "runsc":
		base := filepath.Join(root, id+"_sandbox:"+id)
		return []string{base + ".state", base + ".state.tmp", base + ".lock"}
	case "runc":
		return []string{filepath.Join(root, id), filepath.Join(root, id, "state.json")}
	case "crun":
		return []string{filepath.Join(root, id), filepath.Join(root, id, "status")}
	}
	return nil
}

// bundleCgroupsPath reads linux.cgroupsPath from the bundle's config.json,
// the spec the create reads.
func bundleCgroupsPath(bundle string) (string, error) {
	b, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		return "", err
	}
	var spec specs.Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		return "", fmt.Errorf("reading %s/config.json: %w", bundle, err)
	}
	if spec.Linux == nil {
		return "", nil
	}
	return spec.Linux.CgroupsPath, nil
}

// sweepPaths are the paths a create of instance in makes, as the runtime
// sees them from C: the levels of its cgroupsPath in every hierarchy where
// the context has a caller cgroup, and its state files.
func (r *Runner) sweepPaths(cs *caseState, in *instance) ([]string, error) {
	if !slices.Contains(casefile.SyscallKillContexts, cs.cx) || cs.cgroupns || cs.from != nil || cs.client != nil {
		return nil, fmt.Errorf("a syscall kill runs only in the %s contexts, where the runtime sees the host's cgroup paths from C", strings.Join(casefile.SyscallKillContexts, ", "))
	}
	cp, err := bundleCgroupsPath(in.bundle)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, h := range r.host.Hierarchies {
		c, ok := cs.caller[h.Key]
		if !ok {
			continue
		}
		base := c
		if r.host.Mode == mode.V2 {
			base = path.Dir(c)
		}
		for _, m := range append([]string{h.Mount}, mountAliases(h.Mount)...) {
			for _, l := range createdLevels(cp, base, cs.root) {
				out = append(out, cgroupfs.Hierarchy{Mount: m}.Dir(l))
			}
		}
	}
	return append(out, stateFiles(cs.rt.Kind, in.root, in.id)...), nil
}

// mountAliases are the symlinks beside a hierarchy's mount that lead to
// it (/sys/fs/cgroup/cpu -> cpu,cpuacct): strace matches a path as the
// runtime wrote it, and a runtime may write it through one.
func mountAliases(mount string) []string {
	dir := filepath.Dir(mount)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if t, err := filepath.EvalSymlinks(p); err == nil && t == mount {
			out = append(out, p)
		}
	}
	return out
}

// straceWrap wraps the runtime command argv of step st on instance in in
// strace (see straceArgv), its record at the returned path: for a syscall
// kill of the create, or for st.Inject, every call of its system call
// failing with its error, on the runtime's state files of in (paths:
// state) or anywhere.
func (r *Runner) straceWrap(cs *caseState, in *instance, st *casefile.Step, argv []string) ([]string, string, error) {
	what := "a syscall kill runs the create"
	if st.Inject != nil {
		what = "an injected error runs the command"
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		return nil, "", fmt.Errorf("%s under strace: %w (apt-get install strace)", what, err)
	}
	out := filepath.Join(cs.logDir, fmt.Sprintf("%s.%s.strace", in.id, safeName(st.ID)))
	if k := st.Inject; k != nil {
		var paths []string
		if k.Paths == "state" {
			paths = stateFiles(cs.rt.Kind, in.root, in.id)
		}
		return straceArgv(strace, out, k.Syscall, k.Error, 0, 0, paths, argv), out, nil
	}
	paths, err := r.sweepPaths(cs, in)
	if err != nil {
		return nil, "", err
	}
	hold, nth := r.scaled(sweepHold), 0
	switch {
	case st.Kill.Hold.Duration > 0:
		hold = r.scaled(st.Kill.Hold.Duration)
	case pathless[st.Kill.Syscall]:
		nth = st.Kill.Nth.At(cs.trial)
	}
	return straceArgv(strace, out, st.Kill.Syscall, "", nth, hold, paths, argv), out, nil
}

// injectedNote says how many calls strace's record at straced shows
// failed on purpose.
func injectedNote(k *casefile.Inject, straced string) string {
	b, _ := os.ReadFile(straced)
	where := ""
	if k.Paths == "state" {
		where = " on the state files"
	}
	return fmt.Sprintf("strace failed %d %s call(s)%s with %s (record: %s)", strings.Count(string(b), "(INJECTED)"), k.Syscall, where, k.Error, straced)
}

// killTraced SIGKILLs the create of step st under strace (the tracee: the
// process whose command line is argv, its record at straced) at its kill
// point: the nth call's start in the record, or for a held kill two thirds
// into the hold after runsc's k.Started process for in appears. stop ends
// the watch and says whom it killed ("": nobody).
func (r *Runner) killTraced(cs *caseState, in *instance, k *casefile.Kill, argv []string, straced string) (stop func() string) {
	if k.Hold.Duration == 0 && pathless[k.Syscall] {
		return func() string { return "" } // strace kills it (straceArgv)
	}
	ready, wait, poll := func() bool {
		b, _ := os.ReadFile(straced)
		return callStarts(string(b)) >= k.Nth.At(cs.trial)
	}, time.Duration(0), time.Millisecond
	if k.Hold.Duration > 0 {
		ready = func() bool { return runscProcs(in.root, in.id, in.bundle)[k.Started] != 0 }
		wait, poll = r.scaled(k.Hold.Duration)*2/3, 20*time.Millisecond
	}
	done, killed := make(chan struct{}), make(chan string, 1)
	go func() {
		tracee := 0
		for tracee == 0 || !ready() {
			if tracee == 0 {
				tracee = pidOf(argv)
			}
			select {
			case <-done:
				killed <- ""
				return
			case <-time.After(poll):
			}
		}
		select {
		case <-done:
			killed <- ""
			return
		case <-time.After(wait):
		}
		if slices.Equal(cmdline(tracee), argv) && unix.Kill(tracee, unix.SIGKILL) == nil {
			killed <- fmt.Sprintf("PID %d", tracee)
			return
		}
		killed <- ""
	}()
	return func() string { close(done); return <-killed }
}

// pidOf is the process among the runner's descendants whose command line
// is argv, 0 if none: a process the runner did not start is never chosen,
// whatever its command line.
func pidOf(argv []string) int {
	for _, p := range descendants(os.Getpid()) {
		if slices.Equal(cmdline(p), argv) {
			return p
		}
	}
	return 0
}

// callStarts counts the calls an strace record (of one system call) shows
// started, over all threads: every line but signals (---), exits (+++) and
// resumptions (<... resumed>); the last may be a call still held.
func callStarts(record string) int {
	n := 0
	for _, l := range strings.Split(record, "\n") {
		_, text, ok := strings.Cut(l, " ")
		text = strings.TrimSpace(text)
		if ok && text != "" && !strings.HasPrefix(text, "---") && !strings.HasPrefix(text, "+++") && !strings.HasPrefix(text, "<...") {
			n++
		}
	}
	return n
}

// killedCall is the call strace's record shows the SIGKILL at, or "": the
// last traced call that never returned ("= ?", or unfinished when the
// process died), put together again when another thread's line came
// between its start and its end. Signal (---) and exit (+++) lines are
// not calls.
func killedCall(record string) string {
	type call struct {
		at   int
		text string
	}
	open := map[string]call{} // pid -> its call in progress
	var killed call
	for i, l := range strings.Split(record, "\n") {
		pid, text, ok := strings.Cut(l, " ")
		text = strings.TrimSpace(text)
		if !ok || strings.HasPrefix(text, "---") || strings.HasPrefix(text, "+++") {
			continue
		}
		if start, unfinished := strings.CutSuffix(text, "<unfinished ...>"); unfinished {
			open[pid] = call{i, strings.TrimSpace(start)}
			continue
		}
		c := call{i, text}
		if _, rest, ok := strings.Cut(text, " resumed>"); ok && strings.HasPrefix(text, "<... ") {
			c = call{open[pid].at, open[pid].text + strings.TrimSpace(rest)}
		}
		delete(open, pid)
		if strings.HasSuffix(c.text, "= ?") && c.at >= killed.at {
			killed = c
		}
	}
	for _, c := range open { // never resumed: the process died in it
		if c.at >= killed.at {
			killed = c
		}
	}
	return strings.Join(strings.Fields(killed.text), " ")
}

// ordinal is 1st, 2nd, 3rd, 4th, 11th...
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprint(n) + suffix
}

// safeName keeps a step ID usable in a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
}
