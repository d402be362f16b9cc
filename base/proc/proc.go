// Package proc reads /proc/PID/stat and stops the processes the harness
// started, named by PID and start time, never by command line: a PID that
// was recycled for someone else's process is never signalled.
package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Stat is what /proc/PID/stat says about one process.
type Stat struct {
	PID   int
	Comm  string
	State byte // R, S, D, Z, X...
	PPID  int
	Pgrp  int
	// Start is when the process started, in clock ticks after boot:
	// with PID, it names one process for the life of the machine.
	Start uint64
	// CPU is the user and system time of its threads and of the children
	// it waited for (utime+stime+cutime+cstime), in clock ticks.
	CPU uint64
}

// TicksPerSecond is the clock tick of /proc/PID/stat (USER_HZ, 100 in
// Linux's user ABI).
const TicksPerSecond = 100

// Gone reports whether the process has ended (a zombie or being reaped).
func (s Stat) Gone() bool { return s.State == 'Z' || s.State == 'X' }

// ParseStat parses one /proc/PID/stat line. comm may hold spaces and
// parentheses, so it ends at the last ')'.
func ParseStat(line string) (Stat, error) {
	open, close := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || close < open {
		return Stat{}, fmt.Errorf("malformed stat %q", line)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil {
		return Stat{}, fmt.Errorf("malformed stat pid in %q", line)
	}
	// After comm: state (field 3), ppid, pgrp, ... starttime (field 22).
	f := strings.Fields(line[close+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("malformed stat %q", line)
	}
	s := Stat{PID: pid, Comm: line[open+1 : close], State: f[0][0]}
	if s.PPID, err = strconv.Atoi(f[1]); err != nil {
		return Stat{}, fmt.Errorf("malformed stat ppid in %q", line)
	}
	if s.Pgrp, err = strconv.Atoi(f[2]); err != nil {
		return Stat{}, fmt.Errorf("malformed stat pgrp in %q", line)
	}
	if s.Start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return Stat{}, fmt.Errorf("malformed stat starttime in %q", line)
	}
	for _, t := range f[11:15] {
		n, err := strconv.ParseInt(t, 10, 64) // cutime and cstime are signed
		if err != nil {
			return Stat{}, fmt.Errorf("malformed stat times in %q", line)
		}
		s.CPU += uint64(max(n, 0))
	}
	return s, nil
}

// ReadStat reads /proc/PID/stat.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(string(b))
}

// All reads every process of the machine; those that end while it reads
// are left out.
func All() []Stat {
	ents, _ := os.ReadDir("/proc")
	var out []Stat
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := ReadStat(pid); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// Process is one process, named by PID and start time.
type Process struct {
	PID   int
	Start uint64
}

// ErrGone says the process has ended (or its PID names another one now).
var ErrGone = errors.New("process gone")

// Identify names the process pid is now. Call it for a child before
// anything reaps it, so the PID cannot have been recycled.
func Identify(pid int) (Process, error) {
	s, err := ReadStat(pid)
	if err != nil {
		return Process{}, err
	}
	return Process{PID: pid, Start: s.Start}, nil
}

// stat is p's /proc entry, ErrGone if its PID names another process now.
func (p Process) stat() (Stat, error) {
	s, err := ReadStat(p.PID)
	if err != nil || s.Start != p.Start {
		return Stat{}, ErrGone
	}
	return s, nil
}

// Alive reports whether p still runs (not a zombie).
func (p Process) Alive() bool {
	s, err := p.stat()
	return err == nil && !s.Gone()
}

// Signal sends sig to p and to nothing else. Where the kernel has
// pidfd_open (Linux 5.3), a pidfd is opened and p's start time checked
// after: the pidfd holds that process, so the signal cannot reach a
// process that got the PID later. Without pidfds, kill(2) follows the
// start-time check at once (the PID could only be recycled in between).
func (p Process) Signal(sig unix.Signal) error {
	if p.PID <= 0 {
		return ErrGone
	}
	fd, err := unix.PidfdOpen(p.PID, 0)
	switch {
	case err == nil:
		defer unix.Close(fd)
		if _, err := p.stat(); err != nil {
			return err
		}
		if err := unix.PidfdSendSignal(fd, sig, nil, 0); errors.Is(err, unix.ESRCH) {
			return ErrGone
		} else if !errors.Is(err, unix.ENOSYS) {
			return err
		}
	case errors.Is(err, unix.ESRCH):
		return ErrGone
	}
	if _, err := p.stat(); err != nil {
		return err
	}
	if err := unix.Kill(p.PID, sig); errors.Is(err, unix.ESRCH) {
		return ErrGone
	} else {
		return err
	}
}

// Wait waits until p has ended (exited closed, when not nil; else p's
// /proc entry gone, a zombie, or another process's) or timeout passed,
// and reports whether it ended.
func (p Process) Wait(exited <-chan struct{}, timeout time.Duration) bool {
	deadline := time.After(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if exited == nil && !p.Alive() {
			return true
		}
		select {
		case <-exited:
			return true
		case <-deadline:
			return false
		case <-tick.C:
		}
	}
}

// Stop ends p: SIGTERM, then SIGKILL if it has not ended after grace;
// it waits for p (see Wait) up to grace more after SIGKILL. killed says
// SIGKILL was sent; err that p was still there after it.
func (p Process) Stop(grace time.Duration, exited <-chan struct{}) (killed bool, err error) {
	_ = p.Signal(unix.SIGTERM)
	if p.Wait(exited, grace) {
		return false, nil
	}
	_ = p.Signal(unix.SIGKILL)
	if !p.Wait(exited, grace) {
		return true, fmt.Errorf("process %d did not end %s after SIGKILL", p.PID, grace)
	}
	return true, nil
}

// Descendants returns, from all, every process below the roots (not the
// roots themselves), by parent PID.
func Descendants(all []Stat, roots ...int) []Stat {
	children := map[int][]Stat{}
	for _, s := range all {
		children[s.PPID] = append(children[s.PPID], s)
	}
	seen := map[int]bool{}
	var out []Stat
	var walk func(int)
	walk = func(pid int) {
		for _, c := range children[pid] {
			if !seen[c.PID] {
				seen[c.PID] = true
				out = append(out, c)
				walk(c.PID)
			}
		}
	}
	for _, r := range roots {
		seen[r] = true
	}
	for _, r := range roots {
		walk(r)
	}
	return out
}
