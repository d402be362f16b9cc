package clients

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runsc-cgroups/cgconform/harness/cgroupfs"
	"github.com/runsc-cgroups/cgconform/harness/proc"
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
	proc.Stat
	argv []string
}

// readProcs lists every process of the machine with its command line.
// Processes that exit while it reads are skipped.
func readProcs() []procInfo {
	var out []procInfo
	for _, s := range proc.All() {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(s.PID), "cmdline"))
		var argv []string
		for _, a := range bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0}) {
			if len(a) > 0 {
				argv = append(argv, string(a))
			}
		}
		out = append(out, procInfo{Stat: s, argv: argv})
	}
	return out
}

// family is what one daemon and the clients' commands run with it left
// on the machine: proc.Family of this process, since the family's first
// process started (since, in clock ticks), daemon its still running
// root. Descent alone covers a daemon's children while it runs (a
// containerd's runc and runsc commands, the containers under a runc
// shim, dockerd's containerd); a containerd shim or conmon double-forks
// to daemonize and escapes that chain, but clients.Start made this
// process a child subreaper, so such orphans are re-parented here and
// found as adopted children. A process on the machine that merely names
// the base folder, not started below us, is never picked (issue 48).
func family(all []procInfo, self, pgrp int, since uint64, daemon int) []procInfo {
	stats := make([]proc.Stat, len(all))
	byPID := map[int]procInfo{}
	for i, p := range all {
		stats[i], byPID[p.PID] = p.Stat, p
	}
	var out []procInfo
	for _, s := range proc.Family(stats, self, pgrp, since, daemon) {
		out = append(out, byPID[s.PID])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// familyNow is family on the machine as it is, for this process.
func familyNow(since uint64, daemon int) []procInfo {
	return family(readProcs(), os.Getpid(), unix.Getpgrp(), since, daemon)
}

// killFamily SIGKILLs by PID (and start time) what familyNow finds, up to
// five rounds (a killed shim's children are adopted next), reaps the
// orphans among them, and returns what it killed.
func killFamily(since uint64, daemon int) []Proc {
	var killed []Proc
	seen := map[proc.Process]bool{}
	for round := 0; ; round++ {
		var left []procInfo
		for _, p := range familyNow(since, daemon) {
			if p.Gone() {
				proc.Of(p.Stat).Reap()
			} else {
				left = append(left, p)
			}
		}
		if len(left) == 0 || round == 5 {
			break
		}
		for _, p := range left {
			if id := proc.Of(p.Stat); !seen[id] {
				seen[id] = true
				cg, _ := cgroupfs.ProcCgroup(p.PID)
				killed = append(killed, Proc{PID: p.PID, PPID: p.PPID, Role: role(p, daemon), Comm: p.Comm, Cgroups: cg})
			}
			_ = proc.Of(p.Stat).Signal(unix.SIGKILL)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return killed
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

// role names what a process of the private containerd is.
func role(p procInfo, daemon int) string {
	name := p.Comm
	if len(p.argv) > 0 {
		name = filepath.Base(p.argv[0])
	}
	switch {
	case p.PID == daemon:
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
