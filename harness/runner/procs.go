package runner

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runsc-cgroups/cgconform/base/proc"
)

// reaper makes the harness a child subreaper, so every process a runtime
// detaches (sandboxes, gofers, container inits) is re-parented to the
// harness. That is how the harness knows which processes it started, and
// it never kills anything else. Zombies not owned by an exec.Cmd are
// reaped here.
type reaper struct {
	mu      sync.Mutex
	managed map[int]bool
	stop    chan struct{}
	done    chan struct{}
}

func newReaper() (*reaper, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, err
	}
	r := &reaper{managed: map[int]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go r.loop()
	return r, nil
}

func (r *reaper) loop() {
	defer close(r.done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.reap()
		}
	}
}

func (r *reaper) reap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	me := os.Getpid()
	for _, s := range proc.All() {
		if !r.managed[s.PID] && s.PPID == me && s.State == 'Z' {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(s.PID, &ws, syscall.WNOHANG, nil)
		}
	}
}

// start starts cmd with the reaper paused and registers its PID until
// release, so the reaper never steals an exec.Cmd's exit status: the
// harness is a child subreaper and would otherwise take the exit status of
// its direct children (waitid: no child processes, seen under load). The
// clients start their daemons and commands through it too.
func (r *reaper) start(cmd *exec.Cmd) (release func(), err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return func() {}, err
	}
	pid := cmd.Process.Pid
	r.managed[pid] = true
	return func() {
		r.mu.Lock()
		delete(r.managed, pid)
		r.mu.Unlock()
	}, nil
}

// output runs a host command (systemd-run, systemctl) to completion with
// the reaper kept off it, and returns its combined output: an unregistered
// child's exit status would otherwise be reaped first (waitid: ECHILD, seen
// in the systemd-v2 VM).
func (r *reaper) output(cmd *exec.Cmd) ([]byte, error) {
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	release, err := r.start(cmd)
	if err != nil {
		return nil, err
	}
	defer release()
	err = cmd.Wait()
	return buf.Bytes(), err
}

func (r *reaper) close() {
	close(r.stop)
	<-r.done
	r.reap()
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	s, err := proc.ReadStat(pid)
	return err == nil && !s.Gone()
}

// descendants returns the PID of every live process below root (not root
// itself).
func descendants(root int) []int {
	var out []int
	for _, p := range descendantProcs(root) {
		out = append(out, p.PID)
	}
	return out
}

// descendantProcs is descendants named by PID and start time as listed:
// what a later kill may signal.
func descendantProcs(root int) []proc.Process {
	var out []proc.Process
	for _, s := range proc.Descendants(proc.All(), root) {
		if !s.Gone() {
			out = append(out, proc.Process{PID: s.PID, Start: s.Start})
		}
	}
	return out
}

func cmdline(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

func comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

// runscProcs finds the runsc sandbox and gofer processes serving id in
// the state folder root, among the harness's descendants.
func runscProcs(root, id, bundle string) map[string]int {
	return matchRunsc(descendants(os.Getpid()), cmdline, root, id, bundle)
}

// matchRunsc is runscProcs with the command lines read through argv. A
// process that names a bundle must name this one: two sandboxes in two
// mount namespaces share a --root path and an ID, never a bundle.
func matchRunsc(pids []int, argv func(int) []string, root, id, bundle string) map[string]int {
	out := map[string]int{}
	for _, p := range pids {
		args := argv(p)
		if len(args) < 2 || args[len(args)-1] != id {
			continue
		}
		role := ""
		switch filepath.Base(args[0]) {
		case "runsc-sandbox":
			role = "sandbox"
		case "runsc-gofer":
			role = "gofer"
		default:
			continue
		}
		// root and bundle "": an engine's container, its ID unique on
		// the host.
		if (root == "" || flagIs(args, "root", root)) && (bundle == "" || !hasFlag(args, "bundle") || flagIs(args, "bundle", bundle)) {
			out[role] = p
		}
	}
	return out
}

// flagIs reports whether args set --name (or -name) to value.
func flagIs(args []string, name, value string) bool {
	for i, a := range args {
		for _, f := range []string{"--" + name, "-" + name} {
			if a == f+"="+value || a == f && i+1 < len(args) && args[i+1] == value {
				return true
			}
		}
	}
	return false
}

// hasFlag reports whether args set --name (or -name) at all.
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		for _, f := range []string{"--" + name, "-" + name} {
			if a == f || strings.HasPrefix(a, f+"=") {
				return true
			}
		}
	}
	return false
}

// ours names pid by its start time while it is one of the harness's live
// descendants, which a PID observed earlier may no longer be; else nil.
func ours(pid int) []proc.Process {
	p, err := proc.Identify(pid)
	if err != nil || !slices.Contains(descendants(os.Getpid()), pid) {
		return nil
	}
	return []proc.Process{p}
}

// killAndWait SIGKILLs ps (which the harness started) and waits until
// they are gone or timeout passes. A PID that went to another process
// since it was listed is left alone.
func killAndWait(ps []proc.Process, timeout time.Duration) []int {
	for _, p := range ps {
		_ = p.Signal(unix.SIGKILL)
	}
	deadline := time.Now().Add(timeout)
	var left []int
	for _, p := range ps {
		if !p.Wait(nil, time.Until(deadline)) {
			left = append(left, p.PID)
		}
	}
	return left
}
