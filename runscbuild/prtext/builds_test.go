package prtext

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/report"
)

// TestTableBuilds: a table prints only cells from the builds the current
// patches make. Where two files fill a cell the later wins, and if the
// later is from another build the table is refused, naming the file and
// both builds; a run that records no build is refused unless unproven
// tables are allowed, and then the table says so; what the pull request
// needs, alone, is a step of each cell when it needs any.
func TestTableBuilds(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, m *report.Matrix) string {
		t.Helper()
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fresh := file("fresh.json", builtMatrix(patchedBuild))
	stale := file("stale.json", builtMatrix(oldBuild))
	unproven := file("unproven.json", testMatrix())
	needs := builtMatrix(patchedBuild)
	for i := range needs.Hosts {
		needs.Hosts[i].Builds["runsc-needs-02-b"] = stockBuild
		for _, r := range needs.Hosts[i].Results {
			if r.Runtime == "runsc-stock" {
				r.Runtime = "runsc-needs-02-b"
				needs.Hosts[i].Results = append(needs.Hosts[i].Results, r)
			}
		}
	}
	withNeeds := file("needs.json", needs)
	needsCols := cols()
	needsCols.Needs, needsCols.NeedsAbout = "runsc-needs-02-b", "stock runsc with 01-a"
	needsCols.Want = map[string]report.Build{"runsc-stock": stockBuild, "runsc-needs-02-b": stockBuild, "runsc-patched": patchedBuild}
	allow := cols()
	allow.AllowUnproven = true
	sels := []Selector{{Case: "failed-start", Context: "host"}}
	for _, tc := range []struct {
		name     string
		files    []string
		cols     Columns
		row      string // the table's row, when printed
		mark     bool   // printed marked "Build unproven"
		problems []BuildProblem
	}{
		{name: "current", files: []string{fresh}, cols: cols(), row: "| failed-start [host] | ✗ → ✓ | ? → ? | ? → ? |"},
		{name: "stale", files: []string{stale}, cols: cols(),
			problems: []BuildProblem{{Runtime: "runsc-patched", File: stale, Have: &oldBuild, Want: patchedBuild, Cells: 1}}},
		{name: "stale even when unproven is allowed", files: []string{stale}, cols: allow,
			problems: []BuildProblem{{Runtime: "runsc-patched", File: stale, Have: &oldBuild, Want: patchedBuild, Cells: 1}}},
		{name: "a later current run wins over a stale one", files: []string{stale, fresh}, cols: cols(), row: "| failed-start [host] | ✗ → ✓ | ? → ? | ? → ? |"},
		{name: "a later stale run wins, and is refused", files: []string{fresh, stale}, cols: cols(),
			problems: []BuildProblem{{Runtime: "runsc-patched", File: stale, Have: &oldBuild, Want: patchedBuild, Cells: 1}}},
		{name: "unproven", files: []string{unproven}, cols: cols(), problems: []BuildProblem{
			{Runtime: "runsc-stock", File: unproven, Want: stockBuild, Cells: 1},
			{Runtime: "runsc-patched", File: unproven, Want: patchedBuild, Cells: 1},
		}},
		{name: "unproven, allowed", files: []string{unproven}, cols: allow, mark: true, row: "| failed-start [host] | ✗ → ✓ | ? → ? | ? → ? |"},
		{name: "what it needs, alone", files: []string{withNeeds}, cols: needsCols, row: "| failed-start [host] | ✗ → ✗ → ✓ | ? → ? → ? | ? → ? → ? |"},
		{name: "what it needs, never run", files: []string{fresh}, cols: needsCols,
			problems: []BuildProblem{{Runtime: "runsc-needs-02-b", Want: stockBuild}}},
		{name: "its own build, never run", files: []string{withNeeds}, cols: func() Columns {
			c := needsCols
			c.After, c.Want = "runsc-pr-02-b", map[string]report.Build{"runsc-stock": stockBuild, "runsc-needs-02-b": stockBuild, "runsc-pr-02-b": patchedBuild}
			return c
		}(), problems: []BuildProblem{{Runtime: "runsc-pr-02-b", Want: patchedBuild}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := LoadAll(tc.files)
			if err != nil {
				t.Fatal(err)
			}
			got, warnings, err := Table(res, sels, tc.cols)
			if tc.problems != nil {
				var be *BuildError
				if !errors.As(err, &be) {
					t.Fatalf("Table: err = %v, want a *BuildError", err)
				}
				if diff := cmp.Diff(tc.problems, be.Problems); diff != "" {
					t.Errorf("problems (-want +got):\n%s", diff)
				}
				if got != "" {
					t.Errorf("a refused table was rendered:\n%s", got)
				}
				for _, p := range be.Problems {
					if p.Stale() && (!strings.Contains(err.Error(), p.Have.String()) || !strings.Contains(err.Error(), p.Want.String()) || !strings.Contains(err.Error(), p.File)) {
						t.Errorf("error %q does not name the file and both builds", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got, tc.row+"\n") {
				t.Errorf("table has no row %q:\n%s", tc.row, got)
			}
			marked := strings.HasPrefix(got, "**Build unproven:**")
			if marked != tc.mark {
				t.Errorf("marked build unproven = %v, want %v:\n%s", marked, tc.mark, got)
			}
			if tc.mark && !strings.Contains(got, EvidenceCommand(sels)) {
				t.Errorf("an unproven table does not say how to measure it again:\n%s", got)
			}
			var unprovenWarnings int
			for _, w := range warnings {
				if strings.HasPrefix(w, "build unproven: ") {
					unprovenWarnings++
				}
			}
			if (unprovenWarnings > 0) != tc.mark {
				t.Errorf("warnings %q: want build unproven ones only when marked (%v)", warnings, tc.mark)
			}
			if tc.cols.Needs != "" && !strings.Contains(got, "runsc-needs-02-b (what it needs, alone: stock runsc with 01-a)") {
				t.Errorf("the legend does not say what the needs step is:\n%s", got)
			}
		})
	}
}

// TestFillRefusesEveryStaleTable: a PR.md with two tables from a stale run
// is refused once, with both tables' cases for the command to rerun.
func TestFillRefusesEveryStaleTable(t *testing.T) {
	data, err := json.Marshal(builtMatrix(oldBuild))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	md := "<!-- table: failed-start[host] -->\n\ntext\n\n<!-- table: nested-rollup -->\n"
	_, _, err = Fill(md, res, cols())
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("Fill: err = %v, want a *BuildError", err)
	}
	if diff := cmp.Diff([]Selector{{Case: "failed-start", Context: "host"}, {Case: "nested-rollup"}}, be.Selectors); diff != "" {
		t.Errorf("selectors (-want +got):\n%s", diff)
	}
	if want := `make evidence MATRIX_FLAGS="-run '^(failed-start\s\[host\]|nested-rollup\s\[)'"`; EvidenceCommand(be.Selectors) != want {
		t.Errorf("EvidenceCommand = %s, want %s", EvidenceCommand(be.Selectors), want)
	}
}
