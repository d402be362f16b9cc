package upstream

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/runscbuild"
	"github.com/runsc-cgroups/cgconform/runscbuild/patchmail"
	"github.com/runsc-cgroups/cgconform/runscbuild/prtext"
)

// Identity resolves who sends the series: name and email from the
// arguments when set, else from git config in repo; refused when unset or
// the placeholder. source says where each came from.
func Identity(repo, name, email string) (id patchmail.Identity, source string, err error) {
	pick := func(val, key, variable string) (string, string) {
		if strings.TrimSpace(val) != "" {
			return strings.TrimSpace(val), variable
		}
		cmd := exec.Command("git", "config", key)
		cmd.Dir = repo
		out, err := cmd.Output()
		if err != nil {
			return "", ""
		}
		return strings.TrimSpace(string(out)), "git config " + key
	}
	var ns, es string
	id.Name, ns = pick(name, "user.name", "AUTHOR_NAME")
	id.Email, es = pick(email, "user.email", "AUTHOR_EMAIL")
	if err := id.Check(); err != nil {
		return id, "", err
	}
	return id, ns + ", " + es, nil
}

// WriteConfig says what Write writes.
type WriteConfig struct {
	Series *runscbuild.Series
	Out    string // one folder per pull request goes here
	Author patchmail.Identity
	Report *prtext.Results // fills the PR.md tables; nil: prtext.Unfilled
	// Module is the pinned gVisor: with the series it makes the build each
	// runtime of a table must have been made from.
	Module        runscbuild.Module
	AllowUnproven bool // print, marked, a table whose runs record no build
	Log           io.Writer
}

// outMarker marks a folder Write made, so a second run may replace it and
// no other folder is ever emptied.
const outMarker = ".upstream-series"

// Write writes, for every pull request, Out/NN-name/000N-*.patch (with the
// sender's From: and Signed-off-by:) and Out/NN-name/PR.md (tables
// filled), and returns the tables' warnings. A pull request whose table
// prtext refuses gets no PR.md: after the others are written, a
// *StaleError names each such one and how to measure it again.
func Write(c WriteConfig) (warnings []string, err error) {
	if err := c.Author.Check(); err != nil {
		return nil, err
	}
	if err := prepareOut(c.Out); err != nil {
		return nil, err
	}
	refused := &StaleError{}
	for _, pr := range c.Series.PRs {
		dir := filepath.Join(c.Out, pr.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		for i, p := range pr.Patches {
			data, err := os.ReadFile(p.Path)
			if err != nil {
				return nil, err
			}
			out, err := patchmail.Author(data, c.Author, i+1, len(pr.Patches))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.Name, err)
			}
			name := patchmail.NumberedName(filepath.Base(p.Path), i+1)
			if err := os.WriteFile(filepath.Join(dir, name), out, 0o644); err != nil {
				return nil, err
			}
		}
		md, err := os.ReadFile(pr.Description())
		if err != nil {
			return nil, err
		}
		cols, err := c.columns(pr)
		if err != nil {
			return nil, err
		}
		filled, w, err := prtext.Fill(string(md), c.Report, cols)
		var be *prtext.BuildError
		if errors.As(err, &be) {
			refused.PRs = append(refused.PRs, RefusedTable{PR: pr.Name, Err: be})
			fmt.Fprintf(c.Log, "upstream-series: %s: %d patch(es), no PR.md (its table is not from the current patches' builds)\n", dir, len(pr.Patches))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pr.Description(), err)
		}
		for _, x := range w {
			warnings = append(warnings, pr.Name+": "+x)
		}
		if err := os.WriteFile(filepath.Join(dir, runscbuild.PRDescription), []byte(filled), 0o644); err != nil {
			return nil, err
		}
		fmt.Fprintf(c.Log, "upstream-series: %s: %d patch(es) and PR.md\n", dir, len(pr.Patches))
	}
	if len(refused.PRs) > 0 {
		return warnings, refused
	}
	return warnings, nil
}

// columns are the runtimes of pr's table and the builds the current
// patches make of each: stock; what pr needs, alone; pr's own build, or
// runsc-patched when the runs have no pull request's build at all.
func (c WriteConfig) columns(pr runscbuild.PR) (prtext.Columns, error) {
	cols := prtext.Columns{Before: "runsc-stock", After: "runsc-patched", AllowUnproven: c.AllowUnproven, Want: map[string]report.Build{}}
	// Stock + this pull request, wherever the runs have pull requests'
	// builds (a run without any, such as make matrix, shows the series).
	if c.Report != nil && slices.ContainsFunc(c.Report.Outcomes, func(o prtext.Outcome) bool {
		return strings.HasPrefix(o.Runtime, "runsc-pr-")
	}) {
		cols.After = runscbuild.PRRuntime(pr.Name)
	}
	if _, ok := runscbuild.NeedsFlavor(c.Series, pr); ok {
		cols.Needs = runscbuild.NeedsRuntime(pr.Name)
		cols.NeedsAbout = "stock runsc with " + strings.Join(names(c.Series.Needs(pr.Name)), ", ")
	}
	for _, rt := range []string{cols.Before, cols.Needs, cols.After} {
		if rt == "" {
			continue
		}
		f, ok := runscbuild.RuntimeFlavor(c.Series, rt)
		if !ok {
			return cols, fmt.Errorf("%s: no build of the series runs as %s, so no table can show it", pr.Name, rt)
		}
		b, err := runscbuild.BuildOf(c.Module, f.Patches)
		if err != nil {
			return cols, err
		}
		cols.Want[rt] = b
	}
	return cols, nil
}

// StaleError lists the pull requests whose tables Write refused.
type StaleError struct{ PRs []RefusedTable }

// RefusedTable is one pull request's refused table.
type RefusedTable struct {
	PR  string
	Err *prtext.BuildError
}

func (e *StaleError) Error() string {
	var b strings.Builder
	var stale, unproven []string
	for _, r := range e.PRs {
		if r.Err.Stale() {
			stale = append(stale, r.PR)
		} else {
			unproven = append(unproven, r.PR)
		}
	}
	fmt.Fprintf(&b, "%d pull requests' tables are not from their current patches' builds (stale: %s; build unproven: %s); no PR.md written for them:",
		len(e.PRs), report.OrNone(stale), report.OrNone(unproven))
	for _, r := range e.PRs {
		fmt.Fprintf(&b, "\n  pull request %s, table of %s:", r.PR, prtext.SelectorList(r.Err.Selectors))
		for _, p := range r.Err.Problems {
			fmt.Fprintf(&b, "\n    %s", p)
		}
		fmt.Fprintf(&b, "\n    measure again: %s (after make runsc-prs; then keep out/evidence/report.json in patches/evidence/)", prtext.EvidenceCommand(r.Err.Selectors))
	}
	if len(unproven) > 0 && len(stale) == 0 {
		b.WriteString("\n  (-allow-unproven, ALLOW_UNPROVEN=1 for make, prints the unproven tables marked \"Build unproven\")")
	}
	return b.String()
}

// prepareOut makes out, or empties it if Write made it; any other
// non-empty folder is refused.
func prepareOut(out string) error {
	entries, err := os.ReadDir(out)
	switch {
	case os.IsNotExist(err):
	case err != nil:
		return err
	case len(entries) == 0:
	default:
		if _, err := os.Stat(filepath.Join(out, outMarker)); err != nil {
			return fmt.Errorf("%s is not empty and was not made by upstream-series; give an empty or new folder", out)
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(out, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, outMarker), []byte("made by make upstream-series; it empties this folder when run again\n"), 0o644)
}

// SendSteps says how to open each pull request from out on upstream master.
func SendSteps(s *runscbuild.Series, out string) string {
	var b strings.Builder
	for _, pr := range s.PRs {
		var globs []string
		for _, n := range append(s.Needs(pr.Name), pr) {
			globs = append(globs, filepath.Join(out, n.Name, "*.patch"))
		}
		fmt.Fprintf(&b, "  git checkout -b %s origin/master && git am %s\n", pr.Name, strings.Join(globs, " "))
	}
	return b.String()
}
