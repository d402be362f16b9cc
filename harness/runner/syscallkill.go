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

	"github.com/runsc-cgroups/cgconform/harness/casefile"
	"github.com/runsc-cgroups/cgconform/harness/cgroupfs"
	"github.com/runsc-cgroups/cgconform/harness/mode"
	"golang.org/x/sys/unix"
)

// A kill at a system call (kill: {syscall, nth}) runs the runtime's create
// under strace, which SIGKILLs it at the nth call of that system call on
// the paths the create will make: its cgroup directories in every
// hierarchy and its state files. Swept over nth = 1, 2, ... (nth: trial)
// until a create runs to its end, it visits every such kill point.
//
// strace counts when=N per traced thread, so a kill point is "the nth such
// call on the thread that gets there first"; -P restricts both the tracing
// and the injection to the paths; --detach-on=execve lets the gofer and
// sandbox, which runsc re-executes from itself, run untraced (a traced
// sandbox cannot boot).

// pathless are system calls with no path: strace watches every one of the
// create's (its threads and the forks of its gofer and sandbox), not only
// those on the create's paths.
var pathless = map[string]bool{"clone": true, "clone3": true, "fork": true, "vfork": true}

// straceArgv is the command that runs runtime argv under strace, killing
// it at the nth call of syscall on paths (every such call if the system
// call takes no path), or with hold > 0 holding every such call that long
// instead; strace's own record goes to out.
func straceArgv(strace, out, syscall string, nth int, hold time.Duration, paths, argv []string) []string {
	c := []string{strace, "-f", "--detach-on=execve", "-qq", "-o", out}
	if !pathless[syscall] {
		for _, p := range paths {
			c = append(c, "-P", p)
		}
	}
	inject := fmt.Sprintf("inject=%s:signal=KILL:when=%d", syscall, nth)
	if hold > 0 {
		inject = fmt.Sprintf("inject=%s:delay_enter=%d:when=1+", syscall, hold.Microseconds())
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
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
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
	var spec struct {
		Linux *struct {
			CgroupsPath string `json:"cgroupsPath"`
		} `json:"linux"`
	}
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

// syscallKillArgv wraps the create argv of step st on instance in in
// strace (see straceArgv), its record at the returned path.
func (r *Runner) syscallKillArgv(cs *caseState, in *instance, st *casefile.Step, argv []string) ([]string, string, error) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		return nil, "", fmt.Errorf("a syscall kill runs the create under strace: %w (apt-get install strace)", err)
	}
	paths, err := r.sweepPaths(cs, in)
	if err != nil {
		return nil, "", err
	}
	out := filepath.Join(cs.logDir, fmt.Sprintf("%s.%s.strace", in.id, safeName(st.ID)))
	if st.Kill.Hold.Duration > 0 {
		return straceArgv(strace, out, st.Kill.Syscall, 0, r.scaled(st.Kill.Hold.Duration), paths, argv), out, nil
	}
	return straceArgv(strace, out, st.Kill.Syscall, st.Kill.Nth.At(cs.trial), 0, paths, argv), out, nil
}

// killHeld kills a held create (kill: {hold, started}) two thirds into the
// hold that follows the start of runsc's k.Started process for in: the
// create is then inside the held save that records that process's PID.
// The create is strace's tracee, the process whose command line is argv
// (strace dies with it). stop ends the watch and says whom it killed ("":
// nobody, the process never started).
func (r *Runner) killHeld(in *instance, k *casefile.Kill, argv []string) (stop func() string) {
	done, killed := make(chan struct{}), make(chan string, 1)
	go func() {
		for runscProcs(listPids(), in.root, in.id, in.bundle)[k.Started] == 0 {
			select {
			case <-done:
				killed <- ""
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		select {
		case <-done:
			killed <- ""
			return
		case <-time.After(r.scaled(k.Hold.Duration) * 2 / 3):
		}
		for _, p := range listPids() {
			if slices.Equal(cmdline(p), argv) && unix.Kill(p, unix.SIGKILL) == nil {
				killed <- fmt.Sprintf("PID %d", p)
				return
			}
		}
		killed <- ""
	}()
	return func() string { close(done); return <-killed }
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
