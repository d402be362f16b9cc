package report

import (
	"fmt"
	"strconv"
	"strings"
)

// Progress is one line cgconform prints while it runs: a case x context x
// runtime starting,
//
//	=== RUN relative-path [host] runsc-patched
//
// or finished, with its outcome, wall time and a one-line detail:
//
//	xdiv relative-path                  [host]                 runsc-stock       5.6s stock runsc …
//
// The matrix follows a VM's console with ParseProgress, and recovers the
// results of a VM that never sent its report from the finished lines.
type Progress struct {
	// Done is false for the start line.
	Done    bool
	Case    string
	Context string
	Runtime string
	// Outcome, Seconds and Detail are set on a finished line.
	Outcome Outcome
	Seconds float64
	Detail  string
}

const runPrefix = "=== RUN "

// StartLine is the line printed when r starts.
func StartLine(r *Result) Progress {
	return Progress{Case: r.Case, Context: r.Context, Runtime: r.Runtime}
}

// DoneLine is the line printed when r has finished.
func DoneLine(r *Result, detail string) Progress {
	return Progress{Done: true, Case: r.Case, Context: r.Context, Runtime: r.Runtime,
		Outcome: r.Outcome, Seconds: float64(r.DurationMS) / 1000, Detail: detail}
}

// Name is "case [context] runtime".
func (p Progress) Name() string { return p.Case + " [" + p.Context + "] " + p.Runtime }

// String formats the line (without a newline).
func (p Progress) String() string {
	if !p.Done {
		return runPrefix + p.Name()
	}
	return strings.TrimRight(fmt.Sprintf("%-4s %-30s %-22s %-14s %6.1fs %s", TextSymbols.Of(p.Outcome), p.Case, "["+p.Context+"]", p.Runtime,
		p.Seconds, strings.ReplaceAll(p.Detail, "\n", " ")), " ")
}

// Result is the finished line as a result (what a VM's console tells of a
// case when its report.json never came back).
func (p Progress) Result() Result {
	return Result{Case: p.Case, Context: p.Context, Runtime: p.Runtime, Outcome: p.Outcome,
		Reason: p.Detail, DurationMS: int64(p.Seconds * 1000)}
}

// ParseProgress reads a line printed by Progress.String; ok is false for
// any other line.
func ParseProgress(line string) (p Progress, ok bool) {
	line = strings.TrimRight(line, "\r")
	if rest, found := strings.CutPrefix(line, runPrefix); found {
		f := strings.Fields(rest)
		if len(f) != 3 || !bracketed(f[1]) {
			return Progress{}, false
		}
		return Progress{Case: f[0], Context: f[1][1 : len(f[1])-1], Runtime: f[2]}, true
	}
	f := strings.Fields(line)
	if len(f) < 5 {
		return Progress{}, false
	}
	o, known := outcomeOfSymbol[f[0]]
	secs, err := strconv.ParseFloat(strings.TrimSuffix(f[4], "s"), 64)
	if !known || !bracketed(f[2]) || !strings.HasSuffix(f[4], "s") || err != nil {
		return Progress{}, false
	}
	p = Progress{Done: true, Outcome: o, Case: f[1], Context: f[2][1 : len(f[2])-1], Runtime: f[3], Seconds: secs}
	// The detail is what follows the fifth field, as printed.
	rest := line
	for i := 0; i < 5; i++ {
		rest = strings.TrimLeft(rest, " \t")
		rest = rest[len(f[i]):]
	}
	p.Detail = strings.TrimSpace(rest)
	return p, true
}

func bracketed(s string) bool {
	return len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']'
}

var outcomeOfSymbol = func() map[string]Outcome {
	m := map[string]Outcome{}
	for _, o := range Outcomes {
		m[TextSymbols.Of(o)] = o
	}
	return m
}()
