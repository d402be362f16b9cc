package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/harness/casefile"
)

func TestStallBound(t *testing.T) {
	cases := []*casefile.Case{
		{Name: "parallel-32", Timeout: casefile.Duration{Duration: 8 * time.Minute}},
		{Name: "killstorm-create-empty", Trials: 2},
		{Name: "delete-force"},
	}
	for _, tc := range []struct {
		name    string
		scale   float64
		trials  int
		running string
		want    time.Duration
	}{
		{"between cases, TCG", 10, 0, "", 20 * time.Minute},
		{"between cases, KVM", 1, 0, "", 2 * time.Minute},
		{"a plain case", 10, 0, "delete-force [host] runc", 20 * time.Minute},
		{"its own longer timeout", 10, 0, "parallel-32 [host] runsc-stock", 80 * time.Minute},
		{"its trials", 10, 0, "killstorm-create-empty [host] runc", 40 * time.Minute},
		{"-trials in the harness args", 1, 200, "killstorm-create-empty [host] runc", 400 * time.Minute},
		{"a case it does not know", 10, 0, "new-case [host] runc", 20 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stallBound(defaultStall, tc.scale, cases, tc.trials)(tc.running); got != tc.want {
				t.Errorf("bound = %s, want %s", got, tc.want)
			}
		})
	}
	if stallBound(0, 10, cases, 0) != nil {
		t.Error("-stall 0 still has a bound")
	}
}

func TestTrialsArg(t *testing.T) {
	for args, want := range map[string]int{
		"":                           0,
		"-strict":                    0,
		"-trials 200":                200,
		"-strict -trials=20 -x":      20,
		"--trials 3":                 3,
		"-run x -trials":             0,
		"-runtime-cases a=b -strict": 0,
	} {
		if got := trialsArg(args); got != want {
			t.Errorf("trialsArg(%q) = %d, want %d", args, got, want)
		}
	}
}

// TestRerunStalled: a stalled mode runs once more and reports both
// attempts; a second stall is not rerun; a mode that did not stall runs
// once.
func TestRerunStalled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		statuses []string // what each attempt ends with
		want     []string // statuses: the earlier attempts, then the host's
		unexpect int      // entries of Matrix.Unexpected (the last attempt's)
		retried  int      // entries of Matrix.Retried (the earlier ones')
	}{
		{"reported", []string{report.Reported}, []string{report.Reported}, 0, 0},
		{"timed out is not rerun", []string{report.TimedOut}, []string{report.TimedOut}, 1, 0},
		{"stalled, then reported", []string{report.Stalled, report.Reported}, []string{report.Stalled, report.Reported}, 0, 1},
		{"stalled twice", []string{report.Stalled, report.Stalled, report.Reported}, []string{report.Stalled, report.Stalled}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, kept := 0, 0
			mr := rerunStalled(func() report.HostRun {
				st := tc.statuses[n]
				n++
				return report.HostRun{Host: "v1", Status: st}
			}, func(first *report.HostRun) error {
				kept++
				return nil
			})
			var got []string
			for _, e := range mr.Earlier {
				got = append(got, e.Status)
			}
			got = append(got, mr.Status)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("attempts (-want +got):\n%s", diff)
			}
			if n != len(tc.want) || kept != len(tc.want)-1 {
				t.Errorf("%d attempts, %d kept aside; want %d and %d", n, kept, len(tc.want), len(tc.want)-1)
			}
			if len(mr.Earlier) > 0 && (mr.Attempt != 2 || mr.Earlier[0].Attempt != 1) {
				t.Errorf("attempts numbered %d, earlier %d", mr.Attempt, mr.Earlier[0].Attempt)
			}
			m := &report.Matrix{Hosts: []report.HostRun{mr}}
			if bad := m.Unexpected(); len(bad) != tc.unexpect {
				t.Errorf("Unexpected = %q, want %d entries", bad, tc.unexpect)
			}
			if retried := m.Retried(); len(retried) != tc.retried {
				t.Errorf("Retried = %q, want %d entries", retried, tc.retried)
			} else if len(retried) > 0 && !strings.HasPrefix(retried[0], "attempt 1 of 2: v1: stalled") {
				t.Errorf("Retried[0] = %q", retried[0])
			}
		})
	}
}

func TestKeepAttempt(t *testing.T) {
	out := t.TempDir()
	for _, d := range []string{"v1", "v1.attempt1"} {
		if err := os.MkdirAll(filepath.Join(out, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(out, "v1", "console.log"), []byte("first"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := keepAttempt(out, "v1"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "v1.attempt1", "console.log")); err != nil || string(b) != "first" {
		t.Errorf("the first attempt's console: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(out, "v1")); !os.IsNotExist(err) {
		t.Errorf("v1 is still there: %v", err)
	}
}
