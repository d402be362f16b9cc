package runscbuild

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// seriesDir lays out a patches folder: files maps a path relative to it
// (e.g. "01-a/0001-x.patch", "01-a/PR.md") to its content.
func seriesDir(t *testing.T, series string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, SeriesFile)
	if err := os.WriteFile(p, []byte(series), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// threePRs is a valid layout: 02 builds on 01, 03 on 02.
var threePRs = map[string]string{
	"01-levels/0001-a.patch":     "a",
	"01-levels/0002-b.patch":     "b",
	"01-levels/PR.md":            "# levels\n",
	"02-empty-path/0003-c.patch": "c",
	"02-empty-path/PR.md":        "# empty path\n",
	"03-nested/0004-d.patch":     "d",
	"03-nested/PR.md":            "# nested\n",
}

const threePRsSeries = `# A comment.

pr 01-levels
  0001-a.patch
  0002-b.patch
pr 02-empty-path after 01-levels
0003-c.patch

pr 03-nested after 02-empty-path
  0004-d.patch
`

func TestReadSeries(t *testing.T) {
	s, err := ReadSeries(seriesDir(t, threePRsSeries, threePRs))
	if err != nil {
		t.Fatal(err)
	}
	type pr struct {
		Name    string
		After   []string
		Patches []string
	}
	var got []pr
	for _, p := range s.PRs {
		x := pr{Name: p.Name, After: p.After}
		for _, f := range p.Patches {
			if f.PR != p.Name || filepath.Base(f.Path) != strings.TrimPrefix(f.Name, p.Name+"/") {
				t.Errorf("patch %+v does not belong to %s", f, p.Name)
			}
			x.Patches = append(x.Patches, f.Name)
		}
		got = append(got, x)
	}
	want := []pr{
		{Name: "01-levels", Patches: []string{"01-levels/0001-a.patch", "01-levels/0002-b.patch"}},
		{Name: "02-empty-path", After: []string{"01-levels"}, Patches: []string{"02-empty-path/0003-c.patch"}},
		{Name: "03-nested", After: []string{"02-empty-path"}, Patches: []string{"03-nested/0004-d.patch"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
	var all []string
	for _, p := range s.Patches() {
		all = append(all, p.Name)
	}
	if diff := cmp.Diff([]string{"01-levels/0001-a.patch", "01-levels/0002-b.patch", "02-empty-path/0003-c.patch", "03-nested/0004-d.patch"}, all); diff != "" {
		t.Errorf("Patches() (-want +got):\n%s", diff)
	}
}

// fourPRs is threePRs and 04-busy, which needs only 01-levels.
func fourPRs(t *testing.T) *Series {
	t.Helper()
	files := map[string]string{}
	for k, v := range threePRs {
		files[k] = v
	}
	files["04-busy/0005-e.patch"] = "e"
	files["04-busy/PR.md"] = "# busy\n"
	s, err := ReadSeries(seriesDir(t, threePRsSeries+"pr 04-busy after 01-levels\n0005-e.patch\n", files))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSeriesNeedsAndBefore(t *testing.T) {
	s := fourPRs(t)
	names := func(prs []PR) []string {
		var out []string
		for _, p := range prs {
			out = append(out, p.Name)
		}
		return out
	}
	for _, tc := range []struct {
		pr          string
		needs, befo []string
	}{
		{pr: "01-levels"},
		{pr: "02-empty-path", needs: []string{"01-levels"}, befo: []string{"01-levels"}},
		// Transitive, in series order.
		{pr: "03-nested", needs: []string{"01-levels", "02-empty-path"}, befo: []string{"01-levels", "02-empty-path"}},
		// Only what it declares: alone is not the same as in order.
		{pr: "04-busy", needs: []string{"01-levels"}, befo: []string{"01-levels", "02-empty-path", "03-nested"}},
	} {
		t.Run(tc.pr, func(t *testing.T) {
			if diff := cmp.Diff(tc.needs, names(s.Needs(tc.pr))); diff != "" {
				t.Errorf("Needs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.befo, names(s.Before(tc.pr))); diff != "" {
				t.Errorf("Before (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadSeriesErrors(t *testing.T) {
	with := func(extra map[string]string, drop ...string) map[string]string {
		m := map[string]string{}
		for k, v := range threePRs {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		for _, k := range drop {
			delete(m, k)
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		series  string
		files   map[string]string
		wantErr string
	}{
		{name: "patch before any pr", series: "0001-a.patch\n" + threePRsSeries, files: threePRs, wantErr: "before any"},
		{name: "bad pr name", series: "pr levels\n0001-a.patch\n", files: threePRs, wantErr: "two digits"},
		{name: "pr without name", series: "pr\n", files: threePRs, wantErr: "want \"pr NN-name"},
		{name: "out of order", series: "pr 02-empty-path\n0003-c.patch\npr 01-levels\n0001-a.patch\n0002-b.patch\n", files: with(nil, "03-nested/0004-d.patch", "03-nested/PR.md"), wantErr: "number them in series order"},
		{name: "declared twice", series: threePRsSeries + "pr 03-nested\n", files: threePRs, wantErr: "declared twice"},
		{name: "after a later pr", series: strings.Replace(threePRsSeries, "02-empty-path after 01-levels", "02-empty-path after 03-nested", 1), files: threePRs, wantErr: "not an earlier pull request"},
		{name: "after nothing", series: strings.Replace(threePRsSeries, "02-empty-path after 01-levels", "02-empty-path after", 1), files: threePRs, wantErr: "want \"after NN-name"},
		{name: "not after", series: strings.Replace(threePRsSeries, "02-empty-path after 01-levels", "02-empty-path before 01-levels", 1), files: threePRs, wantErr: "want \"after NN-name"},
		{name: "same dependency twice", series: strings.Replace(threePRsSeries, "after 01-levels", "after 01-levels 01-levels", 1), files: threePRs, wantErr: "twice"},
		{name: "patch listed twice", series: strings.Replace(threePRsSeries, "0002-b.patch", "0001-a.patch", 1), files: with(nil, "01-levels/0002-b.patch"), wantErr: "listed twice"},
		{name: "missing patch file", series: strings.Replace(threePRsSeries, "0002-b.patch", "0009-z.patch", 1), files: with(nil, "01-levels/0002-b.patch"), wantErr: "0009-z.patch"},
		{name: "path instead of name", series: strings.Replace(threePRsSeries, "0003-c.patch", "02-empty-path/0003-c.patch", 1), files: threePRs, wantErr: "want one patch file name"},
		{name: "not a patch", series: strings.Replace(threePRsSeries, "0003-c.patch", "0003-c.diff", 1), files: threePRs, wantErr: "want one patch file name"},
		{name: "unlisted patch in a folder", series: threePRsSeries, files: with(map[string]string{"03-nested/0005-e.patch": "e"}), wantErr: "0005-e.patch is not listed under \"pr 03-nested\""},
		{name: "loose patch", series: threePRsSeries, files: with(map[string]string{"0001-a.patch": "a"}), wantErr: "in no pull request folder"},
		{name: "no PR.md", series: threePRsSeries, files: with(nil, "02-empty-path/PR.md"), wantErr: "02-empty-path has no description"},
		{name: "empty pr", series: threePRsSeries + "pr 04-empty\n", files: with(map[string]string{"04-empty/PR.md": "x"}), wantErr: "lists no patch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadSeries(seriesDir(t, tc.series, tc.files))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ReadSeries error = %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
}

func TestSyncWorkspace(t *testing.T) {
	s, err := ReadSeries(seriesDir(t, threePRsSeries, threePRs))
	if err != nil {
		t.Fatal(err)
	}
	in := "http_archive(\n    patches = [\n        # series:begin\n        \"//patches:old.patch\",\n        # series:end\n    ],\n)\n"
	got, err := SyncWorkspace(in, s)
	if err != nil {
		t.Fatal(err)
	}
	want := `http_archive(
    patches = [
        # series:begin
        # 01-levels
        "//patches:01-levels/0001-a.patch",
        "//patches:01-levels/0002-b.patch",
        # 02-empty-path
        "//patches:02-empty-path/0003-c.patch",
        # 03-nested
        "//patches:03-nested/0004-d.patch",
        # series:end
    ],
)
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SyncWorkspace (-want +got):\n%s", diff)
	}
	if again, err := SyncWorkspace(got, s); err != nil || again != got {
		t.Errorf("SyncWorkspace is not idempotent: err %v, diff:\n%s", err, cmp.Diff(got, again))
	}
	if _, err := SyncWorkspace("patches = []\n", s); err == nil {
		t.Errorf("SyncWorkspace without markers: no error")
	}
}

// TestPRFlavor: a pull request's build is stock with its own patches and
// those of the pull requests it needs, in series order, and nothing else.
func TestPRFlavor(t *testing.T) {
	s := fourPRs(t)
	pr, _ := s.PR("04-busy")
	f := PRFlavor(s, pr)
	var got []string
	for _, p := range f.Patches {
		got = append(got, p.Name)
	}
	if diff := cmp.Diff([]string{"01-levels/0001-a.patch", "01-levels/0002-b.patch", "04-busy/0005-e.patch"}, got); diff != "" {
		t.Errorf("patches (-want +got):\n%s", diff)
	}
	if f.Name != "pr-04-busy" || PRRuntime(pr.Name) != "runsc-"+f.Name {
		t.Errorf("flavor %q, runtime %q: want pr-04-busy built as runsc-pr-04-busy", f.Name, PRRuntime(pr.Name))
	}
}

// TestReadSeriesCarried: a carried set comes after the pull requests, its
// patches are built last, it is no pull request, and it is checked as one.
func TestReadSeriesCarried(t *testing.T) {
	files := map[string]string{}
	for k, v := range threePRs {
		files[k] = v
	}
	files["90-ours/0009-z.patch"] = "z"
	files["90-ours/CARRY.md"] = "# ours\n"
	s, err := ReadSeries(seriesDir(t, threePRsSeries+"carry 90-ours after 01-levels\n0009-z.patch\n", files))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range s.Patches() {
		got = append(got, p.Name)
	}
	want := []string{"01-levels/0001-a.patch", "01-levels/0002-b.patch", "02-empty-path/0003-c.patch", "03-nested/0004-d.patch", "90-ours/0009-z.patch"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Patches (-want +got):\n%s", diff)
	}
	if pr, ok := s.PR("90-ours"); !ok || !pr.Carried || len(s.PRs) != 3 {
		t.Errorf("the carried set is not found as carried, or is a pull request: %+v, %+v", pr, s.PRs)
	}
	// upstream-check's rows: alone on what it names, in order on all.
	names := func(prs []PR) (out []string) {
		for _, p := range prs {
			out = append(out, p.Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{"01-levels"}, names(s.Needs("90-ours"))); diff != "" {
		t.Errorf("Needs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"01-levels", "02-empty-path", "03-nested"}, names(s.Before("90-ours"))); diff != "" {
		t.Errorf("Before (-want +got):\n%s", diff)
	}
	if !strings.Contains(WorkspaceBlock(s, ""), "//patches:90-ours/0009-z.patch") {
		t.Errorf("WORKSPACE does not apply the carried patch:\n%s", WorkspaceBlock(s, ""))
	}
	files["95-late/0010-y.patch"] = "y"
	files["95-late/PR.md"] = "# late\n"
	if _, err := ReadSeries(seriesDir(t, threePRsSeries+"carry 90-ours\n0009-z.patch\npr 95-late\n0010-y.patch\n", files)); err == nil || !strings.Contains(err.Error(), "carried patches go last") {
		t.Errorf("a pull request after a carried set: %v", err)
	}
}
