// Package prtext fills the before/after tables of a pull request's PR.md
// from a harness run (a matrix or a conformance report.json), so no outcome
// in a description is typed by hand. A PR.md asks for a table with a marker
// on a line of its own, naming cases (every context) or case[context]:
//
//	<!-- table: empty-path-same-id failed-start[host] -->
//
// Fill replaces it with one row per case and context, one column per host
// mode; each cell is the outcome of stock runsc, of what the pull request
// needs, alone (when it needs others), and of its own build, then the
// reasons for every cell that is not a pass, and the run it came from.
package prtext

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/runsc-cgroups/cgconform/base/report"
)

// Outcome is one case, in one caller context, run by one runtime in one
// host mode.
type Outcome struct {
	Case, Context, Runtime, Mode, Reason string
	Outcome                              report.Outcome
	File                                 string         // the report it came from (LoadAll)
	Build                                *report.Build  // its runtime's build as that report records it; nil: none
	Trials                               *report.Trials // a case run several times (kill storms); nil: once
}

// Results is a run, flattened.
type Results struct {
	Source   string   // what ran where, for the line under each table
	Modes    []string // host modes, in the report's order: the columns
	Outcomes []Outcome
	Versions map[string]string // runtime -> the version it reported (conformance reports only)
}

// LoadAll reads matrix or conformance report.json files as one run (Merge).
func LoadAll(paths []string) (*Results, error) {
	var all []*Results
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		res, err := Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for i := range res.Outcomes {
			res.Outcomes[i].File = p
		}
		all = append(all, res)
	}
	return Merge(all...), nil
}

// Merge joins runs: modes in order of first appearance and every outcome
// (where two fill the same cell, Table shows the later one's).
func Merge(runs ...*Results) *Results {
	out := &Results{Versions: map[string]string{}}
	var sources []string
	for _, r := range runs {
		if !slices.Contains(sources, r.Source) {
			sources = append(sources, r.Source)
		}
		for _, m := range r.Modes {
			out.addMode(m)
		}
		maps.Copy(out.Versions, r.Versions)
		out.Outcomes = append(out.Outcomes, r.Outcomes...)
	}
	out.Source = strings.Join(sources, "; ")
	return out
}

// Parse reads a conformance or a matrix report, told apart by schema.
func Parse(data []byte) (*Results, error) {
	var top struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("not a report.json: %w", err)
	}
	switch top.Schema {
	case report.Schema:
		r, err := report.Read(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		return fromConformance(r), nil
	case report.MatrixSchema:
		m, err := report.ReadMatrix(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		return fromMatrix(m), nil
	}
	return nil, fmt.Errorf("schema %q is neither a conformance report (%s) nor a matrix report (%s)", top.Schema, report.Schema, report.MatrixSchema)
}

func fromConformance(r *report.Report) *Results {
	host := string(r.Host.CgroupMode)
	if r.Host.MatrixHost != "" {
		host = string(r.Host.MatrixHost)
	}
	res := &Results{Source: fmt.Sprintf("conformance run on one host (mode %s, kernel %s), %s",
		host, r.Host.Kernel, r.Started.UTC().Format("2006-01-02")), Versions: map[string]string{}}
	for _, rt := range r.Runtimes {
		if v := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(rt.Version, ";", 2)[0], "runsc version")); v != "" {
			res.Versions[rt.Name] = v
		}
	}
	if len(r.Results) > 0 { // a column only with results
		res.addHost(host, r.Results, nil)
	}
	return res
}

// addHost adds a host mode's column and its results' cells, with the
// builds its report records; a failure's reason is what was unexpected.
func (r *Results) addHost(host string, results []report.Result, builds map[string]report.Build) {
	r.addMode(host)
	for _, x := range results {
		o := Outcome{Case: x.Case, Context: x.Context, Runtime: x.Runtime, Mode: host, Outcome: x.Outcome, Reason: x.Reason, Trials: x.Trials}
		if x.Outcome == report.Fail {
			o.Reason = strings.Join(x.Unexpected(), "; ")
		}
		if b, ok := builds[x.Runtime]; ok {
			o.Build = &b
		}
		r.Outcomes = append(r.Outcomes, o)
	}
}

func fromMatrix(m *report.Matrix) *Results {
	var modes []string
	for _, h := range m.Hosts {
		s := string(h.Host)
		if h.Status != "" && h.Status != report.Reported {
			s += " (" + h.Status + ")"
		}
		modes = append(modes, s)
	}
	res := &Results{Source: fmt.Sprintf("matrix run, one VM per host mode (%s; kernel %s, QEMU %s)",
		strings.Join(modes, ", "), orUnknown(m.Kernel), orUnknown(m.Accel))}
	for _, h := range m.Hosts {
		res.addHost(string(h.Host), h.Results, h.Builds)
	}
	return res
}

func orUnknown(s string) string { return cmp.Or(s, "unknown") }

func (r *Results) addMode(mode string) {
	if !slices.Contains(r.Modes, mode) {
		r.Modes = append(r.Modes, mode)
	}
}

// marker is one table request in a PR.md.
var marker = regexp.MustCompile(`(?m)^[ \t]*<!--[ \t]*table:([^>]*)-->[ \t]*$`)

var selector = regexp.MustCompile(`^([a-z0-9][a-z0-9-]*)(\[([a-z0-9][a-z0-9-]*)\])?$`)

// Selector names a case, and a context of it or ("") all of them.
type Selector struct{ Case, Context string }

func (s Selector) String() string {
	if s.Context == "" {
		return s.Case
	}
	return s.Case + "[" + s.Context + "]"
}

// Markers returns the selectors of every table marker in md, in order.
func Markers(md string) ([][]Selector, error) {
	var out [][]Selector
	for _, m := range marker.FindAllStringSubmatch(md, -1) {
		var sels []Selector
		for _, f := range strings.Fields(m[1]) {
			p := selector.FindStringSubmatch(f)
			if p == nil {
				return nil, fmt.Errorf("table marker %q: %q is not a case name or case[context]", strings.TrimSpace(m[0]), f)
			}
			sels = append(sels, Selector{Case: p[1], Context: p[3]})
		}
		if len(sels) == 0 {
			return nil, fmt.Errorf("table marker %q names no case", strings.TrimSpace(m[0]))
		}
		out = append(out, sels)
	}
	return out, nil
}

// Unfilled replaces each marker when no report was given.
const Unfilled = "**Before/after table not filled: run `make matrix`, then `make upstream-series REPORT=out/matrix/report.json`.** Cases: "

// Fill replaces every table marker in md with its table from res (with res
// nil, with Unfilled and the cases). warnings lists cells where the after
// runtime does not pass, and tables marked "build unproven". A table with
// cells from another build than cols.Want is refused: a *BuildError covers
// every such table of md.
func Fill(md string, res *Results, cols Columns) (out string, warnings []string, err error) {
	all, err := Markers(md)
	if err != nil {
		return "", nil, err
	}
	var builds *BuildError
	i := 0
	out = marker.ReplaceAllStringFunc(md, func(m string) string {
		sels := all[i]
		i++
		if err != nil {
			return m
		}
		if res == nil {
			return Unfilled + join(sels, func(s Selector) string { return "`" + s.String() + "`" }, ", ") + "."
		}
		t, w, terr := Table(res, sels, cols)
		var be *BuildError
		if errors.As(terr, &be) {
			if builds == nil {
				builds = &BuildError{}
			}
			builds.Selectors = append(builds.Selectors, be.Selectors...)
			builds.Problems = append(builds.Problems, be.Problems...)
			return m
		}
		err = terr
		warnings = append(warnings, w...)
		return strings.TrimSuffix(t, "\n")
	})
	if err != nil {
		return "", nil, err
	}
	if builds != nil {
		return "", nil, builds
	}
	return out, warnings, nil
}

// Columns are the runtimes each cell of a table shows, in order, and the
// build each must have been made from.
type Columns struct {
	Before string // stock runsc
	// Needs is the build of only what the pull request needs, when it
	// needs others (runscbuild.NeedsRuntime); NeedsAbout says what it holds.
	Needs, NeedsAbout string
	After             string // the pull request's build, or the whole series
	// Want maps each runtime above to the build the current patches make:
	// a cell from another build is stale and never printed; one from no
	// recorded build is unproven, printed (marked) only with AllowUnproven.
	Want          map[string]report.Build
	AllowUnproven bool
}

func (c Columns) runtimes() []string {
	return slices.DeleteFunc([]string{c.Before, c.Needs, c.After}, func(rt string) bool { return rt == "" })
}

// BuildError is a table (or several of one PR.md) whose cells come from
// another build than the current patches make (stale), or none (unproven).
type BuildError struct {
	Selectors []Selector // the tables' cases
	Problems  []BuildProblem
}

// BuildProblem is one runtime's cells from one report: the build it
// recorded (nil: none) and the one the current patches make.
type BuildProblem struct {
	Runtime string
	File    string // "" for Parse's results, and where no run has the runtime
	Have    *report.Build
	Want    report.Build
	Cells   int
}

// Stale tells a cell from another build from one of no recorded build.
func (p BuildProblem) Stale() bool { return p.Have != nil }

func (p BuildProblem) String() string {
	file := p.File
	if file == "" {
		file = "the runs given"
	}
	if p.Cells == 0 {
		return fmt.Sprintf("%s: no run has it (current build %s)", p.Runtime, p.Want)
	}
	if !p.Stale() {
		return fmt.Sprintf("%s: %d cells from %s, which records no build (build unproven; current build %s)", p.Runtime, p.Cells, file, p.Want)
	}
	s := fmt.Sprintf("%s: %d cells from %s, built from %s, not the current %s", p.Runtime, p.Cells, file, p.Have, p.Want)
	if changed := changedPatches(*p.Have, p.Want); len(changed) > 0 {
		s += " (changed: " + strings.Join(changed, ", ") + ")"
	}
	return s
}

// changedPatches names the patch files that differ between has and want.
func changedPatches(has, want report.Build) []string {
	var out []string
	if has.GVisor != want.GVisor {
		out = append(out, "gVisor "+has.GVisor+" → "+want.GVisor)
	}
	for _, w := range want.Patches {
		if !slices.Contains(has.Patches, w) {
			out = append(out, w.Name)
		}
	}
	for _, h := range has.Patches {
		if !slices.ContainsFunc(want.Patches, func(w report.PatchFile) bool { return w.Name == h.Name }) {
			out = append(out, h.Name+" (no longer applied)")
		}
	}
	return out
}

func (e *BuildError) Error() string {
	return "table of " + SelectorList(e.Selectors) + ": " + join(e.Problems, BuildProblem.String, "; ")
}

// join joins f of each of xs with sep.
func join[T any](xs []T, f func(T) string, sep string) string {
	var out []string
	for _, x := range xs {
		out = append(out, f(x))
	}
	return strings.Join(out, sep)
}

// Stale tells whether any cell is from another build (not only unproven).
func (e *BuildError) Stale() bool {
	return slices.ContainsFunc(e.Problems, BuildProblem.Stale)
}

// SelectorList names sels, blank-separated.
func SelectorList(sels []Selector) string { return join(sels, Selector.String, " ") }

// RE matches the harness's "name [context]" of the selector, without
// blanks (the matrix splits harness flags at blanks).
func (s Selector) RE() string {
	re := regexp.QuoteMeta(s.Case) + `\s\[`
	if s.Context != "" {
		re += regexp.QuoteMeta(s.Context) + `\]`
	}
	return re
}

// RunRE is the harness's -run for the cases of sels.
func RunRE(sels []Selector) string {
	var res []string
	for _, s := range sels {
		if re := s.RE(); !slices.Contains(res, re) {
			res = append(res, re)
		}
	}
	return "^(" + strings.Join(res, "|") + ")"
}

// EvidenceCommand measures the cases of sels again with the current builds.
func EvidenceCommand(sels []Selector) string {
	return "make evidence MATRIX_FLAGS=\"-run '" + RunRE(sels) + "'\""
}

// rowName is the row's "case [context]", or its case alone.
func rowName(r report.Row) string {
	if r.Context == "" {
		return r.Case
	}
	return r.Name()
}

// symbols are what a cell says of each outcome.
var symbols = report.Symbols{report.Pass: "✓", report.Divergence: "✗", report.Fail: "FAIL", report.Skip: "–", report.Missing: "?"}

// Bug is what a cell says, before the last step, of a failure the last
// step passes: the failure a later step fixes. FAIL is left for the rest.
const Bug = "bug"

// MinKills is the fewest landed kills a kill storm's pass rests on for its
// cell to say a plain ✓.
const MinKills = 10

// word is what a cell says of o, one step's outcome; after is the last's.
func word(o Outcome, last bool, after report.Outcome) string {
	switch {
	case o.Outcome == report.Fail && !last && after == report.Pass:
		return Bug
	case tooFewKills(o):
		return fmt.Sprintf("%s (%s: too few)", symbols.Of(report.Pass), kills(o.Trials.Killed))
	}
	return symbols.Of(o.Outcome)
}

// tooFewKills: a kill storm's pass on fewer than MinKills landed kills.
func tooFewKills(o Outcome) bool {
	return o.Outcome == report.Pass && o.Trials != nil && o.Trials.Killed < MinKills
}

func kills(n int) string {
	if n == 1 {
		return "1 kill"
	}
	return fmt.Sprintf("%d kills", n)
}

// Table renders the rows sels select, the runtimes of cols per mode, then
// the reasons behind every cell that is not a pass and the source line.
// Every cell is from the build cols.Want names for its runtime, or it is a
// *BuildError (one of no recorded build only without cols.AllowUnproven:
// the table then says "Build unproven" above it and in a warning).
func Table(res *Results, sels []Selector, cols Columns) (string, []string, error) {
	// The grid's rows are per runtime; the table's a case in a context.
	g := &report.Grid[Outcome]{}
	for _, o := range res.Outcomes {
		g.Add(report.Row{Case: o.Case, Context: o.Context, Runtime: o.Runtime}, o.Mode, o)
	}
	var rows []report.Row
	var missing []string
	for _, s := range sels {
		found := false
		for _, r := range g.Rows {
			if r.Case != s.Case || (s.Context != "" && r.Context != s.Context) {
				continue
			}
			found = true
			if r.Runtime = ""; !slices.Contains(rows, r) {
				rows = append(rows, r)
			}
		}
		if !found {
			missing = append(missing, s.String())
		}
	}
	if len(missing) > 0 {
		return "", nil, fmt.Errorf("the report has no record of %s: run the matrix with these cases (make matrix MATRIX_FLAGS=\"-run ...\") or fix the marker", strings.Join(missing, ", "))
	}
	get := func(r report.Row, rt, mode string) Outcome {
		if o, ok := g.At(report.Row{Case: r.Case, Context: r.Context, Runtime: rt}, mode); ok {
			return o
		}
		return Outcome{Case: r.Case, Context: r.Context, Runtime: rt, Mode: mode, Outcome: report.Missing}
	}
	proof, err := newProof(cols)
	if err != nil {
		return "", nil, err
	}
	var table [][]string
	var warnings []string
	// A note per runtime, case, cell word and reason, naming its contexts.
	type noteKey struct {
		runtime, kase string
		word          string
		reason        string
	}
	var noteOrder []noteKey
	noteContexts := map[noteKey][]string{}
	// A failure's words differ per mode only in paths, tokens and PIDs: one
	// note per runtime and case, with the first mode's words and its modes.
	failModes, failFirst := map[noteKey][]string{}, map[noteKey]string{}
	note := func(o Outcome, word, mode string) {
		if o.Outcome == report.Pass || o.Outcome == report.Skip || o.Outcome == report.Missing {
			return
		}
		k := noteKey{o.Runtime, o.Case, word, oneLine(o.Reason)}
		if o.Outcome == report.Fail {
			k.reason = ""
			if _, ok := failFirst[k]; !ok {
				failFirst[k] = oneLine(o.Reason)
			}
			if !slices.Contains(failModes[k], mode) {
				failModes[k] = append(failModes[k], mode)
			}
		}
		if _, ok := noteContexts[k]; !ok {
			noteOrder = append(noteOrder, k)
		}
		if !slices.Contains(noteContexts[k], o.Context) {
			noteContexts[k] = append(noteContexts[k], o.Context)
		}
	}
	storms := false // a cell of a kill storm
	for _, r := range rows {
		line := []string{rowName(r)}
		for _, mode := range res.Modes {
			a := get(r, cols.After, mode)
			var words []string
			for _, rt := range cols.runtimes() {
				o := get(r, rt, mode)
				proof.add(o)
				w := word(o, rt == cols.After, a.Outcome)
				words = append(words, w)
				note(o, w, mode)
				storms = storms || o.Trials != nil
			}
			line = append(line, strings.Join(words, " → "))
			switch {
			case a.Outcome != report.Pass && a.Outcome != report.Skip:
				warnings = append(warnings, fmt.Sprintf("%s on %s: %s is %s", rowName(r), mode, cols.After, a.Outcome))
			case tooFewKills(a):
				warnings = append(warnings, fmt.Sprintf("%s on %s: %s passes on %s, fewer than %d", rowName(r), mode, cols.After, kills(a.Trials.Killed), MinKills))
			}
		}
		table = append(table, line)
	}
	unproven, err := proof.check(sels, cols.AllowUnproven)
	if err != nil {
		return "", nil, err
	}
	var notes []string
	for _, k := range noteOrder {
		reason, rt := k.reason, k.runtime
		if modes := failModes[k]; len(modes) > 0 {
			reason, rt = failFirst[k], rt+", in "+strings.Join(modes, ", ")
			if len(modes) > 1 {
				rt += " (" + modes[0] + "'s words)"
			}
		}
		if reason == "" {
			reason = "(the report gives no reason)"
		}
		where := k.kase
		if cx := strings.Join(noteContexts[k], ", "); cx != "" {
			where += " [" + cx + "]"
		}
		notes = append(notes, fmt.Sprintf("- %s %s, %s: %s", k.word, where, rt, reason))
	}
	afterWhat, fixer := "the whole series as built for the run, not this pull request alone", "the series"
	if strings.HasPrefix(cols.After, "runsc-pr-") {
		afterWhat, fixer = "stock runsc with this pull request, on the ones it needs", "this pull request"
	}
	if v := res.Versions[cols.After]; v != "" {
		afterWhat = v + ": " + afterWhat
	}
	each := fmt.Sprintf("%s → %s (%s)", cols.Before, cols.After, afterWhat)
	if cols.Needs != "" {
		each = fmt.Sprintf("%s → %s (what it needs, alone: %s) → %s (%s); what this pull request itself changes is the last step", cols.Before, cols.Needs, cols.NeedsAbout, cols.After, afterWhat)
	}
	var b strings.Builder
	for _, p := range unproven {
		warnings = append(warnings, "build unproven: "+p.String())
	}
	if len(unproven) > 0 {
		var files []string
		for _, p := range unproven {
			if f := p.File; f != "" && !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
		fmt.Fprintf(&b, "**Build unproven:** the runs behind this table (%s) do not record which patch each runtime was built from, so its cells may be from an older build of this pull request. `%s` measures them again.\n\n", strings.Join(files, ", "), EvidenceCommand(sels))
	}
	b.WriteString(report.MarkdownTable(append([]string{"case [context]"}, res.Modes...), table))
	fmt.Fprintf(&b, "\nEach cell: %s. %s\n", each, legend(cols, fixer, storms))
	if len(unproven) == 0 && len(cols.Want) > 0 {
		var builds []string
		for _, rt := range cols.runtimes() {
			if proof.seen[rt] {
				builds = append(builds, rt+" "+cols.Want[rt].String())
			}
		}
		if len(builds) > 0 {
			fmt.Fprintf(&b, "\nBuilt from: %s (each patch file's sha256 is in the run's report.json).\n", strings.Join(builds, ", "))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n" + strings.Join(notes, "\n") + "\n")
	}
	fmt.Fprintf(&b, "\n<sub>Generated by `make upstream-series` from a %s.</sub>\n", res.Source)
	return b.String(), warnings, nil
}

// legend says what each word of a cell means.
func legend(cols Columns, fixer string, storms bool) string {
	bug := "bug (first step only) fails as expected, fixed by " + fixer + " (below)"
	if cols.Needs != "" {
		bug = "bug (first two steps only) fails as expected, fixed by a later step (" + fixer + ", unless the middle step passes; below)"
	}
	s := "✓ meets every expectation of the case; ✗ does not, a divergence the case file declares (below); " + bug +
		"; FAIL an unexpected failure: in the last step, or before it where the last step does not pass either (below); – the case does not apply to that mode; ? no record."
	if storms {
		s += fmt.Sprintf(" ✓ (N kills: too few) a kill storm that passes with its kill landed in fewer than %d trials, too few to count as a pass.", MinKills)
	}
	return s
}

// proof gathers a table's cells whose build is not the one cols.Want names.
type proof struct {
	cols     Columns
	order    []proofKey
	problems map[proofKey]*BuildProblem
	seen     map[string]bool // runtimes with a cell
}

type proofKey struct{ runtime, file, have string }

func newProof(cols Columns) (*proof, error) {
	for _, rt := range cols.runtimes() {
		if _, ok := cols.Want[rt]; !ok {
			return nil, fmt.Errorf("no current build given for %s: cannot tell whether its cells are from it", rt)
		}
	}
	return &proof{cols: cols, problems: map[proofKey]*BuildProblem{}, seen: map[string]bool{}}, nil
}

// add checks one printed cell.
func (p *proof) add(o Outcome) {
	if o.Outcome == report.Missing {
		return
	}
	p.seen[o.Runtime] = true
	want := p.cols.Want[o.Runtime]
	if o.Build != nil && o.Build.SameSource(want) {
		return
	}
	k := proofKey{runtime: o.Runtime, file: o.File}
	if o.Build != nil {
		k.have = o.Build.String() + "\x00" + fmt.Sprint(o.Build.Patches)
	}
	if _, ok := p.problems[k]; !ok {
		p.order = append(p.order, k)
		p.problems[k] = &BuildProblem{Runtime: o.Runtime, File: o.File, Have: o.Build, Want: want}
	}
	p.problems[k].Cells++
}

// check returns the unproven problems when they may be printed, or a
// *BuildError (any stale cell, or an unproven one without allowUnproven). A
// needs or after step no run has at all is unproven.
func (p *proof) check(sels []Selector, allowUnproven bool) ([]BuildProblem, error) {
	var all []BuildProblem
	stale := false
	for _, rt := range []string{p.cols.Needs, p.cols.After} {
		if rt != "" && !p.seen[rt] {
			all = append(all, BuildProblem{Runtime: rt, Want: p.cols.Want[rt]})
		}
	}
	for _, k := range p.order {
		all = append(all, *p.problems[k])
		stale = stale || p.problems[k].Stale()
	}
	if len(all) == 0 {
		return nil, nil
	}
	if stale || !allowUnproven {
		return nil, &BuildError{Selectors: sels, Problems: all}
	}
	return all, nil
}

// oneLine keeps a reason on one line, without this project's issue
// numbers, which mean nothing to an upstream reviewer.
func oneLine(s string) string {
	s = issueRef.ReplaceAllString(s, "")
	s = strings.NewReplacer("()", "", "( ", "(", "; )", ")", " )", ")").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

// issueRef matches "issue 14 item 3; ", "issue 25 items 1-2, " and the like.
var issueRef = regexp.MustCompile(`\bissues? \d+(?: items? [\d, -]*\d)?(?:[;,] ?|\b)`)
