package bench

import (
	"strings"
	"testing"
)

func stats(median float64) *PairStats {
	return &PairStats{Pairs: 20, Ratio: Summary{N: 20, Median: median, Q1: median - 0.01, Q3: median + 0.01}}
}

func TestStartupTarget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		r      StartupResult
		status string
		why    string
	}{
		{"under", StartupResult{Stats: stats(1.01)}, Met, ""},
		{"exactly the limit", StartupResult{Stats: stats(1.05)}, Met, ""},
		{"over", StartupResult{Stats: stats(1.051)}, Missed, "1.051 > 1.05"},
		{"default under 2 %", StartupResult{Variant: StartupVariant{Name: "default"}, Stats: stats(1.02)}, Met, ""},
		{"default over 2 %", StartupResult{Variant: StartupVariant{Name: "default"}, Stats: stats(1.03)}, Missed, "1.030 > 1.02"},
		{"nested keeps 5 %", StartupResult{Variant: StartupVariant{Name: "nested"}, Stats: stats(1.03)}, Met, ""},
		{"skipped", StartupResult{Skipped: "no flag"}, NotMeasured, "no flag"},
		{"failed run", StartupResult{Error: "pair 3, candidate run failed"}, NotMeasured, "a run failed, so nothing was timed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := StartupTarget(tc.r)
			if got.Status != tc.status || !strings.Contains(got.Why, tc.why) {
				t.Errorf("got %q (%s), want %q (…%s…)", got.Status, got.Why, tc.status, tc.why)
			}
		})
	}
}

func TestCollisionTarget(t *testing.T) {
	ok := []CollisionRun{{ID: "p0"}, {ID: "p1"}}
	for _, tc := range []struct {
		name   string
		r      CollisionResult
		status string
		why    string
	}{
		{"fast and clean", CollisionResult{Patched: ok, PatchSec: &Summary{Median: 0.04}, PatchExit: map[int]int{0: 2}}, Met, ""},
		{"slow", CollisionResult{Patched: ok, PatchSec: &Summary{Median: 0.1}, PatchExit: map[int]int{0: 2}}, Missed, "≥ 0.1s (a delete without collision took 0.200s with stock, 0.190s with patched"},
		{"fails fast", CollisionResult{
			Patched:   []CollisionRun{{ID: "p0", FirstDelete: Result{Exit: 128, Seconds: 0.05, Stderr: "x\ndevice or resource busy\n"}}},
			PatchSec:  &Summary{Median: 0.05},
			PatchExit: map[int]int{128: 1},
		}, Missed, "1 of 1 first deletes failed: exit 128 after 0.05s: device or resource busy"},
		{"nothing ran", CollisionResult{Error: "starting the first sandbox: boom"}, NotMeasured, "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CollisionTarget(tc.r, 0.2, 0.19)
			if got.Status != tc.status || !strings.Contains(got.Why, tc.why) {
				t.Errorf("got %q (%s), want %q (…%s…)", got.Status, got.Why, tc.status, tc.why)
			}
		})
	}
}

func TestParallelTarget(t *testing.T) {
	nested := Runtime{Name: "runsc-patched", Flags: []string{"--nested-cgroups"}}
	point := func(n, failures int, rel float64) ParallelPoint {
		return ParallelPoint{Runtime: nested.Label(), N: n, Runs: []BatchRun{{N: n, Failures: failures}}, Failures: failures, PerSandbox: rel * 0.5, Relative: rel}
	}
	for _, tc := range []struct {
		name   string
		r      ParallelResult
		status string
		why    string
	}{
		{"holds up", ParallelResult{Candidate: nested, Points: []ParallelPoint{point(1, 0, 1), point(64, 0, 1.4)}}, Met, ""},
		{"too slow", ParallelResult{Candidate: nested, Points: []ParallelPoint{point(1, 0, 1), point(64, 0, 2.0)}}, Missed, "2.00x ≥ 2x"},
		{"failures", ParallelResult{Candidate: nested, Points: []ParallelPoint{point(1, 0, 1), point(64, 2, 1.1)}}, Missed, "2 sandbox failures"},
		{"no N=64", ParallelResult{Candidate: nested, Points: []ParallelPoint{point(1, 0, 1)}}, NotMeasured, "not both run"},
		{"other runtime only", ParallelResult{Candidate: nested, Points: []ParallelPoint{{Runtime: "runsc-stock", N: 64}}}, NotMeasured, ""},
		{"without the flag", ParallelResult{Candidate: Runtime{Name: "runsc-patched"}, Note: "no --nested-cgroups",
			Points: []ParallelPoint{{Runtime: "runsc-patched", N: 1, Runs: []BatchRun{{}}, Relative: 1}, {Runtime: "runsc-patched", N: 64, Runs: []BatchRun{{}}, Relative: 1.2}}},
			NotMeasured, "no --nested-cgroups"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ParallelTarget(tc.r)
			if got.Status != tc.status || !strings.Contains(got.Why, tc.why) {
				t.Errorf("got %q (%s), want %q (…%s…)", got.Status, got.Why, tc.status, tc.why)
			}
		})
	}
}

func criCell(stopMedian float64, candFails, baseFails int) CRICell {
	c := CRICell{Driver: "systemd", Load: LoadLoaded, Baseline: "runsc-stock", Candidate: "runsc-patched"}
	if stopMedian > 0 {
		c.Stats = &PairStats{Pairs: 20, PhaseRatios: []PhaseRatio{{Name: PhaseStopp,
			Ratio: Summary{N: 20, Median: stopMedian}, Interval: &Interval{Lo: stopMedian - 0.1, Hi: stopMedian + 0.1, Coverage: 0.9586},
			Baseline: Summary{Median: 4}, Candidate: Summary{Median: 4 * stopMedian}}}}
	}
	for i := 0; i < candFails; i++ {
		c.Failures = append(c.Failures, PairFailure{Attempt: i, Side: "candidate", Error: "start (StartContainer): exit 1"})
	}
	for i := 0; i < baseFails; i++ {
		c.Failures = append(c.Failures, PairFailure{Attempt: i, Side: "baseline", Error: "stopp: timeout"})
	}
	return c
}

func TestCRIStopTarget(t *testing.T) {
	for _, tc := range []struct {
		name     string
		c        CRICell
		status   string
		measured string
		why      string
	}{
		{"under", criCell(1.02, 0, 0), Met, "1.020 (95 % 0.920–1.120, 20 pairs)", ""},
		{"at the limit", criCell(1.10, 0, 0), Met, "1.100", ""},
		{"over", criCell(1.5, 0, 0), Missed, "1.500", "1.500 > 1.10: patched 6.00s vs stock 4.00s"},
		{"a failed patched pod", criCell(1.0, 1, 0), Missed, "failed pods: patched 1, stock 0", "runsc-patched failed 1 of its pods: start (StartContainer): exit 1"},
		{"stock failing is not patched's fault", criCell(1.0, 0, 2), Met, "failed pods: patched 0, stock 2", ""},
		{"skipped", CRICell{Driver: "systemd", Load: LoadQuiet, Skipped: "no systemd"}, NotMeasured, "—", "no systemd"},
		{"no pair", criCell(0, 4, 0), Missed, "—", "failed 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CRIStopTarget(tc.c)
			if got.Status != tc.status || !strings.Contains(got.Measured, tc.measured) || !strings.Contains(got.Why, tc.why) {
				t.Errorf("got %q, measured %q, why %q; want %q, …%s…, …%s…", got.Status, got.Measured, got.Why, tc.status, tc.measured, tc.why)
			}
			if !strings.Contains(got.Name, "StopPodSandbox") || !strings.Contains(got.Name, tc.c.Name()) {
				t.Errorf("name %q", got.Name)
			}
		})
	}
}
