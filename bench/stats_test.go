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
