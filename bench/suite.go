package bench

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/base/report"
)

// SuiteSchema names the format of make bench's merged report.
const SuiteSchema = "cgbench-suite/v1"

// ReadSuite parses make bench's merged report.json (SuiteSchema).
func ReadSuite(data []byte) (*Suite, error) {
	return report.Decode(bytes.NewReader(data), "cgbench suite report", SuiteSchema, func(s *Suite) string { return s.Schema })
}

// Suite is out/bench/report.json as make bench writes it: one section per
// host mode (this host, then each VM), each holding the report cgbench
// wrote there, and the conformance wall times of every mode.
type Suite struct {
	Schema   string    `json:"schema"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Command reproduces the whole suite.
	Command     string            `json:"command"`
	Sections    []Section         `json:"sections"`
	Conformance []ConformanceWall `json:"conformance"`
}

// Section is one host mode's run of cgbench.
type Section struct {
	// Name is also the docs/BENCHMARKS.md marker: "host", "vm-v2".
	Name  string `json:"name"`
	Title string `json:"title"`
	// Where says how it ran: this machine, or the VM's accelerator and size.
	Where       string  `json:"where"`
	Dir         string  `json:"dir"`
	Seconds     float64 `json:"seconds"`
	BootSeconds float64 `json:"bootSeconds,omitempty"`
	// HostLoad is the build machine's load while the section ran.
	HostLoad *HostLoad `json:"hostLoad,omitempty"`
	// Exit is cgbench's exit status (-1: it never told).
	Exit   int     `json:"exit"`
	Report *Report `json:"report,omitempty"`
	// Problem says why the report is missing or incomplete.
	Problem string `json:"problem,omitempty"`
}

// LoadSample is one look at the build machine.
type LoadSample struct {
	At    time.Time `json:"at"`
	Load1 float64   `json:"load1"`
	// OtherQEMU counts QEMU processes that are not this run's.
	OtherQEMU int `json:"otherQemu"`
}

// HostLoad sums up the samples taken while a section ran.
type HostLoad struct {
	Samples int     `json:"samples"`
	Every   float64 `json:"everySeconds"`
	NProc   int     `json:"nproc"`
	// Load1 is the 1-minute load average, the section's own sandboxes and
	// VM included: it says how busy the machine was, not who made it so.
	Load1 Summary `json:"load1"`
	// WithOtherQEMU counts the samples that saw another QEMU VM;
	// MaxOtherQEMU is the most seen at once.
	WithOtherQEMU int `json:"samplesWithOtherQemu"`
	MaxOtherQEMU  int `json:"maxOtherQemu"`
	// Contended: another QEMU VM ran during the section. Other load (a
	// build) is not told apart from the section's own; Load1 shows it.
	Contended bool `json:"contended"`
	// Taken are the samples themselves, to tell which scenarios ran
	// while another VM did.
	Taken []LoadSample `json:"taken,omitempty"`
}

// SummarizeLoad sums up a section's samples.
func SummarizeLoad(samples []LoadSample, every time.Duration, nproc int) (*HostLoad, error) {
	h := &HostLoad{Samples: len(samples), Every: every.Seconds(), NProc: nproc, Taken: samples}
	var loads []float64
	for _, s := range samples {
		loads = append(loads, s.Load1)
		if s.OtherQEMU > 0 {
			h.WithOtherQEMU++
		}
		h.MaxOtherQEMU = max(h.MaxOtherQEMU, s.OtherQEMU)
	}
	var err error
	if h.Load1, err = Summarize(loads); err != nil {
		return nil, err
	}
	h.Contended = h.WithOtherQEMU > 0
	return h, nil
}

// Describe says in one sentence how busy the machine was.
func (h *HostLoad) Describe() string {
	qemu := "no other QEMU VM seen"
	if h.Contended {
		qemu = fmt.Sprintf("**contended**: another QEMU VM ran in %d of %d samples (at most %d at once)", h.WithOtherQEMU, h.Samples, h.MaxOtherQEMU)
	}
	return fmt.Sprintf("Build machine while it ran (%d samples, every %.0f s): 1-minute load average median %.1f, max %.1f on %d CPUs, this section's own work included; %s.",
		h.Samples, h.Every, h.Load1.Median, h.Load1.Max, h.NProc, qemu)
}

// NamedSpan is when one scenario of a report ran.
type NamedSpan struct {
	Name string
	Span
}

// Spans lists when each scenario of the report ran, in order.
func (r *Report) Spans() []NamedSpan {
	var out []NamedSpan
	add := func(name string, s Span) {
		if !s.Started.IsZero() && s.Finished.After(s.Started) {
			out = append(out, NamedSpan{name, s})
		}
	}
	for _, s := range r.Startup {
		add("create+start+delete "+s.Variant.Name, s.Span)
	}
	if r.Collision != nil {
		add("same-ID collision", r.Collision.Span)
	}
	if r.Parallel != nil {
		add("parallel", r.Parallel.Span)
	}
	if r.CRI != nil {
		for _, c := range r.CRI.Cells {
			add("CRI "+c.Name(), c.Span)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// During says, for each span, in how many of the samples taken while it
// ran another QEMU VM was seen.
func (h *HostLoad) During(spans []NamedSpan) []string {
	var out []string
	for _, sp := range spans {
		n, other := 0, 0
		for _, s := range h.Taken {
			if s.At.Before(sp.Started) || s.At.After(sp.Finished) {
				continue
			}
			n++
			if s.OtherQEMU > 0 {
				other++
			}
		}
		when := fmt.Sprintf("%s–%s", sp.Started.UTC().Format("15:04:05"), sp.Finished.UTC().Format("15:04:05"))
		if n == 0 {
			out = append(out, fmt.Sprintf("%s, %s: no sample taken", sp.Name, when))
			continue
		}
		out = append(out, fmt.Sprintf("%s, %s: in %d of %d samples", sp.Name, when, other, n))
	}
	return out
}

// Evaluate judges every section again from its measurements: targets and
// contention.
func (s *Suite) Evaluate() {
	for i := range s.Sections {
		if r := s.Sections[i].Report; r != nil {
			r.Evaluate()
		}
		if h := s.Sections[i].HostLoad; h != nil {
			h.Contended = h.WithOtherQEMU > 0
		}
	}
}

// Failures lists what makes make bench exit 1: sections without a report
// and every failed run inside a report.
func (s *Suite) Failures() []string {
	var out []string
	for _, sec := range s.Sections {
		if sec.Problem != "" {
			out = append(out, sec.Name+": "+report.FirstLine(sec.Problem))
		}
		if sec.Report == nil {
			if sec.Problem == "" {
				out = append(out, sec.Name+": no report")
			}
			continue
		}
		for _, e := range sec.Report.Errors {
			out = append(out, sec.Name+": "+e)
		}
		if sec.Exit != 0 && len(sec.Report.Errors) == 0 && sec.Problem == "" {
			out = append(out, fmt.Sprintf("%s: cgbench exited %d", sec.Name, sec.Exit))
		}
	}
	return out
}

// Markdown writes every section (with level-2 headings) and the
// conformance wall times.
func (s *Suite) Markdown(w io.Writer) {
	fmt.Fprintf(w, "Ran %s – %s UTC, %s in all.\n", s.Started.UTC().Format("2006-01-02 15:04"), s.Finished.UTC().Format("15:04"),
		s.Finished.Sub(s.Started).Round(time.Minute))
	for i := range s.Sections {
		fmt.Fprintf(w, "\n## %s\n\n", s.Sections[i].Title)
		s.Sections[i].Markdown(w)
	}
	ConformanceMarkdown(w, "##", s.Conformance)
}

// Markdown writes one section: where and how long it ran, then its report.
func (sec *Section) Markdown(w io.Writer) {
	took := time.Duration(sec.Seconds * float64(time.Second)).Round(time.Second).String()
	if sec.BootSeconds > 0 {
		took += fmt.Sprintf(" (boot %.0f s)", sec.BootSeconds)
	}
	fmt.Fprintf(w, "%s; took %s.", sec.Where, took)
	if sec.HostLoad != nil {
		fmt.Fprintf(w, " %s", sec.HostLoad.Describe())
	}
	fmt.Fprintln(w)
	if sec.HostLoad != nil && sec.HostLoad.Contended && sec.Report != nil {
		list(w, "Another QEMU VM, scenario by scenario (times of the machine that measured):", sec.HostLoad.During(sec.Report.Spans()))
	}
	if sec.Report != nil && sec.Report.Command != "" {
		fmt.Fprintf(w, "\ncgbench ran as `%s`.\n", sec.Report.Command)
	}
	if sec.Problem != "" {
		fmt.Fprintf(w, "\n**Incomplete:** %s\n", cell(sec.Problem))
	}
	if sec.Report != nil {
		fmt.Fprintln(w)
		sec.Report.Markdown(w)
	}
}

// ConformanceMarkdown writes the wall-time table of the conformance runs;
// with a heading (its level), only if there were any.
func ConformanceMarkdown(w io.Writer, heading string, walls []ConformanceWall) {
	if heading != "" {
		if len(walls) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s Conformance run, wall time per host mode\n\n", heading)
	}
	fmt.Fprintf(w, "| mode | wall s | results | status | source |\n|---|---|---|---|---|\n")
	for _, c := range walls {
		secs, results := "not measured", ""
		if c.Seconds > 0 {
			secs = fmt.Sprintf("%.1f", c.Seconds)
		}
		if c.Results > 0 {
			results = fmt.Sprint(c.Results)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | `%s` |\n", c.Mode, secs, results, cell(strings.TrimSpace(c.Status+" "+c.Note)), c.Source)
	}
}
