// Package matrixreport merges the harness reports of every host mode into one
// matrix: report.json, report.md (cases × runtimes × modes, expected
// divergences marked) and junit.xml. The junit.xml writer, the markdown
// tables and the file writing are harness/report's, so a host's report and
// the matrix's read the same way.
package matrixreport

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/runsc-cgroups/cgconform/harness/report"
)

// Outcomes: the harness's, and one for a cell no record fills.
const (
	Pass       = report.Pass
	Fail       = report.Fail
	Divergence = report.Divergence
	Skip       = report.Skip
	Missing    = "missing" // the mode produced no record for this cell
)

// Record is one case run by one runtime on one mode.
type Record struct {
	Case    string  `json:"case"`
	Runtime string  `json:"runtime"`
	Mode    string  `json:"mode"`
	Outcome string  `json:"outcome"`
	Reason  string  `json:"reason,omitempty"`
	Diff    string  `json:"diff,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
}

// ModeRun is what one VM did.
type ModeRun struct {
	Mode        string         `json:"mode"`
	About       string         `json:"about,omitempty"`
	Status      string         `json:"status"` // reported, timeout, crashed, no-report
	Problem     string         `json:"problem,omitempty"`
	HarnessExit *int           `json:"harness_exit,omitempty"`
	BootSeconds float64        `json:"boot_seconds"`
	WallSeconds float64        `json:"wall_seconds"`
	RunningCase string         `json:"running_case,omitempty"`
	ConsoleTail []string       `json:"console_tail,omitempty"`
	Tool        string         `json:"tool,omitempty"`      // cgconform's schema or the stand-in
	HostMode    string         `json:"host_mode,omitempty"` // the layout the harness detected
	LastDone    string         `json:"last_finished,omitempty"`
	Summary     map[string]int `json:"summary,omitempty"`
	// Partial is set when the records come from the console of a VM that
	// never sent its report (killed at its time limit, or crashed).
	Partial bool     `json:"partial,omitempty"`
	Records []Record `json:"records"`
}

// Matrix is the whole run.
type Matrix struct {
	Kernel string    `json:"kernel,omitempty"`
	Accel  string    `json:"accel,omitempty"`
	Modes  []ModeRun `json:"modes"`
}

// Harness is what the matrix takes from one harness report.json.
type Harness struct {
	Tool     string // the schema or tool name
	HostMode string // the mode the harness detected
	Records  []Record
}

// ParseHarnessReport reads a harness report.json (cgconform/report/v1, or
// the stand-in's). It accepts the records as a top-level array or under
// "results" or "records", and a few spellings of each field, so the matrix
// keeps working while the harness schema grows. A record's case name carries
// its caller context ("case [context]").
func ParseHarnessReport(data []byte, mode string) (Harness, error) {
	tool, hostMode, recs, err := parseHarness(data, mode)
	return Harness{Tool: tool, HostMode: hostMode, Records: recs}, err
}

func parseHarness(data []byte, mode string) (tool, hostMode string, recs []Record, err error) {
	var top any
	if err := json.Unmarshal(data, &top); err != nil {
		return "", "", nil, fmt.Errorf("harness report.json is not JSON: %w", err)
	}
	var list []any
	switch v := top.(type) {
	case []any:
		list = v
	case map[string]any:
		tool = str(v, "schema", "tool")
		if h, ok := v["host"].(map[string]any); ok {
			hostMode = str(h, "mode")
		}
		for _, k := range []string{"results", "records", "cases"} {
			if l, ok := v[k].([]any); ok {
				list = l
				break
			}
		}
		if list == nil {
			return tool, hostMode, nil, fmt.Errorf("harness report.json has no results/records array (keys: %s)", strings.Join(keys(v), ", "))
		}
	default:
		return "", "", nil, fmt.Errorf("harness report.json is a %T, want an object or array", top)
	}
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return tool, hostMode, nil, fmt.Errorf("harness record %d is a %T, want an object", i, item)
		}
		r := Record{
			Case:    str(m, "case", "name", "case_name"),
			Runtime: str(m, "runtime", "runtime_name"),
			Mode:    str(m, "mode", "host_mode"),
			Outcome: NormalizeOutcome(str(m, "outcome", "status", "result")),
			Reason:  str(m, "reason", "message", "skip_reason", "divergence", "error"),
			Diff:    str(m, "diff"),
		}
		if cx := str(m, "context"); cx != "" {
			r.Case += " [" + cx + "]"
		}
		if ms, ok := m["durationMs"].(float64); ok {
			r.Seconds = ms / 1000
		} else if s, ok := m["seconds"].(float64); ok {
			r.Seconds = s
		}
		msgs, diffs := failures(m["failures"])
		if r.Reason == "" {
			r.Reason = msgs
		} else if msgs != "" {
			r.Reason += "; " + msgs
		}
		if r.Diff == "" {
			r.Diff = diffs
		}
		if r.Case == "" {
			return tool, hostMode, nil, fmt.Errorf("harness record %d has no case name", i)
		}
		// The VM is the authority on which mode it was.
		r.Mode = mode
		recs = append(recs, r)
	}
	return tool, hostMode, recs, nil
}

// failures flattens cgconform's failures list: the messages of the unmet
// expectations not covered by a declared divergence, and all diffs.
func failures(v any) (msgs, diffs string) {
	list, _ := v.([]any)
	var ms, ds []string
	for _, item := range list {
		f, ok := item.(map[string]any)
		if !ok {
			continue
		}
		step, msg := str(f, "step"), str(f, "message")
		if exp, _ := f["expected"].(bool); !exp && msg != "" {
			ms = append(ms, step+": "+msg)
		}
		if d := str(f, "diff"); d != "" {
			ds = append(ds, step+":\n"+d)
		}
	}
	return strings.Join(ms, "; "), strings.Join(ds, "\n")
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// str returns the first non-empty string among keys; nested objects are
// rendered as compact JSON.
func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		switch v := m[k].(type) {
		case string:
			if v != "" {
				return v
			}
		case nil:
		default:
			b, _ := json.Marshal(v)
			if s := string(b); s != "" && s != "null" && s != "{}" && s != "[]" {
				return s
			}
		}
	}
	return ""
}

// NormalizeOutcome maps the spellings a harness may use onto ours.
func NormalizeOutcome(s string) string {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "pass", "passed", "ok":
		return Pass
	case "fail", "failed", "failure", "error":
		return Fail
	case "expected-divergence", "expected_divergence", "divergence", "diverged", "xfail", "expected":
		return Divergence
	case "skip", "skipped":
		return Skip
	case "":
		return Missing
	}
	return strings.ToLower(s)
}

// Unexpected reports whether the run holds anything that should fail CI: a
// mode without results, a harness that exited non-zero, or a failed record.
func (m *Matrix) Unexpected() []string {
	var out []string
	for _, mr := range m.Modes {
		if mr.Status != "reported" {
			out = append(out, fmt.Sprintf("%s: %s", mr.Mode, mr.Status))
		}
		for _, r := range mr.Records {
			if r.Outcome == Fail {
				out = append(out, fmt.Sprintf("%s: %s/%s failed", mr.Mode, r.Case, r.Runtime))
			}
		}
		if mr.HarnessExit != nil && *mr.HarnessExit != 0 && len(out) == 0 {
			out = append(out, fmt.Sprintf("%s: harness exited %d", mr.Mode, *mr.HarnessExit))
		}
	}
	return out
}

// Summarize counts outcomes.
func Summarize(recs []Record) map[string]int {
	s := map[string]int{}
	for _, r := range recs {
		s[r.Outcome]++
	}
	return s
}

// Merge joins matrices of separate runs (one per CI job and mode) in the
// order given; a later run of the same mode replaces an earlier one.
func Merge(ms ...*Matrix) *Matrix {
	out := &Matrix{}
	idx := map[string]int{}
	for _, m := range ms {
		if out.Kernel == "" {
			out.Kernel = m.Kernel
		}
		if out.Accel == "" {
			out.Accel = m.Accel
		}
		for _, mr := range m.Modes {
			if i, ok := idx[mr.Mode]; ok {
				out.Modes[i] = mr
				continue
			}
			idx[mr.Mode] = len(out.Modes)
			out.Modes = append(out.Modes, mr)
		}
	}
	return out
}
