package matrixreport

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/runsc-cgroups/cgconform/harness/report"
)

// symbol is how report.md shows an outcome.
func symbol(outcome string) string {
	switch outcome {
	case Pass:
		return "pass"
	case Fail:
		return "**FAIL**"
	case Divergence:
		return "diverges†"
	case Skip:
		return "skip"
	case Missing:
		return "–"
	}
	return outcome
}

type rowKey struct{ Case, Runtime string }

// cells indexes records by case and runtime, then mode.
func (m *Matrix) cells() (rows []rowKey, byMode map[rowKey]map[string]Record) {
	byMode = map[rowKey]map[string]Record{}
	for _, mr := range m.Modes {
		for _, r := range mr.Records {
			k := rowKey{r.Case, r.Runtime}
			if byMode[k] == nil {
				byMode[k] = map[string]Record{}
				rows = append(rows, k)
			}
			byMode[k][mr.Mode] = r
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Case != rows[j].Case {
			return rows[i].Case < rows[j].Case
		}
		return rows[i].Runtime < rows[j].Runtime
	})
	return rows, byMode
}

// WriteMarkdown renders the matrix table and one section per unfinished
// mode and per divergence or failure.
func (m *Matrix) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# cgroup conformance matrix\n\n")
	if m.Kernel != "" || m.Accel != "" {
		fmt.Fprintf(&b, "Kernel `%s`, QEMU accelerator `%s`.\n\n", m.Kernel, m.Accel)
	}
	var modes [][]string
	for _, mr := range m.Modes {
		status := mr.Status
		if mr.Partial {
			status += " (partial, from the console)"
		}
		modes = append(modes, []string{mr.Mode, status, fmt.Sprintf("%.0f", mr.BootSeconds),
			fmt.Sprintf("%.0f", mr.WallSeconds), fmt.Sprint(len(mr.Records)), mr.Tool})
	}
	b.WriteString(report.MarkdownTable([]string{"mode", "status", "boot s", "total s", "records", "tool"}, modes))
	rows, byMode := m.cells()
	header := []string{"case", "runtime"}
	for _, mr := range m.Modes {
		header = append(header, mr.Mode)
	}
	var table [][]string
	for _, k := range rows {
		line := []string{k.Case, k.Runtime}
		for _, mr := range m.Modes {
			outcome := Missing
			if r, ok := byMode[k][mr.Mode]; ok {
				outcome = r.Outcome
			}
			line = append(line, symbol(outcome))
		}
		table = append(table, line)
	}
	b.WriteString("\n" + report.MarkdownTable(header, table))
	b.WriteString("\n† expected divergence: the runtime differs from runsc-patched for the reason the case states.\n")
	var notes []string
	for _, k := range rows {
		for _, mr := range m.Modes {
			r, ok := byMode[k][mr.Mode]
			if !ok || (r.Outcome != Fail && r.Outcome != Divergence && r.Outcome != Skip) || r.Reason == "" {
				continue
			}
			notes = append(notes, fmt.Sprintf("- %s `%s` / `%s` on %s: %s", symbol(r.Outcome), k.Case, k.Runtime, mr.Mode, oneLine(r.Reason)))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n## Divergences, failures and skips\n\n" + strings.Join(notes, "\n") + "\n")
	}
	for _, mr := range m.Modes {
		if mr.Status == "reported" {
			continue
		}
		fmt.Fprintf(&b, "\n## %s: %s\n\n%s\n", mr.Mode, mr.Status, mr.Problem)
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

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return strings.ReplaceAll(s, "|", "\\|")
}

// WriteJUnit writes one test suite per mode, timed by its VM's wall clock.
// A mode that sent no report gets a test "vm" in error, a record without
// outcome is an error too, and an expected divergence is a skipped test.
func (m *Matrix) WriteJUnit(w io.Writer) error {
	return report.WriteJUnit(w, m.junitSuites())
}

func (m *Matrix) junitSuites() []report.JUnitSuite {
	var suites []report.JUnitSuite
	for _, mr := range m.Modes {
		s := report.JUnitSuite{Name: "matrix/" + mr.Mode, Seconds: mr.WallSeconds}
		if mr.Status != "reported" {
			s.Tests = append(s.Tests, report.JUnitTest{Name: "vm", Classname: s.Name, Outcome: report.Errored,
				Message: mr.Status, Detail: mr.Problem + "\n" + strings.Join(mr.ConsoleTail, "\n")})
		}
		for _, r := range mr.Records {
			t := report.JUnitTest{Name: r.Case + "/" + r.Runtime, Classname: s.Name, Seconds: r.Seconds, Outcome: r.Outcome}
			switch r.Outcome {
			case Fail, Divergence:
				t.Message, t.Detail = oneLine(r.Reason), r.Reason+"\n"+r.Diff
			case Skip:
				t.Message = oneLine(r.Reason)
			case Missing:
				t.Outcome, t.Message = report.Errored, "no outcome recorded"
			}
			s.Tests = append(s.Tests, t)
		}
		suites = append(suites, s)
	}
	return suites
}

// WriteJSON writes the matrix as indented JSON, the report.json that
// -merge reads back.
func (m *Matrix) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(m)
}

// WriteAll writes report.json, report.md and junit.xml into dir.
func (m *Matrix) WriteAll(dir string) error {
	return report.WriteFiles(dir, map[string]func(io.Writer) error{
		"report.json": m.WriteJSON,
		"report.md":   m.WriteMarkdown,
		"junit.xml":   m.WriteJUnit,
	})
}
