package upstream

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/runsc-cgroups/cgconform/base/report"
)

// Markdown is the report for people: the two trees, then a table row per
// check with the patches it applied and every step's result.
func (r *Report) Markdown() string {
	var b strings.Builder
	b.WriteString("# upstream-check\n\n")
	b.WriteString("Each pull request alone (on the pull requests it needs) and in order (on every earlier one), applied with git am to two trees and no other:\n\n")
	for _, t := range []TreeInfo{r.Master, r.Go} {
		fmt.Fprintf(&b, "- **%s** tree: `%s`", t.Name, t.Commit)
		if t.Commit != t.Upstream {
			fmt.Fprintf(&b, ", made from upstream `%s`:", t.Upstream)
			for _, m := range t.Made {
				fmt.Fprintf(&b, "\n  - %s", m)
			}
		} else {
			b.WriteString(" (upstream's commit as it is)")
		}
		b.WriteString("\n")
	}
	b.WriteString("\nOn master: git am, gofmt, BUILD entries, a test of its own. On go: git am (BUILD hunks left out: the go branch has no BUILD files), `go build ./runsc/...` (and the touched packages outside runsc), `go vet` and the unit tests of the touched packages, run as nobody in a private mount namespace with no host cgroupfs. A row that does not build on go fails: no other tree is tried.\n\n")
	for _, p := range slices.Sorted(maps.Keys(r.VetOnly)) {
		fmt.Fprintf(&b, "Vetted, not run: upstream's test files of %s (%s); the tests a pull request adds in new files there run.\n\n", p, r.VetOnly[p])
	}
	if len(r.BaseVet) > 0 {
		n := 0
		for _, c := range r.BaseVet {
			n += c
		}
		fmt.Fprintf(&b, "go vet finds %d things in %d kinds on the go tree before any patch (upstream vets with its own analyzers, not go vet's defaults); a row fails only for findings beyond those (report.json: base_vet).\n\n", n, len(r.BaseVet))
	}
	if len(r.BaseFailures) > 0 {
		fmt.Fprintf(&b, "Unit tests that fail on the go tree before any patch (no row fails for them): %s\n\n", failedList(r.BaseFailures))
	}
	var rows [][]string
	for _, v := range r.Verdicts {
		add := func(kind string, res Result) {
			var ps []string
			for _, p := range res.Patches {
				ps = append(ps, fmt.Sprintf("%s `%.12s`", p.Name, p.SHA256))
			}
			rows = append(rows, []string{v.name(), kind, strings.Join(ps, "<br>"),
				cell(res.MasterApply) + " / " + cell(res.Gofmt) + " / " + cell(res.BazelSrcs) + " / " + cell(res.OwnTest),
				cell(res.GoApply) + " / " + cell(res.Build) + " / " + cell(res.Vet) + " / " + cell(res.Test),
				fmt.Sprintf("%.0f", res.Seconds), verdict(res.OK())})
		}
		add(map[bool]string{true: "alone = in order", false: "alone"}[v.SameAsAlone && v.InOrder == nil], v.Alone)
		if v.InOrder != nil {
			add("in order", *v.InOrder)
		}
	}
	b.WriteString(report.MarkdownTable([]string{"PR", "check", "patches applied (sha256)", "master: am / gofmt / BUILD / own test", "go: am / build / vet / test", "seconds", "verdict"}, rows))
	b.WriteString(r.aloneSection())
	fmt.Fprintf(&b, "\n%d of %d pass (pull requests and carried sets); wall time %.0f s.\n", len(r.Verdicts)-len(r.Failed()), len(r.Verdicts), r.Seconds)
	if len(r.Only) > 0 {
		fmt.Fprintf(&b, "Only these pull requests were checked (PRS=): %s.\n", strings.Join(r.Only, " "))
	}
	if f := r.Failed(); len(f) > 0 {
		fmt.Fprintf(&b, "Failing: %s.\n", strings.Join(f, " "))
	}
	return b.String()
}

func cell(s Step) string { return oneLine(s.word()) }

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "**FAIL**"
}

// WriteFiles writes report.json and report.md into dir.
func (r *Report) WriteFiles(dir string) error {
	return report.WriteFiles(dir, map[string]func(io.Writer) error{
		"report.json": func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(r)
		},
		"report.md": func(w io.Writer) error { _, err := io.WriteString(w, r.Markdown()); return err },
	})
}

// aloneSection is each pull request alone on the go tree: its tests and
// what its mutations did.
func (r *Report) aloneSection() string {
	var b strings.Builder
	b.WriteString("\n## Each pull request alone on the go tree, as nobody\n\n")
	fmt.Fprintf(&b, "Own tests: the test functions the pull request adds or changes; it fails when none of them passes as nobody (all skip, or none runs here), or, when it adds or changes none, when no test of the touched packages passes. Mutations: each block of patches/NN-name/mutations applied alone to this tree, the mutated package built and the same unit tests run as nobody (each binary for at most %s); it fails when one survives (no test fails that passes before any patch) or does not compile.\n\n", mutantTimeout)
	var rows [][]string
	for _, v := range r.Verdicts {
		a := v.Alone
		tree := a.GoTree
		if a.GoCommit != "" {
			tree += fmt.Sprintf(" (`%.12s`)", a.GoCommit)
		}
		tests := "-"
		if a.Test.Ran {
			tests = fmt.Sprintf("%d passed, %d skipped, %d failed", a.Tests.Passed, a.Tests.Skipped, a.Tests.Failed)
		}
		muts := cell(a.Mutants)
		if a.Mutated != nil {
			muts = fmt.Sprintf("caught %d of %d", a.Mutated.Caught(), a.Mutated.Blocks)
			if !a.Mutants.OK {
				muts = "**" + muts + "**"
			}
			for _, m := range a.Mutated.Results {
				if m.Outcome != Caught {
					muts += fmt.Sprintf("<br>%s: block %d %s %s", m.Outcome, m.Block, m.File, code(m.Broken))
				}
			}
			if n := len(a.Mutated.Invalid); n > 0 {
				muts += fmt.Sprintf("<br>%d invalid block(s), below", n)
			}
		} else if a.Mutants.OK || (!a.Mutants.Ran && a.Mutants.Note != "") {
			muts = a.Mutants.Note
		}
		rows = append(rows, []string{v.name(), oneLine(tree), tests, cell(a.OwnTests), oneLine(muts), verdict(a.OK())})
	}
	b.WriteString(report.MarkdownTable([]string{"PR", "tree built (commit)", "tests as nobody", "own tests", "mutations", "verdict"}, rows))
	for _, v := range r.Verdicts {
		m := v.Alone.Mutated
		if m == nil {
			continue
		}
		fmt.Fprintf(&b, "\n### %s: %s (`%.12s`), caught %d of %d (%.0f s)\n\n", v.name(), m.List, m.SHA256, m.Caught(), m.Blocks, m.Seconds)
		for _, mu := range m.Results {
			what := mu.Outcome
			switch {
			case mu.Outcome == Caught:
				what = "caught by " + strings.Join(mu.CaughtBy, ", ")
			case mu.Note != "":
				what = "**" + mu.Outcome + "**: " + mu.Note
			default:
				what = "**" + mu.Outcome + "**"
			}
			fmt.Fprintf(&b, "- block %d, %s: %s → %s: %s\n", mu.Block, mu.File, code(mu.Line), code(mu.Broken), what)
		}
		for _, inv := range m.Invalid {
			fmt.Fprintf(&b, "- **invalid**: %s\n", inv)
		}
		if m.Error != "" {
			fmt.Fprintf(&b, "- **stopped**: %s\n", m.Error)
		}
	}
	return b.String()
}

// code is a line of Go as inline code, its indentation dropped.
func code(line string) string {
	line = strings.TrimSpace(line)
	if strings.Contains(line, "`") {
		return "`` " + line + " ``"
	}
	return "`" + line + "`"
}

// oneLine keeps a table cell on one line (report.MarkdownTable escapes "|").
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
