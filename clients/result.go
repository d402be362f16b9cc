package clients

import (
	"encoding/json"
	"fmt"
	"path"
	"runtime"
	"sort"
	"strings"

	"github.com/runsc-cgroups/cgconform/harness/cgroupfs"
)

// Scenarios.
const (
	ScenarioCRI = "cri" // crictl: pod + container, as the kubelet does
	ScenarioCtr = "ctr" // ctr: two namespaces, one ID, empty cgroupsPath; a failed create
)

// Run is what one scenario with one handler observed.
type Run struct {
	Scenario string `json:"scenario"`
	Handler  string `json:"handler"`
	// Driver is "cgroupfs" or "systemd" (SystemdCgroup).
	Driver   string `json:"driver"`
	HostMode string `json:"hostMode"`
	// RefHierarchy is the hierarchy Placement is read in ("memory" on v1,
	// "" for cgroup2).
	RefHierarchy string `json:"refHierarchy"`
	// CgroupParent is the pod's cgroup_parent (CRI); ParentDir its
	// directory relative to the hierarchy root.
	CgroupParent string `json:"cgroupParent,omitempty"`
	ParentDir    string `json:"parentDir,omitempty"`
	// SpecCgroups maps a sandbox or container ID (as the report names it)
	// to the cgroupsPath containerd put in its OCI spec.
	SpecCgroups map[string]string `json:"specCgroups,omitempty"`
	// IDs names what the run created: "sandbox", "container", "a", "b",
	// "failed" -> ID.
	IDs   map[string]string `json:"ids,omitempty"`
	Steps []Step            `json:"steps"`
	// Running are the processes seen while everything ran.
	Running []Proc `json:"running"`
	// Left is what stayed after the clients tore everything down (before
	// the run's own cleanup removed it).
	Left Leftovers `json:"left"`
	// Cleaned is what the run itself had to remove afterwards.
	Cleaned []string `json:"cleaned,omitempty"`
	// Problems are reasons the run could not do what it meant to.
	Problems []string `json:"problems,omitempty"`
}

// Leftovers is what a teardown did not remove.
type Leftovers struct {
	// Cgroups are directories (hierarchy:path) left by the runtime.
	Cgroups []string `json:"cgroups,omitempty"`
	// Processes still alive (shims, sandboxes, containers).
	Processes []Proc `json:"processes,omitempty"`
	// Mounts left below the private base folder.
	Mounts []string `json:"mounts,omitempty"`
}

// Empty reports whether nothing was left.
func (l Leftovers) Empty() bool {
	return len(l.Cgroups) == 0 && len(l.Processes) == 0 && len(l.Mounts) == 0
}

// Step finds a step by name (the last one with that name).
func (r *Run) Step(name string) (Step, bool) {
	for i := len(r.Steps) - 1; i >= 0; i-- {
		if r.Steps[i].Name == name {
			return r.Steps[i], true
		}
	}
	return Step{}, false
}

func (r *Run) problem(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// RefHierarchy picks the hierarchy placements are reported in: the unified
// one on a pure v2 host, else memory (present on every v1 host), else the
// first managed one.
func RefHierarchy(h *cgroupfs.Host) string {
	m := h.Managed()
	for _, x := range m {
		if x.V2 {
			return ""
		}
	}
	for _, x := range m {
		if x.Key == "memory" {
			return x.Key
		}
	}
	if len(m) > 0 {
		return m[0].Key
	}
	return ""
}

// Relation says where cgroup p is relative to the directory dir.
func Relation(p, dir string) string {
	p, dir = path.Clean("/"+p), path.Clean("/"+dir)
	switch {
	case p == dir:
		return "in"
	case cgroupfs.IsUnder(p, dir):
		return "beneath"
	default:
		return "outside"
	}
}

// Placement is one process's cgroup in the reference hierarchy, and where
// that is relative to the run's parent.
type Placement struct {
	PID      int    `json:"pid"`
	Role     string `json:"role"`
	Cgroup   string `json:"cgroup"`
	Relation string `json:"relation,omitempty"`
}

// Placements reads r.Running in the reference hierarchy.
func (r *Run) Placements() []Placement {
	var out []Placement
	for _, p := range r.Running {
		pl := Placement{PID: p.PID, Role: p.Role, Cgroup: p.Cgroups[r.RefHierarchy]}
		if r.ParentDir != "" {
			pl.Relation = Relation(pl.Cgroup, r.ParentDir)
		}
		out = append(out, pl)
	}
	return out
}

// SliceDir expands a systemd slice name into its cgroup directory:
// "a-b-c.slice" -> "/a.slice/a-b.slice/a-b-c.slice"; "-.slice" is the root.
func SliceDir(slice string) (string, error) {
	name, ok := strings.CutSuffix(slice, ".slice")
	if !ok || strings.Contains(slice, "/") {
		return "", fmt.Errorf("%q is not a systemd slice name", slice)
	}
	if name == "-" {
		return "/", nil
	}
	if name == "" || strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") || strings.Contains(name, "--") {
		return "", fmt.Errorf("%q is not a valid slice name", slice)
	}
	parts := strings.Split(name, "-")
	dir := ""
	for i := range parts {
		dir += "/" + strings.Join(parts[:i+1], "-") + ".slice"
	}
	return dir, nil
}

// KubeletParent is the cgroup_parent the kubelet gives a BestEffort pod:
// cgroupfs "<root>/kubepods/besteffort/pod<uid>", systemd
// "kubepods-besteffort-pod<uid with _ for ->.slice". root is the kubelet's
// --cgroup-root ("" or "/" for the default).
func KubeletParent(systemd bool, root, uid string) string {
	if systemd {
		return "kubepods-besteffort-pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"
	}
	return path.Join("/", root, "kubepods", "besteffort", "pod"+uid)
}

// inspectInfo is the part of `crictl inspect[p] -o json` read here.
type inspectInfo struct {
	Status struct {
		ID    string `json:"id"`
		State string `json:"state"`
	} `json:"status"`
	Info struct {
		Pid         int `json:"pid"`
		RuntimeSpec struct {
			Linux struct {
				CgroupsPath string `json:"cgroupsPath"`
			} `json:"linux"`
			Annotations map[string]string `json:"annotations"`
		} `json:"runtimeSpec"`
	} `json:"info"`
}

// ParseInspect reads the PID, state and spec cgroupsPath from the JSON
// `crictl inspect -o json` or `crictl inspectp -o json` prints.
func ParseInspect(out string) (pid int, state, cgroupsPath string, err error) {
	var in inspectInfo
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		return 0, "", "", fmt.Errorf("parsing crictl inspect output: %w", err)
	}
	if in.Status.ID == "" {
		return 0, "", "", fmt.Errorf("crictl inspect output has no status.id: %.200s", out)
	}
	return in.Info.Pid, in.Status.State, in.Info.RuntimeSpec.Linux.CgroupsPath, nil
}

// ParseID reads the container ID a client printed (64 hex digits; the
// last such field): crictl runp/create may warn before it, and Debian's
// Docker 20.10 CLI may log "error waiting for container: context
// canceled" after the ID of a detached run and still exit 0
// (docker/cli#5043).
func ParseID(out string) (string, error) {
	f := strings.Fields(out)
	for i := len(f) - 1; i >= 0; i-- {
		if len(f[i]) == 64 && strings.Trim(f[i], "0123456789abcdef") == "" {
			return f[i], nil
		}
	}
	return "", fmt.Errorf("expected a 64-digit container ID, got %q", out)
}

// TaskPID reads the PID of task id from `ctr task ls` output (columns
// TASK PID STATUS); 0 when the task is not listed.
func TaskPID(out, id string) (pid int, status string) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == id {
			fmt.Sscanf(f[1], "%d", &pid)
			return pid, f[2]
		}
	}
	return 0, ""
}

func runtimeArch() string { return runtime.GOARCH }

// Table renders runs as a markdown table: one row per process role seen,
// then the leftovers.
func Table(runs []*Run) string {
	var b strings.Builder
	b.WriteString("| scenario | handler | driver | cgroup_parent / path | process placement (" + "ref. hierarchy) | teardown | left after teardown |\n|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		var pl []string
		seen := map[string]bool{}
		for _, p := range r.Placements() {
			s := fmt.Sprintf("%s %s", p.Role, p.Cgroup)
			if p.Relation != "" {
				s += " (" + p.Relation + ")"
			}
			if !seen[s] {
				seen[s] = true
				pl = append(pl, s)
			}
		}
		sort.Strings(pl)
		var td []string
		for _, s := range r.Steps {
			if strings.HasPrefix(s.Name, "crictl stopp") || strings.HasPrefix(s.Name, "crictl rmp") || strings.Contains(s.Name, "delete") || strings.Contains(s.Name, "fail") {
				e := fmt.Sprintf("%s: %d %.1fs", s.Name, s.Exit, s.Seconds)
				if s.Err != "" {
					e += " (" + s.Err + ")"
				}
				td = append(td, e)
			}
		}
		left := "nothing"
		if !r.Left.Empty() {
			var l []string
			l = append(l, r.Left.Cgroups...)
			for _, p := range r.Left.Processes {
				l = append(l, fmt.Sprintf("pid %d %s", p.PID, p.Role))
			}
			l = append(l, r.Left.Mounts...)
			left = strings.Join(l, "<br>")
		}
		if len(r.Problems) > 0 {
			left += "<br>PROBLEMS: " + strings.Join(r.Problems, "; ")
		}
		parent := r.CgroupParent
		if parent == "" {
			parent = "(empty cgroupsPath)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Scenario, r.Handler, r.Driver, cell(parent),
			cell(strings.Join(pl, "<br>")), cell(strings.Join(td, "<br>")), cell(left))
	}
	return b.String()
}

// Markdown renders a report: versions, the placement and leftovers table,
// the reproductions, and what the final stop found.
func Markdown(rep *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# cgclients: host %s, driver %s, systemd PID 1 %t, %.0f s\n\n", rep.HostMode, rep.Driver, rep.Systemd, rep.Seconds)
	if rep.TestRoot != "" {
		fmt.Fprintf(&b, "Test cgroup: `%s`.\n\n", rep.TestRoot)
	}
	keys := make([]string, 0, len(rep.Versions))
	for k := range rep.Versions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "- %s: `%s`\n", k, rep.Versions[k])
	}
	if rep.Daemon != nil {
		fmt.Fprintf(&b, "- containerd pid %d in `%s`\n", rep.Daemon.PID, rep.Daemon.Cgroups[refKey(rep)])
	}
	b.WriteString("\n")
	b.WriteString(Table(rep.Runs))
	for _, r := range rep.Runs {
		if len(r.SpecCgroups) > 0 {
			fmt.Fprintf(&b, "\n%s/%s spec cgroupsPath: sandbox `%s`, container `%s`", r.Scenario, r.Handler, r.SpecCgroups["sandbox"], r.SpecCgroups["container"])
		}
	}
	if len(rep.Repros) > 0 {
		b.WriteString("\n\n## Reproductions\n")
		for _, rp := range rep.Repros {
			fmt.Fprintf(&b, "\n### %s\n\n", rp.Name)
			for _, s := range rp.Steps {
				fmt.Fprintf(&b, "- `%s`: exit %d in %.1f s", s.Name, s.Exit, s.Seconds)
				if s.Err != "" {
					fmt.Fprintf(&b, " (%s)", s.Err)
				}
				if s.Output != "" {
					o := s.Output
					if len(o) > 400 {
						o = o[:400] + "…"
					}
					fmt.Fprintf(&b, "\n  ```\n  %s\n  ```", strings.ReplaceAll(o, "\n", "\n  "))
				}
				b.WriteString("\n")
			}
			if rp.Note != "" {
				fmt.Fprintf(&b, "\n%s\n", rp.Note)
			}
		}
	}
	if len(rep.Timings) > 0 {
		b.WriteString("\n\n" + TimingTable(rep.Timings, []string{"crictl runp", "crictl stopp", "crictl rmp"}))
	}
	fmt.Fprintf(&b, "\n\nStop: containerd ended by %s; %d processes killed after it, %d mounts, %d shim sockets left.\n", rep.Stop.Exit, len(rep.Stop.Killed), len(rep.Stop.Unmounted), len(rep.Stop.ShimSockets))
	for _, e := range append(append([]string(nil), rep.Stop.Errors...), rep.Problems...) {
		fmt.Fprintf(&b, "- problem: %s\n", e)
	}
	for _, l := range rep.TreeLeft {
		fmt.Fprintf(&b, "- left in the test tree: %s\n", l)
	}
	return b.String()
}

// TimingTable renders the times of the named client calls per handler:
// count, minimum, median, maximum and every value in run order.
func TimingTable(t map[string]map[string][]float64, steps []string) string {
	var b strings.Builder
	b.WriteString("| handler | call | n | min | median | max | seconds, in run order |\n|---|---|---|---|---|---|---|\n")
	hs := make([]string, 0, len(t))
	for h := range t {
		hs = append(hs, h)
	}
	sort.Strings(hs)
	for _, h := range hs {
		for _, st := range steps {
			v := t[h][st]
			if len(v) == 0 {
				continue
			}
			s := append([]float64(nil), v...)
			sort.Float64s(s)
			med := s[len(s)/2]
			if len(s)%2 == 0 {
				med = (s[len(s)/2-1] + s[len(s)/2]) / 2
			}
			var all []string
			for _, x := range v {
				all = append(all, fmt.Sprintf("%.1f", x))
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %.1f | %.1f | %.1f | %s |\n", h, st, len(v), s[0], med, s[len(s)-1], strings.Join(all, " "))
		}
	}
	return b.String()
}

func refKey(rep *Report) string {
	if len(rep.Runs) > 0 {
		return rep.Runs[0].RefHierarchy
	}
	return "memory"
}

// cell makes s fit in one markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("\n", " ", "|", "\\|").Replace(s)
}
