package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeTrial returns scripted durations and records the call order.
func fakeTrial(side string, secs []float64, calls *[]string, failAt int) Trial {
	return func(_ context.Context, i int) (Sample, error) {
		*calls = append(*calls, side)
		if i == failAt {
			return Sample{}, errors.New("runtime exploded")
		}
		return Sample{Seconds: secs[i], Phases: []Phase{{Name: "create", Seconds: secs[i] / 2}, {Name: "start", Seconds: secs[i] / 2}}}, nil
	}
}

func TestRunPairsStrict(t *testing.T) {
	var calls []string
	base := []float64{1, 2, 4, 1}
	cand := []float64{1.1, 2, 2, 3}
	var seen []int
	ps, _, err := RunPairs(context.Background(), 4, -1, fakeTrial("baseline", base, &calls, -1), fakeTrial("candidate", cand, &calls, -1),
		func(p Pair) { seen = append(seen, p.Index) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{0, 1, 2, 3}, seen); diff != "" {
		t.Errorf("progress callbacks (-want +got):\n%s", diff)
	}
	// The sides alternate which runs first, pair by pair.
	order := []string{"baseline", "candidate", "candidate", "baseline", "baseline", "candidate", "candidate", "baseline"}
	if diff := cmp.Diff(order, calls); diff != "" {
		t.Errorf("call order (-want +got):\n%s", diff)
	}
	var ratios []float64
	for i, p := range ps {
		if p.Index != i || p.CandidateFirst != (i%2 == 1) {
			t.Errorf("pair %d: index %d, candidateFirst %v", i, p.Index, p.CandidateFirst)
		}
		// Each ratio comes from its own pair, not from sorted sides.
		if p.Baseline.Seconds != base[i] || p.Candidate.Seconds != cand[i] {
			t.Errorf("pair %d paired %v with %v, want %v with %v", i, p.Candidate.Seconds, p.Baseline.Seconds, cand[i], base[i])
		}
		ratios = append(ratios, p.Ratio)
	}
	want := []float64{1.1, 1, 0.5, 3}
	if diff := cmp.Diff(want, ratios, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })); diff != "" {
		t.Errorf("ratios (-want +got):\n%s", diff)
	}
	st, err := Stats(ps)
	if err != nil {
		t.Fatal(err)
	}
	// Median of per-pair ratios (0.5 1 1.1 3) is 1.05; the ratio of the
	// medians (2/1.5) would be 1.33: the pairing matters.
	if math.Abs(st.Ratio.Median-1.05) > 1e-12 {
		t.Errorf("median ratio = %v, want 1.05", st.Ratio.Median)
	}
	if diff := cmp.Diff([]Phase{{Name: "create", Seconds: 0.75}, {Name: "start", Seconds: 0.75}}, st.BaselinePhases); diff != "" {
		t.Errorf("baseline phase medians (-want +got):\n%s", diff)
	}
}

func TestRunPairsStopsAtFailure(t *testing.T) {
	for _, tc := range []struct {
		name               string
		baseFail, candFail int
		wantPairs          int
		wantCalls          []string
		wantInErr          []string
	}{
		{"candidate fails in pair 1 (it runs first there)", -1, 1, 1,
			[]string{"baseline", "candidate", "candidate"}, []string{"pair 1", "candidate run failed (not timed)", "runtime exploded"}},
		{"baseline fails in pair 0", 0, -1, 0,
			[]string{"baseline"}, []string{"pair 0", "baseline run failed"}},
		{"baseline fails in pair 1, after the candidate", 1, -1, 1,
			[]string{"baseline", "candidate", "candidate", "baseline"}, []string{"pair 1", "baseline"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []string
			secs := []float64{1, 1, 1}
			ps, _, err := RunPairs(context.Background(), 3, -1, fakeTrial("baseline", secs, &calls, tc.baseFail), fakeTrial("candidate", secs, &calls, tc.candFail), nil, nil)
			if err == nil {
				t.Fatal("no error from a failed run")
			}
			for _, s := range tc.wantInErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			if len(ps) != tc.wantPairs {
				t.Errorf("got %d pairs, want %d", len(ps), tc.wantPairs)
			}
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewPairRejectsUntimed(t *testing.T) {
	for _, tc := range []struct {
		name string
		b, c float64
	}{{"zero baseline", 0, 1}, {"zero candidate", 1, 0}, {"negative", -1, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewPair(0, Sample{Seconds: tc.b}, Sample{Seconds: tc.c}); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestRunPairsNeedsPairs(t *testing.T) {
	if _, _, err := RunPairs(context.Background(), 0, -1, nil, nil, nil, nil); err == nil {
		t.Error("no error for 0 pairs")
	}
}

func TestCPURatio(t *testing.T) {
	for _, tc := range []struct {
		name    string
		b, c    []float64 // CPU seconds per pair; 0 = not measured
		wantCPU float64   // median; 0 = no summary
	}{
		{"all measured", []float64{1, 2, 1}, []float64{1.5, 2, 1.1}, 1.1},
		{"one missing: no summary", []float64{1, 0}, []float64{1, 1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ps []Pair
			for i := range tc.b {
				p, err := NewPair(i, Sample{Seconds: 1, CPUSeconds: tc.b[i]}, Sample{Seconds: 1, CPUSeconds: tc.c[i]})
				if err != nil {
					t.Fatal(err)
				}
				ps = append(ps, p)
			}
			st, err := Stats(ps)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.wantCPU == 0 && st.CPURatio != nil:
				t.Errorf("CPU summary %+v from incomplete pairs", st.CPURatio)
			case tc.wantCPU != 0 && (st.CPURatio == nil || math.Abs(st.CPURatio.Median-tc.wantCPU) > 1e-12):
				t.Errorf("CPU ratio %+v, want median %v", st.CPURatio, tc.wantCPU)
			}
		})
	}
}

func TestStatsPhaseRatios(t *testing.T) {
	mk := func(stop, other float64) Sample {
		return Sample{Seconds: stop + other, Phases: []Phase{{Name: "run", Seconds: other}, {Name: "stop", Seconds: stop}}}
	}
	var ps []Pair
	for i := 0; i < 20; i++ {
		// Candidate's stop is twice the baseline's; the rest is the same.
		p, err := NewPair(i, mk(1+float64(i), 3), mk(2+2*float64(i), 3))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	st, err := Stats(ps)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.PhaseRatios) != 2 {
		t.Fatalf("PhaseRatios = %+v, want run and stop", st.PhaseRatios)
	}
	run, stop := st.PhaseRatios[0], st.PhaseRatios[1]
	if run.Name != "run" || stop.Name != "stop" {
		t.Fatalf("phase order %q, %q, want run, stop (as measured)", run.Name, stop.Name)
	}
	if run.Ratio.Median != 1 || stop.Ratio.Median != 2 {
		t.Errorf("median ratios run %v stop %v, want 1 and 2", run.Ratio.Median, stop.Ratio.Median)
	}
	if stop.Interval == nil || stop.Interval.Lo != 2 || stop.Interval.Hi != 2 {
		t.Errorf("stop interval %+v, want 2 – 2", stop.Interval)
	}
	if stop.Baseline.Median != 10.5 || stop.Candidate.Median != 21 {
		t.Errorf("stop seconds: baseline %v candidate %v, want 10.5 and 21", stop.Baseline.Median, stop.Candidate.Median)
	}
	if st.RatioInterval == nil {
		t.Error("no interval for the whole lifecycle's ratio")
	}
}

func TestRunPairsTolerant(t *testing.T) {
	var calls []string
	secs := []float64{1, 2, 3, 4, 5, 6}
	var failed []PairFailure
	ps, fails, err := RunPairs(context.Background(), 3, 2,
		fakeTrial("baseline", secs, &calls, -1), fakeTrial("candidate", secs, &calls, 1), nil,
		func(f PairFailure) { failed = append(failed, f) })
	if err != nil {
		t.Fatal(err)
	}
	// Attempt 1 runs the candidate first; it fails, the baseline of that
	// attempt never runs, and attempt 2 takes its place.
	if diff := cmp.Diff([]string{"baseline", "candidate", "candidate", "baseline", "candidate", "candidate", "baseline"}, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	var idx []int
	for _, p := range ps {
		idx = append(idx, p.Index)
		if p.CandidateFirst != CandidateFirst(p.Index) {
			t.Errorf("pair %d: candidateFirst %v", p.Index, p.CandidateFirst)
		}
	}
	if diff := cmp.Diff([]int{0, 2, 3}, idx); diff != "" {
		t.Errorf("pair indices (-want +got):\n%s", diff)
	}
	if len(fails) != 1 || fails[0].Attempt != 1 || fails[0].Side != "candidate" || !strings.Contains(fails[0].Error, "runtime exploded") {
		t.Errorf("failures = %+v, want attempt 1's candidate", fails)
	}
	if diff := cmp.Diff(fails, failed); diff != "" {
		t.Errorf("failure callbacks (-want +got):\n%s", diff)
	}
}

func TestRunPairsTolerantGivesUp(t *testing.T) {
	var calls []string
	always := func(context.Context, int) (Sample, error) {
		calls = append(calls, "x")
		return Sample{}, errors.New("refused")
	}
	ps, fails, err := RunPairs(context.Background(), 20, 2, always, always, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "3 failed runs") {
		t.Fatalf("error %v, want one saying 3 failed runs", err)
	}
	if len(ps) != 0 || len(fails) != 3 || len(calls) != 3 {
		t.Errorf("%d pairs, %d failures, %d calls; want 0, 3, 3", len(ps), len(fails), len(calls))
	}
}

func TestRunPairsTolerantAborts(t *testing.T) {
	var calls []string
	abort := func(context.Context, int) (Sample, error) {
		calls = append(calls, "x")
		return Sample{}, fmt.Errorf("pod would not go: %w", ErrAbort)
	}
	_, fails, err := RunPairs(context.Background(), 20, 5, abort, abort, nil, nil)
	if !errors.Is(err, ErrAbort) || len(fails) != 1 || len(calls) != 1 {
		t.Errorf("err %v, %d failures, %d calls; want ErrAbort after the first", err, len(fails), len(calls))
	}
}
