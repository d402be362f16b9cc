package upstream

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/runsc-cgroups/cgconform/runscbuild"
	"github.com/runsc-cgroups/cgconform/runscbuild/patchmail"
	"github.com/runsc-cgroups/cgconform/runscbuild/prtext"
)

// Identity resolves who sends the series: each of name and email from the
// argument when set (AUTHOR_NAME, AUTHOR_EMAIL), else from `git config
// user.name` / `user.email` in repo. It refuses when either stays unset, or
// is the placeholder. source says where each came from.
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
	// Report fills the PR.md tables; nil leaves prtext.Unfilled in them.
	Report        *prtext.Results
	Before, After string // the runtimes of a table's cells
	Log           io.Writer
}

// outMarker marks a folder Write made, so a second run may replace it and
// no other folder is ever emptied.
const outMarker = ".upstream-series"

// Write writes, for every pull request, Out/NN-name/000N-*.patch (numbered
// within the pull request, with the sender's From: and Signed-off-by:) and
// Out/NN-name/PR.md (tables filled). It returns the warnings of the tables:
// cells where the patched runtime did not pass.
func Write(c WriteConfig) (warnings []string, err error) {
	if err := c.Author.Check(); err != nil {
		return nil, err
	}
	if err := prepareOut(c.Out); err != nil {
		return nil, err
	}
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
		after := c.After
		if c.Report != nil && c.Report.HasRuntime(runscbuild.PRRuntime(pr.Name)) {
			after = runscbuild.PRRuntime(pr.Name) // stock + this pull request
		}
		filled, w, err := prtext.Fill(string(md), c.Report, c.Before, after)
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
	return warnings, nil
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

// SendSteps says how to open each pull request from Out: a branch on
// upstream master with its dependencies' patches and its own, in order.
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
