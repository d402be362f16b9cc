package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// WriteJUnit writes junit.xml with one suite per runtime and mode; JUnitTest
// says how each outcome shows.
func (r *Report) WriteJUnit(w io.Writer) error {
	return WriteJUnit(w, r.junitSuites())
}

func (r *Report) junitSuites() []JUnitSuite {
	var suites []JUnitSuite
	index := map[string]int{}
	for _, x := range r.Results {
		name := x.Runtime + " (" + x.Label() + ")"
		i, ok := index[name]
		if !ok {
			i = len(suites)
			index[name] = i
			suites = append(suites, JUnitSuite{Name: name})
		}
		t := JUnitTest{
			Name:      x.Case + " [" + x.Context + "]",
			Classname: "cgconform." + x.Runtime,
			Seconds:   float64(x.DurationMS) / 1000,
			Outcome:   x.Outcome,
		}
		switch x.Outcome {
		case Fail:
			t.Message, t.Detail = firstMessage(x), failureText(x)
		case Skip:
			t.Message = x.Reason
		case Divergence:
			t.Message, t.Detail = x.Reason, failureText(x)
		}
		suites[i].Tests = append(suites[i].Tests, t)
	}
	return suites
}

func firstMessage(x Result) string {
	for _, f := range x.Failures {
		if !f.Expected {
			return f.Step + ": " + f.Message
		}
	}
	if len(x.Failures) > 0 {
		return x.Failures[0].Step + ": " + x.Failures[0].Message
	}
	return x.Reason
}

func failureText(x Result) string {
	var b strings.Builder
	for _, f := range x.Failures {
		tag := ""
		if f.Expected {
			tag = " (expected)"
		}
		fmt.Fprintf(&b, "%s%s: %s\n", f.Step, tag, f.Message)
		if f.Diff != "" {
			fmt.Fprintf(&b, "%s\n", f.Diff)
		}
	}
	for _, l := range x.Leaks {
		fmt.Fprintf(&b, "leak: %s\n", l)
	}
	return b.String()
}

// Symbol is the short table form of an outcome.
func Symbol(outcome Outcome) string {
	switch outcome {
	case Pass:
		return "pass"
	case Fail:
		return "FAIL"
	case Divergence:
		return "xdiv"
	case Skip:
		return "skip"
	}
	return string(outcome)
}

// Table renders cases x runtimes as fixed-width text.
func (r *Report) Table() string {
	rows, runtimes, cells := r.grid()
	w := len("case [context]")
	for _, row := range rows {
		if len(row) > w {
			w = len(row)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s", w, "case [context]")
	for _, rt := range runtimes {
		fmt.Fprintf(&b, "  %-13s", rt)
	}
	b.WriteString("\n")
	for _, row := range rows {
		fmt.Fprintf(&b, "%-*s", w, row)
		for _, rt := range runtimes {
			fmt.Fprintf(&b, "  %-13s", Symbol(cells[cell{row, rt}]))
		}
		b.WriteString("\n")
	}
	r.Summarize()
	fmt.Fprintf(&b, "\npass %d, FAIL %d, xdiv (expected divergence) %d, skip %d\n",
		r.Summary[Pass], r.Summary[Fail], r.Summary[Divergence], r.Summary[Skip])
	return b.String()
}

// cell is one row (case [context]) and runtime of the table.
type cell struct{ row, runtime string }

func (r *Report) grid() (rows, runtimes []string, cells map[cell]Outcome) {
	cells = map[cell]Outcome{}
	seenRow, seenRT := map[string]bool{}, map[string]bool{}
	for _, x := range r.Results {
		row := x.Name()
		if !seenRow[row] {
			seenRow[row] = true
			rows = append(rows, row)
		}
		if !seenRT[x.Runtime] {
			seenRT[x.Runtime] = true
			runtimes = append(runtimes, x.Runtime)
		}
		cells[cell{row, x.Runtime}] = x.Outcome
	}
	return rows, runtimes, cells
}

// WriteMarkdown writes a human summary: host, table, then every failure,
// divergence and skip with its reason.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# cgconform report\n\nHost: cgroup mode **%s**", r.Host.CgroupMode)
	if r.Host.MatrixHost != "" {
		fmt.Fprintf(&b, " (matrix host %s)", r.Host.MatrixHost)
	}
	fmt.Fprintf(&b, ", kernel %s, uid %d, systemd PID 1: %v, cgroup namespace: %v. Run %s – %s.\n\n",
		r.Host.Kernel, r.Host.UID, r.Host.SystemdPID1, r.Host.CgroupNS,
		r.Started.UTC().Format(time.RFC3339), r.Finished.UTC().Format(time.RFC3339))
	for _, n := range r.Host.Notes {
		fmt.Fprintf(&b, "- note: %s\n", n)
	}
	rows, runtimes, cells := r.grid()
	var table [][]string
	for _, row := range rows {
		line := []string{row}
		for _, rt := range runtimes {
			line = append(line, Symbol(cells[cell{row, rt}]))
		}
		table = append(table, line)
	}
	b.WriteString("\n" + MarkdownTable(append([]string{"case [context]"}, runtimes...), table))
	r.Summarize()
	fmt.Fprintf(&b, "\npass %d, FAIL %d, xdiv (expected divergence) %d, skip %d\n\n",
		r.Summary[Pass], r.Summary[Fail], r.Summary[Divergence], r.Summary[Skip])
	res := append([]Result(nil), r.Results...)
	order := map[Outcome]int{Fail: 0, Divergence: 1, Skip: 2, Pass: 3}
	sort.SliceStable(res, func(i, j int) bool { return order[res[i].Outcome] < order[res[j].Outcome] })
	for _, x := range res {
		if x.Outcome == Pass {
			continue
		}
		fmt.Fprintf(&b, "## %s: %s [%s] on %s\n\n%s (source: %s)\n\n", Symbol(x.Outcome), x.Case, x.Context, x.Runtime, x.Purpose, x.Source)
		if x.Reason != "" {
			fmt.Fprintf(&b, "Reason: %s\n\n", x.Reason)
		}
		if t := failureText(x); t != "" {
			fmt.Fprintf(&b, "```\n%s```\n\n", t)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
