package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/harness/casefile"
)

// defaultStall is how long a guest may go without progress (vmrun.Watchdog)
// before -time-scale multiplies it: under TCG (scale 10) 20 minutes. The
// longest case x runtime of the evidence runs under TCG, with no case line
// in between, took 470 s (shared-ancestor-race, an 8-minute case, which
// gets its own bound); the longest of a case with the default timeout
// took 200 s (client-slow-state [kubelet-systemd]).
const defaultStall = 2 * time.Minute

// stallBound is the Watchdog's bound for each case: the base bound or the
// case's own timeout, whichever is longer, for each of its trials, scaled
// by the time scale, as the harness scales the case's timeout. Between
// cases, and for a case it does not know, the base bound scaled. A base
// of 0 or less turns the Watchdog off.
func stallBound(base time.Duration, scale float64, cases []*casefile.Case, trials int) func(running string) time.Duration {
	if base <= 0 {
		return nil
	}
	scaled := func(d time.Duration) time.Duration { return time.Duration(float64(d) * scale) }
	perCase := map[string]time.Duration{}
	for _, c := range cases {
		n := max(c.Trials, 1)
		if trials > 0 {
			n = trials
		}
		perCase[c.Name] = scaled(max(base, c.Timeout.Duration)) * time.Duration(n)
	}
	return func(running string) time.Duration {
		name, _, _ := strings.Cut(running, " ")
		if d, ok := perCase[name]; ok {
			return d
		}
		return scaled(base)
	}
}

// trialsArg is the -trials the harness gets in args (0: none).
func trialsArg(args string) int {
	f := strings.Fields(args)
	for i, a := range f {
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "trials" || !strings.HasPrefix(a, "-") {
			continue
		}
		if !hasVal && i+1 < len(f) {
			val = f[i+1]
		}
		n, _ := strconv.Atoi(val)
		return n
	}
	return 0
}

// watchdogBound is stallBound for this run: the harness's cases, or none
// when the VMs run no harness (-command, the stand-in): no case lines to
// follow.
func watchdogBound(o options, harness bool) func(string) time.Duration {
	if o.stall <= 0 || !harness {
		return nil
	}
	cases, err := casefile.LoadDir(o.cases)
	if err != nil {
		fmt.Printf("matrix: the stall bound is %s for every case (the case files did not load: %v)\n", time.Duration(float64(o.stall)*o.timeScale), err)
		cases = nil
	}
	return stallBound(o.stall, o.timeScale, cases, trialsArg(o.harnessArgs))
}

// rerunStalled runs attempt, and once more when the guest stalled. The
// rerun is the host's run, the first attempt kept in its Earlier, so both
// are in the report and a stall is never hidden (Matrix.Unexpected lists
// it). keep is told of the first attempt before the rerun (to move its
// folder aside).
func rerunStalled(attempt func() report.HostRun, keep func(first *report.HostRun) error) report.HostRun {
	first := attempt()
	if first.Status != report.Stalled {
		return first
	}
	first.Attempt = 1
	if err := keep(&first); err != nil {
		first.Problem += "\nnot rerun: " + err.Error()
		return first
	}
	second := attempt()
	second.Attempt = 2
	second.Earlier = append([]report.HostRun{first}, second.Earlier...)
	return second
}

// keepAttempt moves the folder of a mode's first attempt to
// MODE.attempt1, so that the rerun gets a fresh MODE.
func keepAttempt(out, mode string) error {
	dst := filepath.Join(out, mode+".attempt1")
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return os.Rename(filepath.Join(out, mode), dst)
}
