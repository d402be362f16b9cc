// Package report defines cgconform's machine-readable result and writes it
// as report.json, junit.xml and report.md.
//
// Schema (report.json, Schema == "cgconform/report/v1"; fields are only
// ever added, never renamed, within v1):
//
//	{
//	  "schema": "cgconform/report/v1",
//	  "runId": token in the test root's name and every container ID,
//	  "started": RFC 3339, "finished": RFC 3339,
//	  "host": {"mode": "cgroup-v1"|"hybrid"|"cgroup-v2", "label": -mode override or "",
//	           "kernel", "uid", "hostname", "systemdPID1", "cgroupNS",
//	           "hierarchies": [{"key","mount","v2"}], "notes": [...]},
//	  "runtimes": [{"name","path","kind":"runsc"|"runc"|"crun","version","skip"}],
//	  "results": [{
//	     "case", "context", "runtime",   // one record per case x context x runtime on this host
//	     "mode": the -mode label (e.g. "systemd-v2") or else the detected mode,
//	     "hostMode": the detected mode ("cgroup-v1"|"hybrid"|"cgroup-v2"),
//	     "file", "source", "purpose",
//	     "outcome": "pass"|"fail"|"expected-divergence"|"skip",
//	     "reason": why skipped / the declared divergence reason,
//	     "failures": [{"step","message","diff"}],   // diff: go-cmp (-want +got)
//	     "durationMs",
//	     "steps": [{"id","do","sandbox","command","exit","output","durationMs",
//	                "error","added","removed","processes":[{"pid","role","cgroups"}],"skipped"}],
//	     "leaks": ["<hierarchy>:<cgroup>" or "pid N (comm)" or "state ..."],
//	     "treeBefore", "treeAfter": ["<hierarchy>:<cgroup>", ...]   // below the case's root
//	  }],
//	  "summary": {"pass": n, "fail": n, "expected-divergence": n, "skip": n}
//	}
//
// The VM matrix merges one report.json per host mode; "mode" in every
// result says where it ran.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Schema is the current schema identifier.
const Schema = "cgconform/report/v1"

// Outcomes.
const (
	Pass       = "pass"
	Fail       = "fail"
	Divergence = "expected-divergence"
	Skip       = "skip"
)

// Report is the whole run.
type Report struct {
	Schema string `json:"schema"`
	// RunID names everything the run created: the test root
	// /cgconform-<RunID> and the prefix of every container ID.
	RunID    string         `json:"runId,omitempty"`
	Started  time.Time      `json:"started"`
	Finished time.Time      `json:"finished"`
	Host     Host           `json:"host"`
	Runtimes []Runtime      `json:"runtimes"`
	Results  []Result       `json:"results"`
	Summary  map[string]int `json:"summary"`
}

// Host describes the machine the run happened on.
type Host struct {
	Mode        string      `json:"mode"`
	Label       string      `json:"label,omitempty"`
	Kernel      string      `json:"kernel"`
	UID         int         `json:"uid"`
	Hostname    string      `json:"hostname"`
	SystemdPID1 bool        `json:"systemdPID1"`
	CgroupNS    bool        `json:"cgroupNS"`
	Hierarchies []Hierarchy `json:"hierarchies"`
	Notes       []string    `json:"notes,omitempty"`
}

// Hierarchy is a mounted cgroup hierarchy.
type Hierarchy struct {
	Key   string `json:"key"`
	Mount string `json:"mount"`
	V2    bool   `json:"v2,omitempty"`
}

// Runtime is one runtime under test.
type Runtime struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Kind    string `json:"kind"`
	Version string `json:"version,omitempty"`
	// Skip, when set, is why no case ran for this runtime.
	Skip string `json:"skip,omitempty"`
}

// Result is one case x context x runtime on this host.
type Result struct {
	Case       string    `json:"case"`
	Context    string    `json:"context"`
	Runtime    string    `json:"runtime"`
	Mode       string    `json:"mode"`
	HostMode   string    `json:"hostMode"`
	File       string    `json:"file"`
	Source     string    `json:"source"`
	Purpose    string    `json:"purpose"`
	Outcome    string    `json:"outcome"`
	Reason     string    `json:"reason,omitempty"`
	Failures   []Failure `json:"failures,omitempty"`
	DurationMS int64     `json:"durationMs"`
	Steps      []Step    `json:"steps,omitempty"`
	Leaks      []string  `json:"leaks,omitempty"`
	TreeBefore []string  `json:"treeBefore,omitempty"`
	TreeAfter  []string  `json:"treeAfter,omitempty"`
}

// Failure is one unmet expectation.
type Failure struct {
	Step    string `json:"step"`
	Message string `json:"message"`
	Diff    string `json:"diff,omitempty"`
	// Expected is set when a declared divergence covers the failure.
	Expected bool `json:"expected,omitempty"`
}

// Step is what one step did and showed.
type Step struct {
	ID         string    `json:"id"`
	Do         string    `json:"do"`
	Sandbox    string    `json:"sandbox,omitempty"`
	Command    []string  `json:"command,omitempty"`
	Exit       *int      `json:"exit,omitempty"`
	Output     string    `json:"output,omitempty"`
	DurationMS int64     `json:"durationMs"`
	Error      string    `json:"error,omitempty"`
	Added      []string  `json:"added,omitempty"`
	Removed    []string  `json:"removed,omitempty"`
	Processes  []Process `json:"processes,omitempty"`
	Skipped    string    `json:"skipped,omitempty"`
	Note       string    `json:"note,omitempty"`
}

// Process is one observed process of a sandbox.
type Process struct {
	PID      int               `json:"pid"`
	Role     string            `json:"role"`
	Instance string            `json:"instance"`
	Cgroups  map[string]string `json:"cgroups"`
}

// Summarize fills r.Summary.
func (r *Report) Summarize() {
	r.Summary = map[string]int{Pass: 0, Fail: 0, Divergence: 0, Skip: 0}
	for _, x := range r.Results {
		r.Summary[x.Outcome]++
	}
}

// OK reports whether nothing unexpected happened.
func (r *Report) OK() bool {
	for _, x := range r.Results {
		if x.Outcome == Fail {
			return false
		}
	}
	return true
}

// WriteAll writes report.json, junit.xml and report.md into dir.
func (r *Report) WriteAll(dir string) error {
	return WriteFiles(dir, map[string]func(io.Writer) error{
		"report.json": r.WriteJSON,
		"junit.xml":   r.WriteJUnit,
		"report.md":   r.WriteMarkdown,
	})
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Read parses a report.json.
func Read(rd io.Reader) (*Report, error) {
	var r Report
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, err
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("report schema %q, want %q", r.Schema, Schema)
	}
	return &r, nil
}

// WriteJUnit writes junit.xml with one suite per runtime and mode; JUnitTest
// says how each outcome shows.
func (r *Report) WriteJUnit(w io.Writer) error {
	return WriteJUnit(w, r.junitSuites())
}

func (r *Report) junitSuites() []JUnitSuite {
	var suites []JUnitSuite
	index := map[string]int{}
	for _, x := range r.Results {
		name := x.Runtime + " (" + x.Mode + ")"
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
func Symbol(outcome string) string {
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
	return outcome
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
			fmt.Fprintf(&b, "  %-13s", Symbol(cells[row+"\x00"+rt]))
		}
		b.WriteString("\n")
	}
	r.Summarize()
	fmt.Fprintf(&b, "\npass %d, FAIL %d, xdiv (expected divergence) %d, skip %d\n",
		r.Summary[Pass], r.Summary[Fail], r.Summary[Divergence], r.Summary[Skip])
	return b.String()
}

func (r *Report) grid() (rows, runtimes []string, cells map[string]string) {
	cells = map[string]string{}
	seenRow, seenRT := map[string]bool{}, map[string]bool{}
	for _, x := range r.Results {
		row := x.Case + " [" + x.Context + "]"
		if !seenRow[row] {
			seenRow[row] = true
			rows = append(rows, row)
		}
		if !seenRT[x.Runtime] {
			seenRT[x.Runtime] = true
			runtimes = append(runtimes, x.Runtime)
		}
		cells[row+"\x00"+x.Runtime] = x.Outcome
	}
	return rows, runtimes, cells
}

// WriteMarkdown writes a human summary: host, table, then every failure,
// divergence and skip with its reason.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# cgconform report\n\nHost: mode **%s**", r.Host.Mode)
	if r.Host.Label != "" {
		fmt.Fprintf(&b, " (label %s)", r.Host.Label)
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
			line = append(line, Symbol(cells[row+"\x00"+rt]))
		}
		table = append(table, line)
	}
	b.WriteString("\n" + MarkdownTable(append([]string{"case [context]"}, runtimes...), table))
	r.Summarize()
	fmt.Fprintf(&b, "\npass %d, FAIL %d, xdiv (expected divergence) %d, skip %d\n\n",
		r.Summary[Pass], r.Summary[Fail], r.Summary[Divergence], r.Summary[Skip])
	res := append([]Result(nil), r.Results...)
	order := map[string]int{Fail: 0, Divergence: 1, Skip: 2, Pass: 3}
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
