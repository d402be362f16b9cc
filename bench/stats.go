// Package bench measures what the runsc cgroup patches cost next to stock
// runsc: paired, interleaved runs of the two binaries in one process, summed
// up as per-pair ratios so that load on a shared machine cancels out.
package bench

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Summary describes a sample: its median and how far it spreads.
type Summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Q1     float64 `json:"q1"`
	Q3     float64 `json:"q3"`
	IQR    float64 `json:"iqr"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Mean   float64 `json:"mean"`
}

// ErrEmpty is returned when there is nothing to summarise.
var ErrEmpty = errors.New("no samples")

// Median of xs (the mean of the two middle values for an even count).
func Median(xs []float64) (float64, error) {
	return Quantile(xs, 0.5)
}

// Quantile of xs at q in [0,1], interpolating linearly between the closest
// ranks (the "type 7" definition R and NumPy use by default), so that the
// median of an even count is the mean of the two middle values.
func Quantile(xs []float64, q float64) (float64, error) {
	if len(xs) == 0 {
		return 0, ErrEmpty
	}
	if q < 0 || q > 1 || math.IsNaN(q) {
		return 0, fmt.Errorf("quantile %v is outside [0,1]", q)
	}
	s := slices.Sorted(slices.Values(xs))
	for _, x := range s {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("sample holds %v: a measurement was not taken", x)
		}
	}
	h := q * float64(len(s)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(s) {
		return s[len(s)-1], nil
	}
	return s[i] + (h-lo)*(s[i+1]-s[i]), nil
}

// Summarize computes the Summary of xs.
func Summarize(xs []float64) (Summary, error) {
	if len(xs) == 0 {
		return Summary{}, ErrEmpty
	}
	var sum Summary
	var err error
	if sum.Median, err = Quantile(xs, 0.5); err != nil {
		return Summary{}, err
	}
	// Errors are impossible past the first call: same sample, valid q.
	sum.Q1, _ = Quantile(xs, 0.25)
	sum.Q3, _ = Quantile(xs, 0.75)
	s := slices.Sorted(slices.Values(xs))
	sum.N = len(s)
	sum.IQR = sum.Q3 - sum.Q1
	sum.Min, sum.Max = s[0], s[len(s)-1]
	total := 0.0
	for _, x := range s {
		total += x
	}
	sum.Mean = total / float64(len(s))
	return sum, nil
}

// Interval bounds a median: [Lo, Hi] holds the true median with probability
// at least Coverage.
type Interval struct {
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	Coverage float64 `json:"coverage"`
}

// MedianInterval is the distribution-free confidence interval of the median
// of xs at level conf: the k-th smallest and k-th largest sample, k the
// largest rank whose tail P(Binomial(n, 1/2) < k) stays within (1-conf)/2.
// It assumes nothing about the shape of the distribution (per-pair ratios
// are skewed), only that the samples are independent. For 20 pairs at 95 %
// that is the 6th and the 15th ratio (coverage 95.9 %). Too few samples
// for conf is an error.
func MedianInterval(xs []float64, conf float64) (Interval, error) {
	n := len(xs)
	if n == 0 {
		return Interval{}, ErrEmpty
	}
	if conf <= 0 || conf >= 1 || math.IsNaN(conf) {
		return Interval{}, fmt.Errorf("confidence %v is outside (0,1)", conf)
	}
	s := slices.Sorted(slices.Values(xs))
	alpha := (1 - conf) / 2
	// tail is P(X <= j) for X ~ Binomial(n, 1/2), built up term by term.
	k, tail, term := 0, 0.0, math.Pow(0.5, float64(n))
	for j := 0; j < n/2; j++ {
		if tail+term > alpha {
			break
		}
		tail += term
		k = j + 1
		term = term * float64(n-j) / float64(j+1)
	}
	if k == 0 {
		return Interval{}, fmt.Errorf("%d samples cannot bound the median at %.0f %% (even min–max covers %.1f %%)",
			n, 100*conf, 100*(1-2*math.Pow(0.5, float64(n))))
	}
	return Interval{Lo: s[k-1], Hi: s[n-k], Coverage: 1 - 2*tail}, nil
}
