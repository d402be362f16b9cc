package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/runsc-cgroups/cgconform/base/mode"
)

// MatrixSchema identifies the matrix report (out/matrix/report.json).
const MatrixSchema = "cgconform/matrix/v1"

// Missing is the matrix's outcome for a cell no host filled.
const Missing Outcome = "missing"

// VM statuses of a matrix host.
const (
	Reported = "reported"
	TimedOut = "timeout"
	Crashed  = "crashed"
	NoReport = "no-report"
	// Stalled: the guest stopped making progress (no console line that
	// shows it working within the stall bound) and was ended at once.
	Stalled = "stalled"
)

// Matrix is the whole matrix run: one harness report per host, merged.
type Matrix struct {
	Schema string `json:"schema"`
	Kernel string `json:"kernel,omitempty"`
	Accel  string `json:"accel,omitempty"`
	// WallSeconds is the whole run's time (images included), on a machine
	// with CPUs processors: with the hosts' CPUSeconds, how near the run
	// came to what the machine can do.
	WallSeconds float64   `json:"wallSeconds,omitempty"`
	CPUs        int       `json:"cpus,omitempty"`
	Hosts       []HostRun `json:"hosts"`
}

// HostRun is what one VM of the matrix did.
type HostRun struct {
	Host  mode.Host `json:"host"`
	About string    `json:"about,omitempty"`
	// Status is Reported, TimedOut, Crashed or NoReport.
	Status      string `json:"status"`
	Problem     string `json:"problem,omitempty"`
	HarnessExit *int   `json:"harnessExit,omitempty"`
	// ImageSeconds is the time to have the images this mode boots (the
	// kernel, its base image, the Debian disk), built or found in the
	// cache; images shared by several modes are made once and each of
	// them shows that time. PayloadSeconds is its own payload disk.
	ImageSeconds   float64 `json:"imageSeconds,omitempty"`
	PayloadSeconds float64 `json:"payloadSeconds,omitempty"`
	BootSeconds    float64 `json:"bootSeconds"`
	WallSeconds    float64 `json:"wallSeconds"`
	// CPUSeconds is the CPU time qemu used (user and system, all its
	// threads): under TCG, the work this mode costs the host.
	CPUSeconds  float64  `json:"cpuSeconds,omitempty"`
	RunningCase string   `json:"runningCase,omitempty"`
	ConsoleTail []string `json:"consoleTail,omitempty"`
	// Tool is the schema of the report the results come from, or where
	// they were recovered from.
	Tool string `json:"tool,omitempty"`
	// CgroupMode is the layout the harness detected in the VM.
	CgroupMode mode.Cgroup     `json:"cgroupMode,omitempty"`
	LastDone   string          `json:"lastFinished,omitempty"`
	Summary    map[Outcome]int `json:"summary,omitempty"`
	// Partial is set when the results come from the console of a VM that
	// never sent its report (killed at its time limit, or crashed).
	Partial bool `json:"partial,omitempty"`
	// Results are the harness's own, Brief, with MatrixHost set.
	Results []Result `json:"results"`
	// Attempt is 2 for the rerun of a mode whose first guest stalled;
	// Earlier then holds that first attempt as it ended (status Stalled,
	// its console's last lines, the results it printed).
	Attempt int       `json:"attempt,omitempty"`
	Earlier []HostRun `json:"earlierAttempts,omitempty"`
	// Builds maps each runtime this host ran from a runsc build of ours
	// (bin/runsc-*, cmd/build-runsc) to what that binary was built from,
	// as its stamp says and the staged copy's sha256 confirms. A runtime
	// without one (runc, or a report written before builds were recorded)
	// has no proven build.
	Builds map[string]Build `json:"builds,omitempty"`
}

// Build is what one runsc binary was built from: the pinned gVisor module
// and the patch files applied to it, in order. cmd/build-runsc writes it in
// the stamp next to the binary; the matrix report keeps it per runtime.
type Build struct {
	// GVisor is the gvisor.dev/gvisor module version (go.mod's).
	GVisor string `json:"gvisor"`
	// Patches are the files applied, in order; none for stock runsc.
	Patches []PatchFile `json:"patches,omitempty"`
	// Digest is one digest over the patches (runscbuild.BuildOf): the
	// +cgpatches suffix of the binary's runsc --version; "" for stock.
	Digest string `json:"digest,omitempty"`
	// Binary is the sha256 of the binary built.
	Binary string `json:"binarySha256,omitempty"`
}

// PatchFile is one applied patch file: its name under patches/ and the
// sha256 of its content.
type PatchFile struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// SameSource tells whether b and o were built from the same gVisor version
// and the same patch files (names and contents) in the same order, whatever
// the binaries' bytes.
func (b Build) SameSource(o Build) bool {
	return b.GVisor == o.GVisor && slices.Equal(b.Patches, o.Patches)
}

// String names the build briefly: the gVisor version and, when patched,
// the digest of its patches, as runsc --version prints them.
func (b Build) String() string {
	if b.Digest == "" {
		return b.GVisor
	}
	return b.GVisor + "+cgpatches." + b.Digest
}

// FromReport fills the host's results from the harness report the VM sent.
func (h *HostRun) FromReport(r *Report) {
	h.Status, h.Tool, h.CgroupMode = Reported, r.Schema, r.Host.CgroupMode
	h.Results = nil
	for _, x := range r.Results {
		x = x.Brief()
		x.MatrixHost = h.Host
		h.Results = append(h.Results, x)
	}
	h.Summary = Count(h.Results)
}

// ReadMatrix parses a matrix report.json.
func ReadMatrix(rd io.Reader) (*Matrix, error) {
	return Decode(rd, "matrix report", MatrixSchema, func(m *Matrix) string { return m.Schema })
}

// ReadMatrixFile is ReadMatrix of the file at path.
func ReadMatrixFile(path string) (*Matrix, error) { return ReadFileWith(path, ReadMatrix) }

// Unexpected lists what should fail CI: a host without results, a harness
// that exited non-zero, or a failed result, in the last attempt of a host
// or an earlier one (a stall that a rerun got past is still reported).
func (m *Matrix) Unexpected() []string {
	var out []string
	for _, h := range m.Hosts {
		out = append(out, h.unexpected()...)
	}
	return out
}

// Retried lists what went wrong in the attempts a stall made the matrix
// rerun: the rerun's results are the mode's verdict (Unexpected), and these
// are printed beside it, never dropped.
func (m *Matrix) Retried() []string {
	var out []string
	for _, h := range m.Hosts {
		for _, e := range h.Earlier {
			for _, b := range e.unexpected() {
				out = append(out, fmt.Sprintf("attempt %d of %d: %s", max(e.Attempt, 1), len(h.Earlier)+1, b))
			}
		}
	}
	return out
}

// unexpected is Unexpected of one attempt of a host.
func (h *HostRun) unexpected() []string {
	var bad []string
	if h.Status != Reported {
		bad = append(bad, fmt.Sprintf("%s: %s", h.Host, h.Status))
	}
	for _, r := range h.Results {
		if r.Outcome == Fail {
			// The first failure too: CI keeps only its log's tail.
			bad = append(bad, fmt.Sprintf("%s: %s/%s failed: %s", h.Host, r.Name(), r.Runtime, OneLine(firstMessage(r), 300, "...")))
		}
	}
	if h.HarnessExit != nil && *h.HarnessExit != 0 && len(bad) == 0 {
		bad = append(bad, fmt.Sprintf("%s: harness exited %d", h.Host, *h.HarnessExit))
	}
	return bad
}

// MergeMatrices joins matrices of separate runs (the CI jobs: one host
// mode, one runtime, one shard of the cases each) in the order given. Runs
// of the same host become one: their results together, a later result of
// the same case, context and runtime replacing an earlier one (a job run
// again); the first status other than Reported with its problem and
// console; the seconds added up (each job's own VM).
func MergeMatrices(ms ...*Matrix) *Matrix {
	out := &Matrix{Schema: MatrixSchema}
	idx := map[mode.Host]int{}
	for _, m := range ms {
		out.Kernel, out.Accel = cmp.Or(out.Kernel, m.Kernel), cmp.Or(out.Accel, m.Accel)
		for _, h := range m.Hosts {
			if i, ok := idx[h.Host]; ok {
				out.Hosts[i].join(h)
				continue
			}
			idx[h.Host] = len(out.Hosts)
			out.Hosts = append(out.Hosts, h)
		}
	}
	return out
}

// join adds the run o of the same host to h (MergeMatrices).
func (h *HostRun) join(o HostRun) {
	if h.Status == Reported && o.Status != Reported {
		h.Status, h.Problem, h.RunningCase, h.ConsoleTail = o.Status, o.Problem, o.RunningCase, o.ConsoleTail
	} else if o.Problem != "" && o.Problem != h.Problem {
		h.Problem = strings.TrimPrefix(h.Problem+"; "+o.Problem, "; ")
	}
	if o.HarnessExit != nil && (h.HarnessExit == nil || *h.HarnessExit == 0) {
		h.HarnessExit = o.HarnessExit
	}
	h.ImageSeconds += o.ImageSeconds
	h.PayloadSeconds += o.PayloadSeconds
	h.BootSeconds += o.BootSeconds
	h.WallSeconds += o.WallSeconds
	h.CPUSeconds += o.CPUSeconds
	h.About, h.Tool, h.CgroupMode = cmp.Or(h.About, o.About), cmp.Or(h.Tool, o.Tool), cmp.Or(h.CgroupMode, o.CgroupMode)
	h.LastDone = cmp.Or(o.LastDone, h.LastDone)
	h.Partial = h.Partial || o.Partial
	h.Attempt = max(h.Attempt, o.Attempt)
	h.Earlier = append(h.Earlier, o.Earlier...)
	if h.Builds == nil && len(o.Builds) > 0 {
		h.Builds = map[string]Build{}
	}
	maps.Copy(h.Builds, o.Builds)
	g := &Grid[Result]{}
	for _, r := range slices.Concat(h.Results, o.Results) {
		g.Add(Row{r.Case, r.Context, r.Runtime}, "", r)
	}
	results := h.Results[:0:0] // nil or empty as it was (JSON null or [])
	for _, row := range g.Rows {
		r, _ := g.At(row, "")
		results = append(results, r)
	}
	h.Results = results
	if h.Summary != nil || o.Summary != nil {
		h.Summary = Count(h.Results)
	}
}

// FirstLine is the first line of s with its leading and trailing white
// space dropped: a problem or error's headline for a table note.
func FirstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// OrNone is names joined by spaces, or "none" when there are none.
func OrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, " ")
}
