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
			Name:      x.Name(),
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

// Unexpected is "step: message" of each failure no declared divergence
// covers.
func (r *Result) Unexpected() []string {
	var out []string
	for _, f := range r.Failures {
		if !f.Expected {
			out = append(out, f.Step+": "+f.Message)
		}
	}
	return out
}

func firstMessage(x Result) string {
	if u := x.Unexpected(); len(u) > 0 {
		return u[0]
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

// Table renders cases x runtimes as fixed-width text.
func (r *Report) Table() string {
	header, rows := r.table()
	w := len(header[0])
	for _, l := range rows {
		w = max(w, len(l[0]))
	}
	var b strings.Builder
	for _, l := range append([][]string{header}, rows...) {
		fmt.Fprintf(&b, "%-*s", w, l[0])
		for _, c := range l[1:] {
			fmt.Fprintf(&b, "  %-13s", c)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n" + r.summaryLine())
	return b.String()
}

// table is the host's grid as text: rows case [context], columns runtimes.
func (r *Report) table() (header []string, rows [][]string) {
	g := &Grid[Outcome]{}
	for _, x := range r.Results {
		g.Add(Row{Case: x.Case, Context: x.Context}, x.Runtime, x.Outcome)
	}
	for _, row := range g.Rows {
		line := []string{row.Name()}
		for _, rt := range g.Cols {
			o, _ := g.At(row, rt)
			line = append(line, TextSymbols.Of(o))
		}
		rows = append(rows, line)
	}
	return append([]string{"case [context]"}, g.Cols...), rows
}

func (r *Report) summaryLine() string {
	r.Summarize()
	return fmt.Sprintf("pass %d, FAIL %d, xdiv (expected divergence) %d, skip %d\n",
		r.Summary[Pass], r.Summary[Fail], r.Summary[Divergence], r.Summary[Skip])
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
	b.WriteString("\n" + MarkdownTable(r.table()))
	b.WriteString("\n" + r.summaryLine() + "\n")
	res := append([]Result(nil), r.Results...)
	order := map[Outcome]int{Fail: 0, Divergence: 1, Skip: 2, Pass: 3}
	sort.SliceStable(res, func(i, j int) bool { return order[res[i].Outcome] < order[res[j].Outcome] })
	for _, x := range res {
		if x.Outcome == Pass {
			continue
		}
		fmt.Fprintf(&b, "## %s: %s [%s] on %s\n\n%s (source: %s)\n\n", TextSymbols.Of(x.Outcome), x.Case, x.Context, x.Runtime, x.Purpose, x.Source)
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
