package upstream

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/runscbuild"
	"github.com/runsc-cgroups/cgconform/runscbuild/patchmail"
	"github.com/runsc-cgroups/cgconform/runscbuild/prtext"
)

// TestWriteRefusesStaleTables: a pull request whose table comes from an
// older build of its patches gets no PR.md, and the error names it, the
// evidence file, both builds and the make evidence that measures its cases
// again; the others are written. Without -allow-unproven a run with no
// recorded build is refused too.
func TestWriteRefusesStaleTables(t *testing.T) {
	s := writeSeriesFixture(t)
	m := runscbuild.Module{Version: "v0.0.0-x"}
	build := func(rt string) report.Build {
		f, ok := runscbuild.RuntimeFlavor(s, rt)
		if !ok {
			t.Fatalf("no flavor runs as %s", rt)
		}
		b, err := runscbuild.BuildOf(m, f.Patches)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	old := build("runsc-pr-02-empty-path")
	old.Patches = append([]report.PatchFile(nil), old.Patches...)
	old.Patches[2].SHA256, old.Digest = "0000", "oldoldoldold"
	builds := map[string]report.Build{
		"runsc-stock":               build("runsc-stock"),
		"runsc-pr-01-levels":        build("runsc-pr-01-levels"),
		"runsc-needs-02-empty-path": build("runsc-needs-02-empty-path"),
		"runsc-pr-02-empty-path":    old,
	}
	var results []report.Result
	for rt := range builds {
		results = append(results, report.Result{Case: "delete", Context: "host", Runtime: rt, Outcome: report.Pass})
	}
	matrix := &report.Matrix{Schema: report.MatrixSchema, Hosts: []report.HostRun{{Host: "v2", Status: report.Reported, Results: results, Builds: builds}}}
	dir := t.TempDir()
	write := func(name string, m *report.Matrix) string {
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
	evidence := write("10-evidence.json", matrix)
	unproven := *matrix
	unproven.Hosts = []report.HostRun{matrix.Hosts[0]}
	unproven.Hosts[0].Builds = nil
	noBuilds := write("20-evidence.json", &unproven)
	without := *matrix
	without.Hosts = []report.HostRun{matrix.Hosts[0]}
	without.Hosts[0].Results = slices.DeleteFunc(slices.Clone(results), func(r report.Result) bool { return r.Runtime == "runsc-pr-02-empty-path" })
	noOwnBuild := write("30-evidence.json", &without)
	id := patchmail.Identity{Name: "Jane Doe", Email: "jane@users.noreply.github.com"}
	for _, tc := range []struct {
		name          string
		files         []string
		allow         bool
		refused       []string // pull requests
		written       []string // PR.md files
		errorMentions []string
	}{
		{
			name: "stale", files: []string{evidence}, allow: true,
			refused: []string{"02-empty-path"}, written: []string{"01-levels"},
			errorMentions: []string{
				"pull request 02-empty-path", evidence, "v0.0.0-x+cgpatches.oldoldoldold", "v0.0.0-x+cgpatches." + build("runsc-pr-02-empty-path").Digest,
				"02-empty-path/0003-runsc-cgroup-c.patch", `make evidence MATRIX_FLAGS="-run '^(delete\s\[)'"`,
			},
		},
		{
			name: "unproven", files: []string{noBuilds},
			refused:       []string{"01-levels", "02-empty-path"},
			errorMentions: []string{"build unproven: 01-levels 02-empty-path", noBuilds, "-allow-unproven"},
		},
		{
			name: "its own build never run", files: []string{noOwnBuild},
			refused: []string{"02-empty-path"}, written: []string{"01-levels"},
			errorMentions: []string{"runsc-pr-02-empty-path: no run has it"},
		},
		{
			name: "unproven, allowed", files: []string{noBuilds}, allow: true,
			written: []string{"01-levels", "02-empty-path"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := prtext.LoadAll(tc.files)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out")
			_, err = Write(WriteConfig{Series: s, Out: out, Author: id, Report: res, Module: m, AllowUnproven: tc.allow, Log: io.Discard})
			var se *StaleError
			if tc.refused == nil {
				if err != nil {
					t.Fatal(err)
				}
			} else if !errors.As(err, &se) {
				t.Fatalf("Write: err = %v, want a *StaleError", err)
			} else {
				var got []string
				for _, r := range se.PRs {
					got = append(got, r.PR)
				}
				if diff := cmp.Diff(tc.refused, got); diff != "" {
					t.Errorf("refused (-want +got):\n%s", diff)
				}
				for _, w := range tc.errorMentions {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error does not mention %q:\n%v", w, err)
					}
				}
			}
			for _, pr := range []string{"01-levels", "02-empty-path"} {
				_, err := os.Stat(filepath.Join(out, pr, runscbuild.PRDescription))
				if want := strings.Contains(strings.Join(tc.written, " "), pr); (err == nil) != want {
					t.Errorf("%s/PR.md written = %v, want %v", pr, err == nil, want)
				}
			}
		})
	}
}
