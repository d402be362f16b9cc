package matrixreport

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
	b.WriteString("| mode | status | boot s | total s | records | tool |\n|---|---|---|---|---|---|\n")
	for _, mr := range m.Modes {
		status := mr.Status
		if mr.Partial {
			status += " (partial, from the console)"
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %.0f | %d | %s |\n", mr.Mode, status, mr.BootSeconds, mr.WallSeconds, len(mr.Records), mr.Tool)
	}
	rows, byMode := m.cells()
	b.WriteString("\n| case | runtime |")
	for _, mr := range m.Modes {
		fmt.Fprintf(&b, " %s |", mr.Mode)
	}
	b.WriteString("\n|---|---|")
	for range m.Modes {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, k := range rows {
		fmt.Fprintf(&b, "| %s | %s |", k.Case, k.Runtime)
		for _, mr := range m.Modes {
			r, ok := byMode[k][mr.Mode]
			if !ok {
				fmt.Fprintf(&b, " %s |", symbol(Missing))
				continue
			}
			fmt.Fprintf(&b, " %s |", symbol(r.Outcome))
		}
		b.WriteString("\n")
	}
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

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes one test suite per mode; an expected divergence is a
// passing test with its reason in system-out, a mode without results one
// error.
func (m *Matrix) WriteJUnit(w io.Writer) error {
	var all junitSuites
	for _, mr := range m.Modes {
		s := junitSuite{Name: "matrix/" + mr.Mode, Time: mr.WallSeconds}
		if mr.Status != "reported" {
			s.Tests, s.Errors = 1, 1
			s.Cases = append(s.Cases, junitCase{Name: "vm", Classname: s.Name,
				Error: &junitMessage{Message: mr.Status, Body: mr.Problem + "\n" + strings.Join(mr.ConsoleTail, "\n")}})
		}
		for _, r := range mr.Records {
			c := junitCase{Name: r.Case + "/" + r.Runtime, Classname: s.Name, Time: r.Seconds}
			s.Tests++
			switch r.Outcome {
			case Fail:
				s.Failures++
				c.Failure = &junitMessage{Message: oneLine(r.Reason), Body: r.Reason + "\n" + r.Diff}
			case Skip:
				s.Skipped++
				c.Skipped = &junitMessage{Message: oneLine(r.Reason)}
			case Divergence:
				c.SystemOut = "expected divergence: " + r.Reason
			case Missing:
				s.Errors++
				c.Error = &junitMessage{Message: "no outcome recorded"}
			}
			s.Cases = append(s.Cases, c)
		}
		all.Suites = append(all.Suites, s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// WriteAll writes report.json, report.md and junit.xml into dir.
func (m *Matrix) WriteAll(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	for name, write := range map[string]func(io.Writer) error{"report.md": m.WriteMarkdown, "junit.xml": m.WriteJUnit} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		werr := write(f)
		if err := f.Close(); werr == nil {
			werr = err
		}
		if werr != nil {
			return fmt.Errorf("writing %s: %w", name, werr)
		}
	}
	return nil
}
