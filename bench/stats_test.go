package bench

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestQuantile(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		q    float64
		want float64
	}{
		{"median odd", []float64{3, 1, 2}, 0.5, 2},
		{"median even is mean of middle two", []float64{4, 1, 3, 2}, 0.5, 2.5},
		{"single", []float64{7}, 0.5, 7},
		{"min", []float64{5, 1, 9}, 0, 1},
		{"max", []float64{5, 1, 9}, 1, 9},
		{"q1 interpolates", []float64{1, 2, 3, 4, 5}, 0.25, 2},
		{"q3 of four", []float64{1, 2, 3, 4}, 0.75, 3.25},
		{"unsorted input kept intact", []float64{10, 0, 5}, 0.5, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.xs...)
			got, err := Quantile(tc.xs, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("Quantile(%v, %v) = %v, want %v", tc.xs, tc.q, got, tc.want)
			}
			if diff := cmp.Diff(in, tc.xs); diff != "" {
				t.Errorf("input changed (-before +after):\n%s", diff)
			}
		})
	}
}

func TestQuantileErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		q    float64
	}{
		{"empty", nil, 0.5},
		{"q below 0", []float64{1}, -0.1},
		{"q above 1", []float64{1}, 1.1},
		{"NaN sample", []float64{1, math.NaN()}, 0.5},
		{"Inf sample", []float64{1, math.Inf(1)}, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Quantile(tc.xs, tc.q); err == nil {
				t.Errorf("Quantile(%v, %v) gave no error", tc.xs, tc.q)
			}
		})
	}
	if _, err := Median(nil); !errors.Is(err, ErrEmpty) {
		t.Errorf("Median(nil) error = %v, want ErrEmpty", err)
	}
}

func TestSummarize(t *testing.T) {
	got, err := Summarize([]float64{1, 2, 3, 4, 100})
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{N: 5, Median: 3, Q1: 2, Q3: 4, IQR: 2, Min: 1, Max: 100, Mean: 22}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("Summarize (-want +got):\n%s", diff)
	}
	if _, err := Summarize(nil); !errors.Is(err, ErrEmpty) {
		t.Errorf("Summarize(nil) error = %v, want ErrEmpty", err)
	}
}

func TestMedianInterval(t *testing.T) {
	ramp := func(n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(n - i) // descending: the function must sort
		}
		return xs
	}
	for _, tc := range []struct {
		name          string
		xs            []float64
		conf          float64
		lo, hi, cover float64
	}{
		// n = 20: P(Bin(20, 1/2) <= 5) = 0.0207, so the 6th and 15th
		// smallest bound the median with 1 - 2*0.0207 = 0.9586.
		{"twenty pairs", ramp(20), 0.95, 6, 15, 0.958611},
		// n = 10: P(X <= 1) = 0.0107, P(X <= 2) = 0.0547: 2nd and 9th.
		{"ten", ramp(10), 0.95, 2, 9, 0.978516},
		// n = 6: P(X <= 0) = 0.0156: min and max, 0.96875.
		{"six", ramp(6), 0.95, 1, 6, 0.96875},
		// At 80 %: P(X <= 6) = 0.0577 <= 0.1: 7th and 14th.
		{"eighty percent of twenty", ramp(20), 0.80, 7, 14, 0.884682},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MedianInterval(tc.xs, tc.conf)
			if err != nil {
				t.Fatal(err)
			}
			want := Interval{Lo: tc.lo, Hi: tc.hi, Coverage: tc.cover}
			if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-6)); diff != "" {
				t.Errorf("MedianInterval (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMedianIntervalTooFew(t *testing.T) {
	// Five samples cannot bound the median at 95 %: even min-max covers
	// only 1 - 2/32 = 0.9375.
	if _, err := MedianInterval([]float64{1, 2, 3, 4, 5}, 0.95); err == nil {
		t.Error("MedianInterval of 5 samples at 95 % gave no error")
	}
	if _, err := MedianInterval(nil, 0.95); !errors.Is(err, ErrEmpty) {
		t.Errorf("MedianInterval(nil) error = %v, want ErrEmpty", err)
	}
}
