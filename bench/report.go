package bench

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/report"
)

// Schema names the report format.
const Schema = "cgbench/v1"

// Report is out/bench/report.json.
type Report struct {
	Schema   string    `json:"schema"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Command  string    `json:"command"`
	Machine  Machine   `json:"machine"`
	Binaries []Binary  `json:"binaries"`
	// Identical is set when stock and patched are the same file: then
	// every ratio measures noise only.
	Identical   bool              `json:"identicalBinaries"`
	Startup     []StartupResult   `json:"startup"`
	Collision   *CollisionResult  `json:"collision,omitempty"`
	Parallel    *ParallelResult   `json:"parallel,omitempty"`
	CRI         *CRIResult        `json:"cri,omitempty"`
	Conformance []ConformanceWall `json:"conformance"`
	Targets     []Target          `json:"targets"`
	// Errors are runs that failed where they must not: cgbench exits 1.
	Errors []string `json:"errors,omitempty"`
}

// Machine is where the numbers come from.
type Machine struct {
	Hostname   string      `json:"hostname"`
	NProc      int         `json:"nproc"`
	CPU        string      `json:"cpu,omitempty"`
	MemTotal   string      `json:"memTotal,omitempty"`
	Kernel     string      `json:"kernel"`
	CgroupMode mode.Cgroup `json:"cgroupMode"`
	Caller     []string    `json:"callerCgroups,omitempty"`
	LoadBefore string      `json:"loadavgBefore"`
	LoadAfter  string      `json:"loadavgAfter"`
	Notes      []string    `json:"notes,omitempty"`
}

// Binary is one runtime file measured.
type Binary struct {
	Name       string `json:"name"`
	Path       string `json:"path"`
	SHA256     string `json:"sha256"`
	NestedFlag bool   `json:"nestedCgroupsFlag"`
	Series     string `json:"series,omitempty"`
}

// ConformanceWall is the wall time of one conformance run.
type ConformanceWall struct {
	Mode    string  `json:"mode"`
	Source  string  `json:"source"`
	Seconds float64 `json:"seconds,omitempty"`
	// Results counts the case × runtime results of the run: a matrix run
	// of the headline cases only has far fewer than the whole set.
	Results int    `json:"results,omitempty"`
	Status  string `json:"status,omitempty"`
	Note    string `json:"note,omitempty"`
}

// ReadReport parses a cgbench report.json (Schema).
func ReadReport(data []byte) (*Report, error) {
	return report.Decode(bytes.NewReader(data), "cgbench report", Schema, func(r *Report) string { return r.Schema })
}

// ConformanceWalls reads the wall time of the conformance run on this host
// and of each matrix host, through the harness's own report readers. A
// missing file is "not measured"; an empty path is left out.
func ConformanceWalls(hostReport, matrixReport string) []ConformanceWall {
	var out []ConformanceWall
	if hostReport != "" {
		if _, err := os.Stat(hostReport); err != nil {
			out = append(out, ConformanceWall{Mode: "this host", Source: hostReport, Note: "not measured: no report (run make conformance)"})
		} else {
			r, err := report.ReadFile(hostReport)
			out = append(out, harnessWall(r, err, hostReport))
		}
	}
	if matrixReport == "" {
		return out
	}
	if _, err := os.Stat(matrixReport); err != nil {
		return append(out, ConformanceWall{Mode: "VM matrix", Source: matrixReport, Note: "not measured: no report (run make matrix)"})
	}
	m, err := report.ReadMatrixFile(matrixReport)
	return append(out, matrixWalls(m, err, matrixReport)...)
}

func harnessWall(r *report.Report, err error, src string) ConformanceWall {
	w := ConformanceWall{Mode: "this host", Source: src}
	if err != nil {
		w.Note = "not measured: unreadable report: " + err.Error()
		return w
	}
	if r.Host.CgroupMode != "" {
		w.Mode = string(r.Host.CgroupMode) + " (this host)"
	}
	if r.Started.IsZero() || r.Finished.Before(r.Started) {
		w.Note = "not measured: the report has no started/finished times"
		return w
	}
	w.Seconds = r.Finished.Sub(r.Started).Seconds()
	w.Results = len(r.Results)
	w.Status = "finished " + r.Finished.UTC().Format(time.RFC3339)
	return w
}

func matrixWalls(m *report.Matrix, err error, src string) []ConformanceWall {
	if err != nil || len(m.Hosts) == 0 {
		note := "not measured: no hosts in the matrix report"
		if err != nil {
			note = "not measured: unreadable matrix report: " + err.Error()
		}
		return []ConformanceWall{{Mode: "VM matrix", Source: src, Note: note}}
	}
	var out []ConformanceWall
	for _, h := range m.Hosts {
		w := ConformanceWall{Mode: string(h.Host) + " (VM)", Source: src, Seconds: h.WallSeconds, Results: len(h.Results), Status: h.Status, Note: report.FirstLine(h.Problem)}
		switch {
		case h.Status != "" && h.Status != report.Reported:
			// A VM that timed out or crashed ran no full conformance.
			w.Seconds, w.Results = 0, 0
			w.Note = strings.TrimSpace(fmt.Sprintf("not measured: the VM ended %q after %.0f s; %s", h.Status, h.WallSeconds, report.FirstLine(h.Problem)))
		case h.WallSeconds <= 0:
			w.Note = strings.TrimSpace("not measured " + report.FirstLine(h.Problem))
		}
		out = append(out, w)
	}
	return out
}

// Evaluate fills r.Targets from the measurements.
func (r *Report) Evaluate() {
	r.Targets = nil
	for _, s := range r.Startup {
		if s.Variant.Target {
			r.Targets = append(r.Targets, StartupTarget(s))
		}
	}
	if r.Collision != nil {
		st, pt := r.plainDelete()
		r.Targets = append(r.Targets, CollisionTarget(*r.Collision, st, pt))
	}
	if r.Parallel != nil {
		r.Targets = append(r.Targets, ParallelTarget(*r.Parallel))
	}
	if r.CRI != nil {
		for _, c := range r.CRI.Cells {
			r.Targets = append(r.Targets, CRIStopTarget(c))
		}
	}
}

// plainDelete is the median seconds of a delete -force without a collision,
// stock and patched, from the default row of this run (0 when not run): the
// floor a collision delete can reach on this machine.
func (r *Report) plainDelete() (stock, patched float64) {
	for _, s := range r.Startup {
		if s.Variant.Name == "default" && s.Stats != nil {
			stock, patched = phaseSeconds(s.Stats.BaselinePhases, "delete"), phaseSeconds(s.Stats.CandidatePhases, "delete")
		}
	}
	return stock, patched
}

// Markdown writes the tables.
func (r *Report) Markdown(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "Measured %s – %s UTC on `%s`: %d CPUs (%s), %s, kernel %s, cgroup mode **%s**. Load average before: %s; after: %s.\n\n",
		r.Started.UTC().Format("2006-01-02 15:04"), r.Finished.UTC().Format("15:04"), m.Hostname, m.NProc, m.CPU, m.MemTotal, m.Kernel, m.CgroupMode, m.LoadBefore, m.LoadAfter)
	for _, b := range r.Binaries {
		nested := "no --nested-cgroups"
		if b.NestedFlag {
			nested = "has --nested-cgroups"
		}
		series := ""
		if b.Series != "" {
			series = ", series: " + b.Series
		}
		fmt.Fprintf(w, "- `%s`: sha256 %.12s…, %s%s\n", b.Name, b.SHA256, nested, series)
	}
	if r.Identical {
		fmt.Fprintf(w, "- **stock and patched are the same file**: every ratio below measures noise only.\n")
	}
	for _, n := range m.Notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	fmt.Fprintf(w, "\n### Targets\n\n| target | goal | measured | status | why |\n|---|---|---|---|---|\n")
	for _, t := range r.Targets {
		fmt.Fprintf(w, "| %s | %s | %s | **%s** | %s |\n", t.Name, t.Goal, t.Measured, t.Status, cell(t.Why))
	}

	if len(r.Startup) > 0 {
		r.startupMarkdown(w)
	}
	r.collisionMarkdown(w)
	r.parallelMarkdown(w)
	r.criMarkdown(w)
	ConformanceMarkdown(w, "###", r.Conformance)
	if len(r.Errors) > 0 {
		fmt.Fprintf(w, "\n### Failed runs (cgbench exits 1)\n\n")
		for _, e := range r.Errors {
			fmt.Fprintf(w, "- %s\n", cell(e))
		}
	}
}

func (r *Report) startupMarkdown(w io.Writer) {
	fmt.Fprintf(w, "\n### create + start + delete of one busybox sandbox (ratio = candidate / baseline, per pair)\n\n")
	fmt.Fprintf(w, "| variant | candidate | baseline | pairs | median ratio | IQR | min – max | CPU ratio of the runsc commands (median, IQR) | candidate median s | baseline median s | phases (create/start/delete, median s) |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range r.Startup {
		v := s.Variant
		if s.Stats == nil {
			why := s.Skipped
			if why == "" {
				why = "failed: " + s.Error
			}
			fmt.Fprintf(w, "| %s | `%s` | `%s` | — | not measured | | | | | | %s |\n", v.Name, v.Candidate.Label(), v.Baseline.Label(), cell(why))
			continue
		}
		st := s.Stats
		cpu := "—"
		if c := st.CPURatio; c != nil {
			cpu = fmt.Sprintf("%.3f (%.3f – %.3f)", c.Median, c.Q1, c.Q3)
		}
		fmt.Fprintf(w, "| %s | `%s` | `%s` | %d | **%.3f** | %.3f – %.3f | %.3f – %.3f | %s | %.3f | %.3f | %s vs %s |\n",
			v.Name, v.Candidate.Label(), v.Baseline.Label(), st.Pairs, st.Ratio.Median, st.Ratio.Q1, st.Ratio.Q3, st.Ratio.Min, st.Ratio.Max,
			cpu, st.Candidate.Median, st.Baseline.Median, phaseList(st.CandidatePhases), phaseList(st.BaselinePhases))
	}
	for _, s := range r.Startup {
		if s.Variant.Note != "" {
			fmt.Fprintf(w, "\n%s: %s.", s.Variant.Name, s.Variant.Note)
		}
	}
	fmt.Fprintln(w)
}

func (r *Report) collisionMarkdown(w io.Writer) {
	if c := r.Collision; c != nil {
		fmt.Fprintf(w, "\n### Same-ID collision: first `delete -force` (two sandboxes, one ID, two --root folders, empty cgroupsPath)\n\n")
		fmt.Fprintf(w, "| runtime | runs | median s | IQR s | min – max s | exit codes | other sandbox still running | cgroups left after both deletes |\n|---|---|---|---|---|---|---|---|\n")
		row := func(name string, runs []CollisionRun, s *Summary, exits map[int]int) {
			if s == nil {
				fmt.Fprintf(w, "| %s | 0 | — | | | | | |\n", name)
				return
			}
			running, left := 0, 0
			for _, r := range runs {
				if r.SecondRunning {
					running++
				}
				left += len(r.Leftovers)
			}
			fmt.Fprintf(w, "| %s | %d | %.3f | %.3f – %.3f | %.3f – %.3f | %s | %d of %d | %d dirs in total |\n",
				name, len(runs), s.Median, s.Q1, s.Q3, s.Min, s.Max, exitList(exits), running, len(runs), left)
		}
		row("runsc-stock", c.Stock, c.StockSec, c.StockExit)
		row("runsc-patched", c.Patched, c.PatchSec, c.PatchExit)
		if c.Ratio != nil {
			fmt.Fprintf(w, "\nPer-pair ratio patched/stock of the first delete: median %.3f (min %.3f, max %.3f).\n", c.Ratio.Median, c.Ratio.Min, c.Ratio.Max)
		}
		if st, pt := r.plainDelete(); st > 0 {
			fmt.Fprintf(w, "\nFor reference, a plain `delete -force` without a collision in this run (default row, median): stock %.3fs, patched %.3fs.\n", st, pt)
		}
		for _, runs := range [][]CollisionRun{c.Stock, c.Patched} {
			if id, f := failedRun(runs); f != "" {
				fmt.Fprintf(w, "\nA failed first delete (`%s`): %s\n", id, cell(f))
			}
		}
		if c.Error != "" {
			fmt.Fprintf(w, "\n**Stopped early:** %s\n", cell(c.Error))
		}
	}

}

func (r *Report) parallelMarkdown(w io.Writer) {
	if p := r.Parallel; p != nil {
		fmt.Fprintf(w, "\n### N sandboxes created + started in parallel from one caller cgroup\n\n")
		if p.Note != "" {
			fmt.Fprintf(w, "**%s**\n\n", p.Note)
		}
		fmt.Fprintf(w, "| runtime | N | runs | failures | median total s | min – max s | per sandbox s | vs N=1 | median latency per sandbox s | median delete-all s | cgroup dirs leaked |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, pt := range p.Points {
			var dels, lats []float64
			for _, b := range pt.Runs {
				dels = append(dels, b.DeleteSeconds)
				if b.Latency != nil {
					lats = append(lats, b.Latency.Median)
				}
			}
			dm, _ := Median(dels)
			lm, _ := Median(lats)
			if pt.Seconds == nil {
				fmt.Fprintf(w, "| `%s` | %d | %d | %d | — | | | | %.3f | %.3f | %d |\n", pt.Runtime, pt.N, len(pt.Runs), pt.Failures, lm, dm, pt.Leaked)
				continue
			}
			fmt.Fprintf(w, "| `%s` | %d | %d | %d | %.3f | %.3f – %.3f | %.3f | %.2fx | %.3f | %.3f | %d |\n",
				pt.Runtime, pt.N, len(pt.Runs), pt.Failures, pt.Seconds.Median, pt.Seconds.Min, pt.Seconds.Max, pt.PerSandbox, pt.Relative, lm, dm, pt.Leaked)
		}
		if p.Error != "" {
			fmt.Fprintf(w, "\n**Stopped early:** %s\n", cell(p.Error))
		}
	}

}

// criPhaseOrder is the order of the CRI table's rows.
var criPhaseOrder = []string{PhaseRunp, PhaseCreate, PhaseStart, PhaseStopp, PhaseRmp}

func (r *Report) criMarkdown(w io.Writer) {
	c := r.CRI
	if c == nil {
		return
	}
	fmt.Fprintf(w, "\n### CRI pods through containerd and gVisor's shim (ratio = patched / stock, per pair and per phase)\n\n")
	fmt.Fprintf(w, "Each pod: the kubelet's pod cgroup (not timed), then `crictl runp`, `create`, `start` of the image's default command, `stopp`, `rmp`, each a CRI call timed on its own; then cgbench waits until the pod's processes and cgroups are gone (not timed) and removes the pod cgroup. Pairs alternate which handler goes first. The interval is the distribution-free 95 %% interval of the median ratio (for 20 pairs the 6th and 15th smallest ratio).")
	if c.LoadGenerator != "" {
		fmt.Fprintf(w, " Loaded cells: %s.", c.LoadGenerator)
	}
	fmt.Fprintln(w)
	if len(c.Versions) > 0 {
		var vs []string
		for k, v := range c.Versions {
			vs = append(vs, fmt.Sprintf("`%s`: %s", k, v))
		}
		sort.Strings(vs)
		fmt.Fprintf(w, "\nClients: %s.\n", strings.Join(vs, "; "))
	}
	fmt.Fprintf(w, "\n| driver | load | phase | pairs | median ratio | 95 %% interval | stock median s | patched median s | failed calls retried, in pods (stock / patched) | failed pods (stock / patched) | load |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i := range c.Cells {
		cl := &c.Cells[i]
		fails := fmt.Sprintf("%d / %d", len(cl.Failures)-cl.CandidateFailures(), cl.CandidateFailures())
		load := "—"
		if l := cl.LoadCPU; l != nil {
			load = fmt.Sprintf("load took %.0f %% of the CPU (%d spinners, %.0f CPU-s in %.0f s on %d CPUs)", 100*l.Share(), l.Spinners, l.Seconds, l.Wall, l.NProc)
		}
		if cl.Stats == nil {
			why := cl.Skipped
			if why == "" {
				why = "failed: " + cl.Error
			}
			fmt.Fprintf(w, "| %s | %s | — | %d | not measured: %s | | | | | %s | %s |\n", cl.Driver, cl.Load, len(cl.Pairs), cell(why), fails, load)
			continue
		}
		for _, name := range criPhaseOrder {
			pr := cl.PhaseRatio(name)
			if pr == nil {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s (%s) | %d | **%.3f** | %s | %.3f | %.3f | %s | %s | %s |\n", cl.Driver, cl.Load, name, CRIPhaseNames[name],
				pr.Ratio.N, pr.Ratio.Median, intervalCell(pr.Interval), pr.Baseline.Median, pr.Candidate.Median, retriedCell(cl.Pairs, name), fails, load)
		}
		st := cl.Stats
		fmt.Fprintf(w, "| %s | %s | whole lifecycle | %d | **%.3f** | %s | %.3f | %.3f | | %s | %s |\n", cl.Driver, cl.Load,
			st.Pairs, st.Ratio.Median, intervalCell(st.RatioInterval), st.Baseline.Median, st.Candidate.Median, fails, load)
	}
	var failed, retried []string
	for i := range c.Cells {
		cl := &c.Cells[i]
		retried = append(retried, firstRetried(cl)...)
		for _, f := range cl.Failures {
			h := cl.Baseline
			if f.Side == "candidate" {
				h = cl.Candidate
			}
			failed = append(failed, fmt.Sprintf("%s: attempt %d, %s: %s", cl.Name(), f.Attempt, h, cell(f.Error)))
		}
		if cl.Error != "" && cl.Stats != nil {
			failed = append(failed, fmt.Sprintf("%s: stopped early: %s", cl.Name(), cell(cl.Error)))
		}
	}
	list(w, "Calls that failed and were retried (timed with the call that worked), the first of each cell, phase and handler:", retried)
	list(w, "Failed pods (not timed; each attempt was replaced by the next):", failed)
	for _, n := range c.Notes {
		fmt.Fprintf(w, "\n- %s\n", cell(n))
	}
	if c.Error != "" {
		fmt.Fprintf(w, "\n**Not run:** %s\n", cell(c.Error))
	}
}

// firstRetried is, per phase and side, how the first retried call of the
// cell ended.
func firstRetried(c *CRICell) []string {
	var out []string
	for _, name := range criPhaseOrder {
		for _, side := range []struct {
			handler string
			get     func(Pair) Sample
		}{{c.Baseline, func(p Pair) Sample { return p.Baseline }}, {c.Candidate, func(p Pair) Sample { return p.Candidate }}} {
		pairs:
			for _, p := range c.Pairs {
				for _, ph := range side.get(p).Phases {
					if ph.Name == name && len(ph.Retried) > 0 {
						out = append(out, fmt.Sprintf("%s, %s (%s), %s, pair %d: %s", c.Name(), name, CRIPhaseNames[name], side.handler, p.Index, cell(ph.Retried[0])))
						break pairs
					}
				}
			}
		}
	}
	return out
}

// retriedCell says, per side, how many failed calls of phase were retried
// and in how many pods ("—" when none was).
func retriedCell(pairs []Pair, phase string) string {
	count := func(side func(Pair) Sample) (calls, pods int) {
		for _, p := range pairs {
			for _, ph := range side(p).Phases {
				if ph.Name == phase && ph.Attempts > 1 {
					calls += ph.Attempts - 1
					pods++
				}
			}
		}
		return calls, pods
	}
	bc, bp := count(func(p Pair) Sample { return p.Baseline })
	cc, cp := count(func(p Pair) Sample { return p.Candidate })
	if bc+cc == 0 {
		return "—"
	}
	return fmt.Sprintf("%d in %d / %d in %d", bc, bp, cc, cp)
}

func intervalCell(iv *Interval) string {
	if iv == nil {
		return "—"
	}
	return fmt.Sprintf("%.3f – %.3f", iv.Lo, iv.Hi)
}

func phaseList(ps []Phase) string {
	var s []string
	for _, p := range ps {
		s = append(s, fmt.Sprintf("%.3f", p.Seconds))
	}
	return strings.Join(s, "/")
}

// list writes a paragraph, then items as a markdown list; nothing without
// items.
func list(w io.Writer, para string, items []string) {
	if len(items) > 0 {
		fmt.Fprintf(w, "\n%s\n\n", para)
		for _, it := range items {
			fmt.Fprintf(w, "- %s\n", it)
		}
	}
}

// cell keeps a value on one table row.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "\\|")
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return s
}
