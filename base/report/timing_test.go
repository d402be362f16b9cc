package report

import "testing"

func TestTrialChecks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []Step
		want  int
	}{
		{"one trial", []Step{{ID: "1-run", Do: "run"}, {ID: "a", Do: "check"}, {ID: "b", Do: "check", Skipped: "not for this mode/context"}, {ID: CleanupStep, Do: "delete-force"}}, 2},
		{"the second trial only", []Step{{ID: "a", Do: "check"}, {ID: CleanupStep}, {ID: "a", Do: "check"}, {ID: "c", Do: "check"}, {ID: CleanupStep}}, 3},
		{"no cleanup yet", []Step{{ID: "a", Do: "check"}}, 1},
		{"none", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := TrialChecks(tc.steps); got != tc.want {
				t.Errorf("TrialChecks = %d, want %d", got, tc.want)
			}
		})
	}
}
