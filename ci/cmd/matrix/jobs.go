package main

import (
	"context"
	"sync"
	"time"

	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/ci/vmimage"
)

// runModes runs one VM per mode, at most jobs at a time, in the order given,
// and returns their results in that order. run also learns how many modes
// have not finished yet (its own included), for its share of a budget. A
// mode not yet started when ctx ends is not booted.
func runModes(ctx context.Context, jobs int, modes []vmimage.Mode, run func(i int, m vmimage.Mode, unfinished int) report.HostRun) []report.HostRun {
	out := make([]report.HostRun, len(modes))
	for i, m := range modes { // until it runs
		out[i] = report.HostRun{Host: mode.Host(m.Name), About: m.About, Status: report.NoReport, Problem: "not booted: the run was interrupted"}
	}
	slots := make(chan struct{}, jobs)
	var mu sync.Mutex
	finished := 0
	var wg sync.WaitGroup
	for i, m := range modes {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		mu.Lock()
		unfinished := len(modes) - finished
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = run(i, m, unfinished)
			mu.Lock()
			finished++
			mu.Unlock()
			<-slots
		}()
	}
	wg.Wait()
	return out
}

// budgetShare is the time limit of a VM starting now when left remains of
// the budget and unfinished modes (running ones and this one included) run
// jobs at a time: an equal share per round, never under a minute.
func budgetShare(left time.Duration, unfinished, jobs int) time.Duration {
	rounds := (unfinished + jobs - 1) / jobs
	share := left / time.Duration(rounds)
	return max(share, time.Minute)
}
