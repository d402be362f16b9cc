// Package bench measures what the runsc cgroup patches cost next to stock
// runsc: paired, interleaved runs of the two binaries in one process, summed
// up as per-pair ratios so that load on a shared machine cancels out.
package bench

import (
	"errors"
	"fmt"
	"math"
	"sort"
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
	s := sorted(xs)
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
	s := sorted(xs)
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

func sorted(xs []float64) []float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s
}
