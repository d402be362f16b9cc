package clients

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/proc"
)

// Proc is one process the run saw, and where it was.
type Proc struct {
	PID  int    `json:"pid"`
	PPID int    `json:"ppid"`
	Role string `json:"role"`
	Comm string `json:"comm"`
	// ID is the container ID a runsc sandbox or gofer serves (the last
	// argument of its command line), and Root its --root (the shim's root
	// plus the containerd namespace); "" for other roles.
	ID   string `json:"id,omitempty"`
	Root string `json:"root,omitempty"`
	// Cgroups maps a hierarchy key (as in /proc/PID/cgroup: "memory",
	// "cpu", "name=systemd", "" for cgroup2) to the process's cgroup.
	Cgroups map[string]string `json:"cgroups"`
}

// Roles of the processes a run sees.
const (
	RoleContainerd = "containerd"
	RoleShim       = "shim"
	RoleSandbox    = "runsc-sandbox"
	RoleGofer      = "runsc-gofer"
	RoleRunsc      = "runsc" // a runsc command the shim runs (wait, events…)
	RoleRunc       = "runc"
	RoleContainer  = "container" // a container's own process (runc)
)

// procInfo is what /proc says about one process.
type procInfo struct {
	pid, ppid int
	start     uint64
	comm      string
	argv      []string
}

// readProcs lists every process of the machine. Processes that exit while
// it reads are skipped.
func readProcs() []procInfo {
	var out []procInfo
	for _, st := range proc.All() {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(st.PID) + "/cmdline")
		var argv []string
		for _, a := range bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0}) {
			if len(a) > 0 {
				argv = append(argv, string(a))
			}
		}
		out = append(out, procInfo{pid: st.PID, ppid: st.PPID, start: st.Start, comm: st.Comm, argv: argv})
	}
	return out
}

// ours picks the processes of one private containerd or engine: the
// daemon (pid), every process whose command line names the base folder
// (the shims carry the socket's path, runsc its root), and all their
// descendants (the containers' own processes under runc); all of them
// among self's descendants. What the shims daemonize is re-parented to
// self, a child subreaper (see subreaper), so a process elsewhere on the
// machine that names the folder (someone's tail of its log) is never
// picked, let alone killed.
func ours(all []procInfo, self, daemon int, base string) []procInfo {
	children := map[int][]procInfo{}
	for _, p := range all {
		children[p.ppid] = append(children[p.ppid], p)
	}
	seen := map[int]bool{}
	var out []procInfo
	var add func(p procInfo, pick bool)
	add = func(p procInfo, pick bool) {
		if seen[p.pid] {
			return
		}
		seen[p.pid] = true
		pick = pick || p.pid == daemon || mentions(p.argv, base)
		if pick {
			out = append(out, p)
		}
		for _, c := range children[p.pid] {
			add(c, pick)
		}
	}
	for _, c := range children[self] {
		add(c, false)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out
}

// subreaper makes this process a child subreaper, so that what the
// daemons' shims and conmon daemonize stays below it (ours). The runner
// is one already; this is for the other callers (make bench).
func subreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("becoming a child subreaper (to find what the daemons' shims daemonize): %w", err)
	}
	return nil
}

// kill SIGKILLs p, named by PID and start time: never a process that
// took the PID since it was read.
func (p procInfo) kill() {
	_ = proc.Process{PID: p.pid, Start: p.start}.Signal(unix.SIGKILL)
}

// proc is p as a run reports it, its role beside the daemon's PID (-1:
// none); its Cgroups are nil when it is gone.
func (p procInfo) proc(daemon int) Proc {
	cg, _ := cgroupfs.ProcCgroup(p.pid)
	pr := Proc{PID: p.pid, PPID: p.ppid, Role: role(p, daemon), Comm: p.comm, Cgroups: cg}
	if pr.Role == RoleSandbox || pr.Role == RoleGofer {
		pr.ID, pr.Root = runscIdentity(p.argv)
	}
	return pr
}

// runscIdentity is the container ID (the last argument) and --root of a
// runsc sandbox or gofer command line.
func runscIdentity(argv []string) (id, root string) {
	if len(argv) < 2 {
		return "", ""
	}
	for i, a := range argv {
		if v, ok := strings.CutPrefix(a, "--root="); ok {
			root = v
		} else if a == "--root" && i+1 < len(argv) {
			root = argv[i+1]
		}
	}
	return argv[len(argv)-1], root
}

func mentions(argv []string, base string) bool {
	if base == "" {
		return false
	}
	for _, a := range argv {
		if a == base || strings.HasPrefix(a, base+"/") || strings.Contains(a, "="+base+"/") || strings.Contains(a, "://"+base+"/") {
			return true
		}
	}
	return false
}

// role names what a process of the private containerd is.
func role(p procInfo, daemon int) string {
	name := p.comm
	if len(p.argv) > 0 {
		name = filepath.Base(p.argv[0])
	}
	switch {
	case p.pid == daemon:
		return RoleContainerd
	case strings.HasPrefix(name, "containerd-shim"):
		return RoleShim
	case name == "runsc-sandbox":
		return RoleSandbox
	case name == "runsc-gofer":
		return RoleGofer
	case strings.HasPrefix(name, "runsc"):
		return RoleRunsc
	case name == "runc":
		return RoleRunc
	default:
		return RoleContainer
	}
}
