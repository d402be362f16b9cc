// Package report is the one schema of cgconform's results: what the harness
// writes (report.json, a Report: Schema names its version), the progress
// lines it prints, and the matrix report that merges one harness report per
// host of the QEMU matrix. The harness writes these types; the matrix
// (ci/matrixreport) and the benchmarks (bench) read them back with Read and
// ReadMatrix, never with a decoder of their own.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/mode"
)

// Schema is the current schema identifier of report.json.
const Schema = "cgconform/report/v2"

// Outcome is how one case x context x runtime ended.
type Outcome string

// Outcomes.
const (
	Pass       Outcome = "pass"
	Fail       Outcome = "fail"
	Divergence Outcome = "expected-divergence"
	Skip       Outcome = "skip"
)

// Outcomes lists every outcome a result can have.
var Outcomes = []Outcome{Pass, Fail, Divergence, Skip}

// Report is the whole run.
type Report struct {
	Schema string `json:"schema"`
	// RunID names everything the run created: the test root
	// /cgconform-<RunID> and the prefix of every container ID.
	RunID    string          `json:"runId,omitempty"`
	Started  time.Time       `json:"started"`
	Finished time.Time       `json:"finished"`
	Host     Host            `json:"host"`
	Runtimes []Runtime       `json:"runtimes"`
	Results  []Result        `json:"results"`
	Summary  map[Outcome]int `json:"summary"`
}

// Host describes the machine the run happened on.
type Host struct {
	CgroupMode mode.Cgroup `json:"cgroupMode"`
	// MatrixHost is the matrix host this machine is (-mode), if any.
	MatrixHost  mode.Host   `json:"matrixHost,omitempty"`
	Kernel      string      `json:"kernel"`
	UID         int         `json:"uid"`
	Hostname    string      `json:"hostname"`
	SystemdPID1 bool        `json:"systemdPID1"`
	CgroupNS    bool        `json:"cgroupNS"`
	Hierarchies []Hierarchy `json:"hierarchies"`
	Notes       []string    `json:"notes,omitempty"`
}

// Hierarchy is a mounted cgroup hierarchy, as cgroupfs reads it.
type Hierarchy = cgroupfs.Hierarchy

// Runtime is one runtime as the report records it.
type Runtime struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Kind    string `json:"kind"`
	Version string `json:"version,omitempty"`
	// Skip, when set, is why no case ran for this runtime.
	Skip string `json:"skip,omitempty"`
}

// Result is one case x context x runtime on one host.
type Result struct {
	Case    string `json:"case"`
	Context string `json:"context"`
	Runtime string `json:"runtime"`
	// CgroupMode is the layout the harness detected; MatrixHost the matrix
	// host it ran on, if any.
	CgroupMode mode.Cgroup `json:"cgroupMode"`
	MatrixHost mode.Host   `json:"matrixHost,omitempty"`
	File       string      `json:"file,omitempty"`
	Source     string      `json:"source,omitempty"`
	Purpose    string      `json:"purpose,omitempty"`
	Outcome    Outcome     `json:"outcome"`
	// Reason is why it was skipped, or the declared divergence's reason.
	Reason     string    `json:"reason,omitempty"`
	Failures   []Failure `json:"failures,omitempty"`
	DurationMS int64     `json:"durationMs"`
	// Checks is how many checks the result ran (TrialChecks summed over
	// its trials; a table case: its inputs judged), so that a faster
	// harness can show it checks no less.
	Checks int `json:"checks,omitempty"`
	// Daemons are the daemon starts of the result's context and steps.
	Daemons []Daemon `json:"daemons,omitempty"`
	Trials  *Trials  `json:"trials,omitempty"`
	Inputs  []Input  `json:"inputs,omitempty"`
	Steps   []Step   `json:"steps,omitempty"`
	// Leaks are what the result left: "<hierarchy>:<cgroup>", "pid N
	// (comm)" or "mount ...".
	Leaks []string `json:"leaks,omitempty"`
	// TreeBefore and TreeAfter are the cgroups below the test root
	// ("<hierarchy>:<cgroup>") before and after.
	TreeBefore []string `json:"treeBefore,omitempty"`
	TreeAfter  []string `json:"treeAfter,omitempty"`
}

// Name is "case [context]", how -run, -skip and the tables name a result.
func (r *Result) Name() string { return Row{Case: r.Case, Context: r.Context}.Name() }

// Label is where the result ran: the matrix host, else the detected
// layout.
func (r *Result) Label() string {
	if r.MatrixHost != "" {
		return string(r.MatrixHost)
	}
	return string(r.CgroupMode)
}

// Brief is the result without its step records and trees: what the matrix
// keeps of each host's report (the full one stays in that host's folder).
func (r Result) Brief() Result {
	r.Steps, r.TreeBefore, r.TreeAfter, r.File, r.Purpose = nil, nil, nil, "", ""
	return r
}

// Trials sums up a case run several times with fresh IDs (trials: N).
type Trials struct {
	Trials int `json:"trials"`
	// Killed counts trials in which a kill step really SIGKILLed its
	// runtime command (it may have exited before its moment came).
	Killed int `json:"killed"`
	// NotKilled counts trials in which a create to be killed at a system
	// call ran to its end, exit 0: its nth call never came (a sweep
	// past its last kill point).
	NotKilled int `json:"notKilled,omitempty"`
	// Failed counts trials with an unmet expectation.
	Failed int `json:"failed"`
	// Leaked counts trials that left something behind (cgroup or
	// process) after the final delete --force.
	Leaked int `json:"leaked"`
	// LeakedItems is the number of items all trials left.
	LeakedItems int `json:"leakedItems"`
	// MaxDeleteMS is the longest delete (or delete --force) of any trial.
	MaxDeleteMS int64 `json:"maxDeleteMs"`
}

// Input categories of a table case.
const (
	// Works: exit 0, placed as the case expects, nothing left after delete.
	Works = "works"
	// Refused: non-zero exit and no cgroup directory created at any moment
	// observed after the command, nothing left.
	Refused = "refused"
	// Neither: anything else (the evidence says what).
	Neither = "neither"
)

// Input is what one input of a table case did.
type Input struct {
	Input    string `json:"input"`
	Category string `json:"category"`
	// Expected is the category the case expects ("" when it expects none
	// for this runtime).
	Expected string `json:"expected,omitempty"`
	Exit     int    `json:"exit"`
	// Evidence is the whole-tree diff and the command output.
	Evidence []string `json:"evidence,omitempty"`
	Skipped  string   `json:"skipped,omitempty"`
}

// Failure is one unmet expectation.
type Failure struct {
	Step    string `json:"step"`
	Message string `json:"message"`
	// Diff is go-cmp's (-want +got).
	Diff string `json:"diff,omitempty"`
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
func (r *Report) Summarize() { r.Summary = Count(r.Results) }

// Count counts results by outcome; every outcome has an entry.
func Count(results []Result) map[Outcome]int {
	m := map[Outcome]int{}
	for _, o := range Outcomes {
		m[o] = 0
	}
	for _, x := range results {
		m[x.Outcome]++
	}
	return m
}

// OK reports whether nothing unexpected happened.
func (r *Report) OK() bool {
	return !slices.ContainsFunc(r.Results, func(x Result) bool { return x.Outcome == Fail })
}

// Ran reports whether any result ran (passed, failed or diverged): a run
// of skips only proves nothing.
func (r *Report) Ran() bool {
	return slices.ContainsFunc(r.Results, func(x Result) bool { return x.Outcome != Skip })
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

// Read parses a report.json. Unknown fields are errors: a reader that
// silently dropped a field would be a second schema.
func Read(rd io.Reader) (*Report, error) {
	return Decode(rd, "cgconform report", Schema, func(r *Report) string { return r.Schema })
}

// ReadFile is Read of the file at path.
func ReadFile(path string) (*Report, error) { return ReadFileWith(path, Read) }

// Decode reads one JSON document into a new T, refusing unknown fields,
// and checks that its schema (got from it by schema) is want. It is the one
// decoder of every report format: the harness's, the matrix's, cgbench's.
func Decode[T any](rd io.Reader, what, want string, schema func(*T) string) (*T, error) {
	var v T
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("reading a %s: %w", what, err)
	}
	if got := schema(&v); got != want {
		return nil, fmt.Errorf("%s schema %q, want %q (written by another version: run it again)", what, got, want)
	}
	return &v, nil
}

// ReadFileWith opens path and reads it with read, naming the file in errors.
func ReadFileWith[T any](path string, read func(io.Reader) (*T, error)) (*T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	v, err := read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}
