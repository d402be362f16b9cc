package upstream

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/runscbuild"
	"github.com/runsc-cgroups/cgconform/runscbuild/patchmail"
	"github.com/runsc-cgroups/cgconform/runscbuild/prtext"
)

func neutralMail(subject string) string {
	return "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n" +
		"From: " + patchmail.Placeholder + "\n" +
		"Date: Wed, 2 Dec 2026 12:06:46 +0000\n" +
		"Subject: [PATCH 07/12] " + subject + "\n\n" +
		"Why.\n\n" + patchmail.AssistedBy + "\n---\n" +
		"diff --git a/x.go b/x.go\nindex 1..2 100644\n--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b\n"
}

const prMD = "# runsc/cgroup: x\n\n## Before and after\n\n<!-- table: delete -->\n"

// conformanceJSON is a conformance report.json, as cgconform writes it.
func conformanceJSON(t *testing.T) string {
	t.Helper()
	r := &report.Report{
		Schema: report.Schema, Started: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC),
		Host: report.Host{CgroupMode: "hybrid", Kernel: "6.1.0"},
		Results: []report.Result{
			{Case: "delete", Context: "host", Runtime: "runsc-stock", CgroupMode: "hybrid", Outcome: report.Divergence, Reason: "leaks"},
			{Case: "delete", Context: "host", Runtime: "runsc-patched", CgroupMode: "hybrid", Outcome: report.Pass},
		},
	}
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func writeSeriesFixture(t *testing.T) *runscbuild.Series {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"01-levels/0001-runsc-cgroup-a.patch":     neutralMail("runsc/cgroup: a"),
		"01-levels/0005-runsc-container-b.patch":  neutralMail("runsc/container: b"),
		"01-levels/PR.md":                         prMD,
		"02-empty-path/0003-runsc-cgroup-c.patch": neutralMail("runsc/cgroup: c"),
		"02-empty-path/PR.md":                     prMD,
		"series":                                  "pr 01-levels\n0001-runsc-cgroup-a.patch\n0005-runsc-container-b.patch\npr 02-empty-path after 01-levels\n0003-runsc-cgroup-c.patch\n",
	})
	s, err := runscbuild.ReadSeries(filepath.Join(dir, "series"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestWrite(t *testing.T) {
	s := writeSeriesFixture(t)
	res, err := prtext.Parse([]byte(conformanceJSON(t)))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	id := patchmail.Identity{Name: "Jane Doe", Email: "jane@users.noreply.github.com"}
	// A conformance report records no build: its tables are unproven.
	cfg := WriteConfig{Series: s, Out: out, Author: id, Report: res, Module: runscbuild.Module{Version: "v0.0.0-x"}, AllowUnproven: true, Log: io.Discard}
	if _, err := Write(cfg); err != nil {
		t.Fatal(err)
	}
	var files []string
	err = filepath.Walk(out, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			rel, _ := filepath.Rel(out, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	want := []string{
		".upstream-series",
		"01-levels/0001-runsc-cgroup-a.patch",
		"01-levels/0002-runsc-container-b.patch",
		"01-levels/PR.md",
		"02-empty-path/0001-runsc-cgroup-c.patch",
		"02-empty-path/PR.md",
	}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	data, err := os.ReadFile(filepath.Join(out, "01-levels", "0002-runsc-container-b.patch"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := patchmail.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := m.Get("Subject"); s != "[PATCH 2/2] runsc/container: b" {
		t.Errorf("subject %q", s)
	}
	if f, _ := m.Get("From"); f != "Jane Doe <jane@users.noreply.github.com>" {
		t.Errorf("from %q", f)
	}
	if diff := cmp.Diff([]string{patchmail.AssistedBy, "Signed-off-by: Jane Doe <jane@users.noreply.github.com>"}, m.Trailers()); diff != "" {
		t.Errorf("trailers (-want +got):\n%s", diff)
	}
	md, err := os.ReadFile(filepath.Join(out, "01-levels", "PR.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| delete [host] | ✗ → ✓ |") || strings.Contains(string(md), "<!-- table") || !strings.Contains(string(md), "**Build unproven:**") {
		t.Errorf("PR.md not filled, marked build unproven:\n%s", md)
	}
	// 02 needs 01: its cells have a step for 01 alone (never run here).
	md, err = os.ReadFile(filepath.Join(out, "02-empty-path", "PR.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| delete [host] | ✗ → ? → ✓ |") {
		t.Errorf("PR.md of a pull request with a dependency has no step for what it needs:\n%s", md)
	}

	// Again into the same folder: allowed, and stale files go.
	write(t, out, map[string]string{"01-levels/stale.patch": "x"})
	cfg.Report = nil
	if _, err := Write(cfg); err != nil {
		t.Fatalf("second Write: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "01-levels", "stale.patch")); !os.IsNotExist(err) {
		t.Errorf("stale file survived a second Write (stat: %v)", err)
	}
	md, _ = os.ReadFile(filepath.Join(out, "01-levels", "PR.md"))
	if !strings.Contains(string(md), prtext.Unfilled) {
		t.Errorf("PR.md without a report does not say its table is missing:\n%s", md)
	}

	// A folder it did not make is never emptied.
	other := t.TempDir()
	write(t, other, map[string]string{"mine.txt": "keep"})
	cfg.Out = other
	if _, err := Write(cfg); err == nil || !strings.Contains(err.Error(), "not made by upstream-series") {
		t.Errorf("Write into a foreign folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, "mine.txt")); err != nil {
		t.Errorf("foreign file removed: %v", err)
	}

	// No author, no output.
	cfg.Out, cfg.Author = filepath.Join(t.TempDir(), "x"), patchmail.Identity{}
	if _, err := Write(cfg); err == nil {
		t.Errorf("Write without an author: no error")
	}
}

func TestIdentity(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	bare := t.TempDir()
	configured := t.TempDir()
	mustGit(t, configured, "init", "-q")
	mustGit(t, configured, "config", "user.name", "Git User")
	mustGit(t, configured, "config", "user.email", "git-user@users.noreply.github.com")
	seeded := t.TempDir()
	mustGit(t, seeded, "init", "-q")
	mustGit(t, seeded, "config", "user.name", "Seed 2600061b maintainers")
	mustGit(t, seeded, "config", "user.email", "maintainers@users.noreply.a-seed-2600061b.example")
	for _, tc := range []struct {
		name, repo, n, e string
		want             patchmail.Identity
		source, wantErr  string
	}{
		{name: "variables", repo: bare, n: "Jane", e: "jane@users.noreply.github.com", want: patchmail.Identity{Name: "Jane", Email: "jane@users.noreply.github.com"}, source: "AUTHOR_NAME, AUTHOR_EMAIL"},
		{name: "git config", repo: configured, want: patchmail.Identity{Name: "Git User", Email: "git-user@users.noreply.github.com"}, source: "git config user.name, git config user.email"},
		{name: "variables win", repo: configured, e: "other@users.noreply.github.com", want: patchmail.Identity{Name: "Git User", Email: "other@users.noreply.github.com"}, source: "git config user.name, AUTHOR_EMAIL"},
		{name: "neither", repo: bare, wantErr: "no author"},
		{name: "placeholder", repo: bare, n: "Author Set At Send Time", e: "author@send-time.invalid", wantErr: "placeholder"},
		{name: "made-up identity in git config", repo: seeded, wantErr: "reserved for examples"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, source, err := Identity(tc.repo, tc.n, tc.e)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Identity error = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id != tc.want || source != tc.source {
				t.Errorf("Identity = %+v from %q, want %+v from %q", id, source, tc.want, tc.source)
			}
		})
	}
}

func TestSendSteps(t *testing.T) {
	s := writeSeriesFixture(t)
	want := "  git checkout -b 01-levels origin/master && git am out/01-levels/*.patch\n" +
		"  git checkout -b 02-empty-path origin/master && git am out/01-levels/*.patch out/02-empty-path/*.patch\n"
	if diff := cmp.Diff(want, SendSteps(s, "out")); diff != "" {
		t.Errorf("SendSteps (-want +got):\n%s", diff)
	}
}

// TestEvidenceArgs: stock runs every table's cases, each pull request's
// build only its own, as does the build of what a pull request needs,
// alone, and no flag value holds a blank.
func TestEvidenceArgs(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"01-a/0001-a.patch": "a",
		"01-a/PR.md":        "# a\n<!-- table: one two[ctx] -->\n",
		"02-b/0002-b.patch": "b",
		"02-b/PR.md":        "# b\n<!-- table: three -->\n",
	}
	for name, data := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	series := filepath.Join(dir, runscbuild.SeriesFile)
	if err := os.WriteFile(series, []byte("pr 01-a\n0001-a.patch\npr 02-b after 01-a\n0002-b.patch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := runscbuild.ReadSeries(series)
	if err != nil {
		t.Fatal(err)
	}
	got, err := EvidenceArgs(s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"-runtimes", "runsc-stock=/payload/bin/runsc-stock,runsc-pr-01-a=/payload/bin/runsc-pr-01-a,runsc-pr-02-b=/payload/bin/runsc-pr-02-b,runsc-needs-02-b=/payload/bin/runsc-needs-02-b",
		"-run", `^(one\s\[|two\s\[ctx\]|three\s\[)`,
		"-harness-args", `-runtime-cases runsc-pr-01-a=^(one\s\[|two\s\[ctx\]) -runtime-cases runsc-pr-02-b=^(three\s\[) -runtime-cases runsc-needs-02-b=^(three\s\[)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EvidenceArgs (-want +got):\n%s", diff)
	}
	for _, name := range []string{"one [host]", "two [ctx]", "three [container]"} {
		if !regexp.MustCompile(got[3]).MatchString(name) {
			t.Errorf("-run %s does not match %q", got[3], name)
		}
	}
	if regexp.MustCompile(got[3]).MatchString("two [host]") || regexp.MustCompile(got[3]).MatchString("onetwo [host]") {
		t.Errorf("-run %s matches more than the tables name", got[3])
	}
}
