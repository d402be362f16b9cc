package matrixreport

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/runsc-cgroups/cgconform/base/report"
)

// symbols are how report.md shows outcomes.
var symbols = report.Symbols{report.Pass: "pass", report.Fail: "**FAIL**", report.Divergence: "diverges†", report.Skip: "skip", report.Missing: "–"}

// grid is the matrix's table: rows case [context] x runtime, sorted,
// columns host modes.
func grid(m *report.Matrix) *report.Grid[report.Result] {
	g := &report.Grid[report.Result]{}
	for _, h := range m.Hosts {
		for _, r := range h.Results {
			g.Add(report.Row{Case: r.Case, Context: r.Context, Runtime: r.Runtime}, string(h.Host), r)
		}
	}
	sort.SliceStable(g.Rows, func(i, j int) bool {
		a, b := g.Rows[i], g.Rows[j]
		if a.Name() != b.Name() {
			return a.Name() < b.Name()
		}
		return a.Runtime < b.Runtime
	})
	return g
}

// WriteMarkdown renders the matrix table and one section per unfinished
// mode and per divergence or failure.
func WriteMarkdown(w io.Writer, m *report.Matrix) error {
	var b strings.Builder
	b.WriteString("# cgroup conformance matrix\n\n")
	if m.Kernel != "" || m.Accel != "" {
		fmt.Fprintf(&b, "Kernel `%s`, QEMU accelerator `%s`.\n\n", m.Kernel, m.Accel)
	}
	var modes [][]string
	for _, mr := range m.Hosts {
		status := mr.Status
		if mr.Partial {
			status += " (partial, from the console)"
		}
		if n := len(mr.Earlier); n > 0 {
			status += fmt.Sprintf(" (attempt %d of %d: the first stalled, see below)", n+1, n+1)
		}
		modes = append(modes, []string{string(mr.Host), status, fmt.Sprintf("%.0f", mr.BootSeconds),
			fmt.Sprintf("%.0f", mr.WallSeconds), fmt.Sprint(len(mr.Results)), mr.Tool})
	}
	b.WriteString(report.MarkdownTable([]string{"host", "status", "boot s", "total s", "results", "tool"}, modes))
	g := grid(m)
	header := []string{"case", "runtime", "checks"}
	for _, mr := range m.Hosts {
		header = append(header, string(mr.Host))
	}
	var table [][]string
	for _, k := range g.Rows {
		line := []string{k.Name(), k.Runtime, rowChecks(m.Hosts, g, k)}
		for _, mr := range m.Hosts {
			outcome := report.Missing
			if r, ok := g.At(k, string(mr.Host)); ok {
				outcome = r.Outcome
			}
			line = append(line, symbols.Of(outcome))
		}
		table = append(table, line)
	}
	b.WriteString("\n" + report.MarkdownTable(header, table))
	b.WriteString("\n† expected divergence: the runtime differs from runsc-patched for the reason the case states. Checks: the check steps and nothing-left checks the result ran, over every trial (per host where the hosts differ).\n")
	writeTimes(&b, m)
	var notes []string
	for _, k := range g.Rows {
		for _, mr := range m.Hosts {
			r, ok := g.At(k, string(mr.Host))
			why := reason(r)
			if !ok || (r.Outcome != report.Fail && r.Outcome != report.Divergence && r.Outcome != report.Skip) || why == "" {
				continue
			}
			notes = append(notes, fmt.Sprintf("- %s `%s` / `%s` on %s: %s", symbols.Of(r.Outcome), k.Name(), k.Runtime, mr.Host, oneLine(why)))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n## Divergences, failures and skips\n\n" + strings.Join(notes, "\n") + "\n")
	}
	runs, labels := attempts(m)
	for i, mr := range runs {
		if mr.Status == report.Reported {
			continue
		}
		fmt.Fprintf(&b, "\n## %s: %s\n\n%s\n", labels[i], mr.Status, mr.Problem)
		if mr.Attempt == 1 {
			fmt.Fprintf(&b, "\nThe mode ran once more; this attempt's %d results (from its console) are not in the table above.\n", len(mr.Results))
		}
		if mr.RunningCase != "" {
			fmt.Fprintf(&b, "\nCase running when it stopped: `%s`\n", mr.RunningCase)
		} else if mr.LastDone != "" {
			fmt.Fprintf(&b, "\nLast case finished: `%s`; the next one in case order was running.\n", mr.LastDone)
		}
		if len(mr.ConsoleTail) > 0 {
			b.WriteString("\n```\n" + strings.Join(mr.ConsoleTail, "\n") + "\n```\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func oneLine(s string) string { return strings.ReplaceAll(report.OneLine(s, 300, "…"), "|", `\|`) }

// WriteJUnit writes one test suite per mode, timed by its VM's wall clock.
// A mode that sent no report gets a test "vm" in error, a record without
// outcome is an error too, and an expected divergence is a skipped test.
func WriteJUnit(w io.Writer, m *report.Matrix) error {
	return report.WriteJUnit(w, junitSuites(m))
}

func junitSuites(m *report.Matrix) []report.JUnitSuite {
	var suites []report.JUnitSuite
	for _, mr := range m.Hosts {
		s := report.JUnitSuite{Name: "matrix/" + string(mr.Host), Seconds: mr.WallSeconds}
		for _, e := range mr.Earlier { // a stalled attempt stays a failure
			s.Tests = append(s.Tests, report.JUnitTest{Name: fmt.Sprintf("vm attempt %d", e.Attempt), Classname: s.Name, Outcome: report.Errored,
				Message: e.Status, Detail: e.Problem + "\n" + strings.Join(e.ConsoleTail, "\n")})
		}
		if mr.Status != report.Reported {
			s.Tests = append(s.Tests, report.JUnitTest{Name: "vm", Classname: s.Name, Outcome: report.Errored,
				Message: mr.Status, Detail: mr.Problem + "\n" + strings.Join(mr.ConsoleTail, "\n")})
		}
		for _, r := range mr.Results {
			t := report.JUnitTest{Name: r.Name() + "/" + r.Runtime, Classname: s.Name, Seconds: float64(r.DurationMS) / 1000, Outcome: r.Outcome}
			switch r.Outcome {
			case report.Fail, report.Divergence:
				t.Message, t.Detail = oneLine(reason(r)), reason(r)+"\n"+diffs(r)
			case report.Skip:
				t.Message = oneLine(r.Reason)
			case report.Missing:
				t.Outcome, t.Message = report.Errored, "no outcome recorded"
			}
			s.Tests = append(s.Tests, t)
		}
		suites = append(suites, s)
	}
	return suites
}

// reason is why a result is not a pass: the declared reason, then the
// unmet expectations not covered by it.
func reason(r report.Result) string {
	parts := r.Unexpected()
	if r.Reason != "" {
		parts = append([]string{r.Reason}, parts...)
	}
	return strings.Join(parts, "; ")
}

// diffs joins the failures' diffs.
func diffs(r report.Result) string {
	var ds []string
	for _, f := range r.Failures {
		if f.Diff != "" {
			ds = append(ds, f.Step+":\n"+f.Diff)
		}
	}
	return strings.Join(ds, "\n")
}

// WriteJSON writes the matrix as indented JSON, the report.json that
// -merge (report.ReadMatrix) reads back.
func WriteJSON(w io.Writer, m *report.Matrix) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(m)
}

// WriteAll writes report.json, report.md and junit.xml into dir.
func WriteAll(dir string, m *report.Matrix) error {
	with := func(f func(io.Writer, *report.Matrix) error) func(io.Writer) error {
		return func(w io.Writer) error { return f(w, m) }
	}
	return report.WriteFiles(dir, map[string]func(io.Writer) error{
		"report.json": with(WriteJSON),
		"report.md":   with(WriteMarkdown),
		"junit.xml":   with(WriteJUnit),
	})
}
