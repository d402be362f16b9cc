package vmrun

import (
	"fmt"
	"regexp"
	"sync"
	"time"
)

// Watchdog tells a guest that works from one that has stopped making
// progress, from its console alone. A line is progress when the harness
// prints it (a case starting or finishing), when userspace prints it, or
// when the kernel prints it while no lockup has been reported since the
// last userspace line. Kernel lockup and stall reports (soft lockups, RCU
// stalls, hung tasks) and whatever the kernel prints after them are not
// progress: a guest whose harness is stuck in a soft lockup prints its
// backtraces every few seconds, and must still be ended.
//
// The guest has stalled when no progress came for longer than Bound of the
// case running (the harness's "case [context] runtime", "" before the first
// case and between cases). The Watchdog keeps no clock of its own: Line and
// Stalled take the time, so that tests need no wall clock.
type Watchdog struct {
	// Bound is how long the guest may go without progress while running
	// is the case that runs; 0 or less never stalls.
	Bound func(running string) time.Duration

	mu       sync.Mutex
	last     time.Time // the last progress (or the start)
	lastLine string    // the line that was the last progress
	running  string
	lockup   string // the kernel's report of a lockup, since the last userspace line
}

// NewWatchdog starts watching at start.
func NewWatchdog(start time.Time, bound func(running string) time.Duration) *Watchdog {
	return &Watchdog{Bound: bound, last: start}
}

// restart makes now the start: no progress is due before now + bound.
func (w *Watchdog) restart(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = now
}

// printkRE is the timestamp the kernel puts before each console line
// (CONFIG_PRINTK_TIME, on in Debian's kernels).
var printkRE = regexp.MustCompile(`^\[\s*\d+\.\d+\]`)

// lockupRE matches the kernel's reports that a CPU or task made no
// progress (kernel/watchdog.c, kernel/rcu/tree_stall.h, kernel/hung_task.c).
var lockupRE = regexp.MustCompile(`soft lockup|hard LOCKUP|self-detected stall|detected stalls on CPUs|rcu: INFO: |blocked for more than \d+ seconds|Kernel panic`)

// Line notes a console line seen at now and says whether it is progress.
func (w *Watchdog) Line(line string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	started, done := ParseProgress(line)
	switch {
	case started != "":
		w.running = started
	case done != "":
		w.running = ""
	}
	progress := true
	switch {
	case started != "" || done != "" || !printkRE.MatchString(line):
		w.lockup = ""
	case lockupRE.MatchString(line):
		w.lockup = line
		progress = false
	case w.lockup != "":
		progress = false
	}
	if progress {
		w.last, w.lastLine = now, line
	}
	return progress
}

// Stall is a guest that made no progress for longer than its bound.
type Stall struct {
	Silent, Bound time.Duration
	// Running is the case that ran ("" if none); LastLine the last line
	// that was progress; Lockup the kernel's last lockup report since.
	Running, LastLine, Lockup string
}

func (s *Stall) String() string {
	msg := fmt.Sprintf("no progress for %s (the bound is %s", s.Silent.Round(time.Second), s.Bound)
	if s.Running != "" {
		msg += " while " + s.Running + " runs"
	}
	msg += ")"
	if s.Lockup != "" {
		msg += "; the kernel reported: " + s.Lockup
	}
	if s.LastLine != "" {
		msg += "; last progress: " + s.LastLine
	}
	return msg
}

// Stalled says whether, at now, the guest has gone without progress for
// longer than its bound, and if so how.
func (w *Watchdog) Stalled(now time.Time) *Stall {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.Bound == nil {
		return nil
	}
	bound := w.Bound(w.running)
	silent := now.Sub(w.last)
	if bound <= 0 || silent <= bound {
		return nil
	}
	return &Stall{Silent: silent, Bound: bound, Running: w.running, LastLine: w.lastLine, Lockup: w.lockup}
}
