package bench

import (
	"context"
	"errors"
	"fmt"
)

// Sample is one timed run of an operation that succeeded.
type Sample struct {
	Seconds float64 `json:"seconds"`
	// CPUSeconds is the user+system time of the runtime commands themselves
	// (not of the sandbox they leave running): less sensitive to other load
	// on the machine than wall time.
	CPUSeconds float64 `json:"cpuSeconds,omitempty"`
	// Phases splits Seconds into the runtime commands it took, in order
	// (create, start, delete for a sandbox lifecycle).
	Phases []Phase `json:"phases,omitempty"`
}

// Phase is one runtime command inside a Sample.
type Phase struct {
	Name       string  `json:"name"`
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"cpuSeconds,omitempty"`
	// Attempts is how many calls the phase took when failed calls are
	// retried (the CRI scenario's pod stop); 0 or 1: the first worked.
	// Retried says how each failed call ended.
	Attempts int      `json:"attempts,omitempty"`
	Retried  []string `json:"retried,omitempty"`
}

// ErrAbort, wrapped in a trial's error, ends RunPairs at once: the
// failure left the machine unfit for more runs.
var ErrAbort = errors.New("cannot go on")

// Trial runs the measured operation once. It returns an error when the
// operation failed; a failed operation is never timed.
type Trial func(ctx context.Context, pair int) (Sample, error)

// Pair is one baseline run and one candidate run taken back to back.
type Pair struct {
	Index          int     `json:"index"`
	CandidateFirst bool    `json:"candidateFirst"`
	Baseline       Sample  `json:"baseline"`
	Candidate      Sample  `json:"candidate"`
	Ratio          float64 `json:"ratio"` // candidate / baseline
	// CPURatio is the same for CPUSeconds (0 when not measured).
	CPURatio float64 `json:"cpuRatio,omitempty"`
}

// CandidateFirst reports whether pair i runs the candidate before the
// baseline. Pairs alternate (B A, A B, …) so that neither binary always
// profits from warm caches or pays for a cold start.
func CandidateFirst(i int) bool { return i%2 == 1 }

// NewPair pairs two samples and computes candidate/baseline.
func NewPair(i int, baseline, candidate Sample) (Pair, error) {
	if baseline.Seconds <= 0 || candidate.Seconds <= 0 {
		return Pair{}, fmt.Errorf("pair %d: durations must be positive (baseline %v s, candidate %v s): a run was not timed", i, baseline.Seconds, candidate.Seconds)
	}
	p := Pair{
		Index:          i,
		CandidateFirst: CandidateFirst(i),
		Baseline:       baseline,
		Candidate:      candidate,
		Ratio:          candidate.Seconds / baseline.Seconds,
	}
	if baseline.CPUSeconds > 0 && candidate.CPUSeconds > 0 {
		p.CPURatio = candidate.CPUSeconds / baseline.CPUSeconds
	}
	return p, nil
}

// PairFailure is a run that failed inside RunPairs: its attempt gives no
// pair and nothing of it is timed.
type PairFailure struct {
	Attempt int    `json:"attempt"`
	Side    string `json:"side"` // "baseline" or "candidate"
	Error   string `json:"error"`
}

// RunPairs runs interleaved attempts until n pairs are complete, calling
// each (if set) after every pair for progress. With maxFailures < 0 it
// stops at the first failed run with an error naming the pair and side.
// Otherwise a failed run drops its attempt (the other side of it is not
// run, or its time is thrown away), is reported to failed (if set) and
// returned, and the next attempt takes its place; the order still
// alternates by attempt, so a pair's Index is its attempt. After more than
// maxFailures failed runs, or one wrapping ErrAbort, it stops with an
// error. Failures are outcomes to report, never timings.
func RunPairs(ctx context.Context, n, maxFailures int, baseline, candidate Trial, each func(Pair), failed func(PairFailure)) ([]Pair, []PairFailure, error) {
	if n < 1 {
		return nil, nil, fmt.Errorf("need at least one pair, got %d", n)
	}
	what := "attempt"
	if maxFailures < 0 {
		what = "pair"
	}
	var pairs []Pair
	var fails []PairFailure
	for a := 0; len(pairs) < n; a++ {
		if err := ctx.Err(); err != nil {
			return pairs, fails, fmt.Errorf("%s %d not run: %w", what, a, err)
		}
		var b, c Sample
		var err error
		side, order := "", [2]string{"baseline", "candidate"}
		if CandidateFirst(a) {
			order = [2]string{"candidate", "baseline"}
		}
		for _, side = range order {
			if side == "candidate" {
				c, err = candidate(ctx, a)
			} else {
				b, err = baseline(ctx, a)
			}
			if err != nil {
				break
			}
		}
		if err != nil {
			if maxFailures < 0 {
				return pairs, nil, fmt.Errorf("pair %d, %s run failed (not timed): %w", a, side, err)
			}
			f := PairFailure{Attempt: a, Side: side, Error: err.Error()}
			fails = append(fails, f)
			if failed != nil {
				failed(f)
			}
			if errors.Is(err, ErrAbort) {
				return pairs, fails, fmt.Errorf("attempt %d, %s: %w", a, side, err)
			}
			if len(fails) > maxFailures {
				return pairs, fails, fmt.Errorf("%d failed runs, more than the %d allowed; the last: attempt %d, %s: %w", len(fails), maxFailures, a, side, err)
			}
			continue
		}
		p, err := NewPair(a, b, c)
		if err != nil {
			return pairs, fails, err
		}
		pairs = append(pairs, p)
		if each != nil {
			each(p)
		}
	}
	return pairs, fails, nil
}

// PairStats sums up a set of pairs.
type PairStats struct {
	Pairs int     `json:"pairs"`
	Ratio Summary `json:"ratio"`
	// CPURatio summarises the per-pair CPU ratios, when every pair has one.
	CPURatio  *Summary `json:"cpuRatio,omitempty"`
	Baseline  Summary  `json:"baselineSeconds"`
	Candidate Summary  `json:"candidateSeconds"`
	// RatioInterval is the 95 % interval of Ratio.Median (nil with fewer
	// than 6 pairs).
	RatioInterval *Interval `json:"ratioInterval,omitempty"`
	// Phase medians per side, to show where a difference comes from.
	BaselinePhases  []Phase `json:"baselinePhaseMedians,omitempty"`
	CandidatePhases []Phase `json:"candidatePhaseMedians,omitempty"`
	// PhaseRatios are the per-pair ratios of each phase, in the order the
	// phases ran: a phase's own verdict, which the sum can hide.
	PhaseRatios []PhaseRatio `json:"phaseRatios,omitempty"`
}

// PhaseRatio sums up one phase over the pairs that both timed it.
type PhaseRatio struct {
	Name string `json:"name"`
	// Ratio is over candidate/baseline of this phase, pair by pair.
	Ratio Summary `json:"ratio"`
	// Interval is the 95 % interval of Ratio.Median (nil: too few pairs).
	Interval  *Interval `json:"interval,omitempty"`
	Baseline  Summary   `json:"baselineSeconds"`
	Candidate Summary   `json:"candidateSeconds"`
}

// Confidence is the level of every interval in the reports.
const Confidence = 0.95

// Stats summarises pairs: the per-pair ratio first, the raw seconds after.
func Stats(pairs []Pair) (PairStats, error) {
	if len(pairs) == 0 {
		return PairStats{}, ErrEmpty
	}
	var r, b, c, cpu []float64
	for _, p := range pairs {
		r = append(r, p.Ratio)
		if p.CPURatio > 0 {
			cpu = append(cpu, p.CPURatio)
		}
		b = append(b, p.Baseline.Seconds)
		c = append(c, p.Candidate.Seconds)
	}
	st := PairStats{Pairs: len(pairs)}
	var err error
	if st.Ratio, err = Summarize(r); err != nil {
		return PairStats{}, err
	}
	if st.Baseline, err = Summarize(b); err != nil {
		return PairStats{}, err
	}
	if st.Candidate, err = Summarize(c); err != nil {
		return PairStats{}, err
	}
	if len(cpu) == len(pairs) {
		if s, err := Summarize(cpu); err == nil {
			st.CPURatio = &s
		}
	}
	if iv, err := MedianInterval(r, Confidence); err == nil {
		st.RatioInterval = &iv
	}
	st.BaselinePhases = phaseMedians(pairs, func(p Pair) Sample { return p.Baseline })
	st.CandidatePhases = phaseMedians(pairs, func(p Pair) Sample { return p.Candidate })
	st.PhaseRatios = phaseRatios(pairs)
	return st, nil
}

// phaseRatios pairs each phase of the candidate with the same phase of the
// baseline, pair by pair; a phase with a zero time on either side is left
// out of that pair.
func phaseRatios(pairs []Pair) []PhaseRatio {
	var names []string
	type acc struct{ r, b, c []float64 }
	by := map[string]*acc{}
	for _, p := range pairs {
		base := map[string]float64{}
		for _, ph := range p.Baseline.Phases {
			base[ph.Name] = ph.Seconds
		}
		for _, ph := range p.Candidate.Phases {
			b, ok := base[ph.Name]
			if !ok || b <= 0 || ph.Seconds <= 0 {
				continue
			}
			a := by[ph.Name]
			if a == nil {
				a = &acc{}
				by[ph.Name] = a
				names = append(names, ph.Name)
			}
			a.r, a.b, a.c = append(a.r, ph.Seconds/b), append(a.b, b), append(a.c, ph.Seconds)
		}
	}
	var out []PhaseRatio
	for _, n := range names {
		a := by[n]
		pr := PhaseRatio{Name: n}
		// Errors are impossible: every slice holds positive, finite values.
		pr.Ratio, _ = Summarize(a.r)
		pr.Baseline, _ = Summarize(a.b)
		pr.Candidate, _ = Summarize(a.c)
		if iv, err := MedianInterval(a.r, Confidence); err == nil {
			pr.Interval = &iv
		}
		out = append(out, pr)
	}
	return out
}

func phaseMedians(pairs []Pair, side func(Pair) Sample) []Phase {
	var names []string
	by := map[string][]float64{}
	for _, p := range pairs {
		for _, ph := range side(p).Phases {
			if _, ok := by[ph.Name]; !ok {
				names = append(names, ph.Name)
			}
			by[ph.Name] = append(by[ph.Name], ph.Seconds)
		}
	}
	var out []Phase
	for _, n := range names {
		m, err := Median(by[n])
		if err != nil {
			continue
		}
		out = append(out, Phase{Name: n, Seconds: m})
	}
	return out
}
