package prtext

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/report"
)

// needsColumns are the columns of a pull request that needs another:
// stock → what it needs, alone → its own build.
func needsColumns() Columns {
	return Columns{
		Before: "runsc-stock", Needs: "runsc-needs-02-b", NeedsAbout: "stock runsc with 01-a", After: "runsc-pr-02-b",
		Want: map[string]report.Build{"runsc-stock": stockBuild, "runsc-needs-02-b": stockBuild, "runsc-pr-02-b": patchedBuild},
	}
}

// results is a run of one host mode, v1, each outcome of a case in the
// host context, every cell from the current build of its runtime.
func results(cols Columns, outcomes ...Outcome) *Results {
	res := &Results{Source: "test run", Modes: []string{"v1"}}
	for _, o := range outcomes {
		o.Context, o.Mode = "host", "v1"
		b := cols.Want[o.Runtime]
		o.Build = &b
		if o.Outcome == report.Fail && o.Reason == "" {
			o.Reason = "gone: left /x"
		}
		res.Outcomes = append(res.Outcomes, o)
	}
	return res
}

// TestTableCellsAgreeWithLegend: before the last step a failure that the
// last step passes is the bug that is fixed, declared as such in the
// legend, never FAIL ("an unexpected failure"); FAIL stays where the last
// step does not pass, and in the last step; a divergence keeps its ✗.
func TestTableCellsAgreeWithLegend(t *testing.T) {
	o := func(kase, rt string, x report.Outcome) Outcome { return Outcome{Case: kase, Runtime: rt, Outcome: x} }
	for _, tc := range []struct {
		name  string
		cols  Columns
		cells []report.Outcome // one per step
		row   string
		notes []string // its note lines, in order
	}{
		{name: "needs alone fails, the pull request fixes it", cols: needsColumns(), cells: []report.Outcome{report.Divergence, report.Fail, report.Pass},
			row: "✗ → bug → ✓", notes: []string{"- ✗ c [host], runsc-stock: (the report gives no reason)", "- bug c [host], runsc-needs-02-b, in v1: gone: left /x"}},
		{name: "stock and needs alone fail", cols: needsColumns(), cells: []report.Outcome{report.Fail, report.Fail, report.Pass},
			row: "bug → bug → ✓", notes: []string{"- bug c [host], runsc-stock, in v1: gone: left /x", "- bug c [host], runsc-needs-02-b, in v1: gone: left /x"}},
		{name: "what it needs fixes it", cols: needsColumns(), cells: []report.Outcome{report.Fail, report.Pass, report.Pass},
			row: "bug → ✓ → ✓", notes: []string{"- bug c [host], runsc-stock, in v1: gone: left /x"}},
		{name: "the pull request fails too", cols: needsColumns(), cells: []report.Outcome{report.Fail, report.Fail, report.Fail},
			row: "FAIL → FAIL → FAIL", notes: []string{"- FAIL c [host], runsc-stock, in v1: gone: left /x", "- FAIL c [host], runsc-needs-02-b, in v1: gone: left /x", "- FAIL c [host], runsc-pr-02-b, in v1: gone: left /x"}},
		{name: "the pull request breaks it", cols: needsColumns(), cells: []report.Outcome{report.Pass, report.Pass, report.Fail},
			row: "✓ → ✓ → FAIL", notes: []string{"- FAIL c [host], runsc-pr-02-b, in v1: gone: left /x"}},
		{name: "the pull request does not apply", cols: needsColumns(), cells: []report.Outcome{report.Fail, report.Fail, report.Skip},
			row: "FAIL → FAIL → –", notes: []string{"- FAIL c [host], runsc-stock, in v1: gone: left /x", "- FAIL c [host], runsc-needs-02-b, in v1: gone: left /x"}},
		{name: "no needs: stock fails, the series fixes it", cols: cols(), cells: []report.Outcome{report.Fail, report.Pass},
			row: "bug → ✓", notes: []string{"- bug c [host], runsc-stock, in v1: gone: left /x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var outs []Outcome
			for i, rt := range tc.cols.runtimes() {
				outs = append(outs, o("c", rt, tc.cells[i]))
			}
			got, _, err := Table(results(tc.cols, outs...), []Selector{{Case: "c"}}, tc.cols)
			if err != nil {
				t.Fatal(err)
			}
			if want := "| c [host] | " + tc.row + " |\n"; !strings.Contains(got, want) {
				t.Errorf("table has no row %q:\n%s", want, got)
			}
			var notes []string
			for _, l := range strings.Split(got, "\n") {
				if strings.HasPrefix(l, "- ") {
					notes = append(notes, l)
				}
			}
			if diff := cmp.Diff(tc.notes, notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			legend := legendOf(t, got)
			if strings.Contains(legend, "FAIL an unexpected failure;") {
				t.Errorf("the legend calls every FAIL unexpected, bug cells included:\n%s", legend)
			}
			for _, w := range []string{"bug (", "fails as expected", "FAIL an unexpected failure: in the last step, or before it where the last step does not pass either"} {
				if !strings.Contains(legend, w) {
					t.Errorf("the legend does not say %q:\n%s", w, legend)
				}
			}
		})
	}
}

// TestTableLegendPerColumns: the legend names the steps where bug can
// appear and who fixes it.
func TestTableLegendPerColumns(t *testing.T) {
	for _, tc := range []struct {
		name string
		cols Columns
		want string
	}{
		{name: "what it needs, alone", cols: needsColumns(),
			want: "bug (first two steps only) fails as expected, fixed by a later step (this pull request, unless the middle step passes; below)"},
		{name: "the pull request alone", cols: func() Columns {
			c := needsColumns()
			c.Needs, c.NeedsAbout = "", ""
			return c
		}(), want: "bug (first step only) fails as expected, fixed by this pull request (below)"},
		{name: "the whole series", cols: cols(), want: "bug (first step only) fails as expected, fixed by the series (below)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var outs []Outcome
			for _, rt := range tc.cols.runtimes() {
				outs = append(outs, Outcome{Case: "c", Runtime: rt, Outcome: report.Pass})
			}
			got, _, err := Table(results(tc.cols, outs...), []Selector{{Case: "c"}}, tc.cols)
			if err != nil {
				t.Fatal(err)
			}
			if legend := legendOf(t, got); !strings.Contains(legend, tc.want) {
				t.Errorf("legend does not say %q:\n%s", tc.want, legend)
			}
		})
	}
}

// TestTableTooFewKills: a kill storm's pass resting on fewer than
// MinKills landed kills says how few, 0 included, and the legend gives the
// threshold; a failure or divergence of one is shown as it is.
func TestTableTooFewKills(t *testing.T) {
	c := needsColumns()
	storm := func(kase, rt string, x report.Outcome, killed int) Outcome {
		return Outcome{Case: kase, Runtime: rt, Outcome: x, Trials: &report.Trials{Trials: 40, Killed: killed}}
	}
	res := results(c,
		storm("none-landed", "runsc-stock", report.Pass, 0), storm("none-landed", "runsc-needs-02-b", report.Divergence, 0), storm("none-landed", "runsc-pr-02-b", report.Pass, 0),
		storm("few", "runsc-stock", report.Divergence, 2), storm("few", "runsc-needs-02-b", report.Fail, 1), storm("few", "runsc-pr-02-b", report.Pass, 2),
		storm("enough", "runsc-stock", report.Divergence, 12), storm("enough", "runsc-needs-02-b", report.Fail, 10), storm("enough", "runsc-pr-02-b", report.Pass, 10),
		storm("one", "runsc-stock", report.Pass, 1), storm("one", "runsc-needs-02-b", report.Pass, 9), storm("one", "runsc-pr-02-b", report.Pass, 11),
		Outcome{Case: "no-trials", Runtime: "runsc-stock", Outcome: report.Divergence}, Outcome{Case: "no-trials", Runtime: "runsc-needs-02-b", Outcome: report.Pass}, Outcome{Case: "no-trials", Runtime: "runsc-pr-02-b", Outcome: report.Pass},
	)
	got, warnings, err := Table(res, []Selector{{Case: "none-landed"}, {Case: "few"}, {Case: "enough"}, {Case: "one"}, {Case: "no-trials"}}, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		"| none-landed [host] | ✓ (0 kills: too few) → ✗ → ✓ (0 kills: too few) |",
		"| few [host] | ✗ → bug → ✓ (2 kills: too few) |",
		"| enough [host] | ✗ → bug → ✓ |",
		"| one [host] | ✓ (1 kill: too few) → ✓ (9 kills: too few) → ✓ |",
		"| no-trials [host] | ✗ → ✓ → ✓ |",
	} {
		if !strings.Contains(got, row+"\n") {
			t.Errorf("table has no row %q:\n%s", row, got)
		}
	}
	if want := "✓ (N kills: too few) a kill storm that passes with its kill landed in fewer than 10 trials, too few to count as a pass"; !strings.Contains(legendOf(t, got), want) {
		t.Errorf("legend does not say %q:\n%s", want, legendOf(t, got))
	}
	wantWarn := []string{
		"none-landed [host] on v1: runsc-pr-02-b passes on 0 kills, fewer than 10",
		"few [host] on v1: runsc-pr-02-b passes on 2 kills, fewer than 10",
	}
	if diff := cmp.Diff(wantWarn, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	// A table of no kill storm does not speak of kills.
	plain, _, err := Table(res, []Selector{{Case: "no-trials"}}, c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain, "kill") {
		t.Errorf("a table without kill storms speaks of kills:\n%s", plain)
	}
}

// TestParseKeepsTrials: a result's trials reach its cell.
func TestParseKeepsTrials(t *testing.T) {
	m := builtMatrix(patchedBuild)
	m.Hosts[0].Results[2].Trials = &report.Trials{Trials: 2, Killed: 1}
	res := fromMatrix(m)
	if got := res.Outcomes[2].Trials; got == nil || got.Killed != 1 {
		t.Errorf("outcome 2's trials = %+v, want killed 1", got)
	}
}

// legendOf is the "Each cell:" paragraph of a table.
func legendOf(t *testing.T, table string) string {
	t.Helper()
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, "Each cell:") {
			return l
		}
	}
	t.Fatalf("table has no legend:\n%s", table)
	return ""
}
