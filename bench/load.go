package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"runtime"
	"syscall"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/harness/runner"
)

// The load generator of the CRI scenario's loaded cells: a fixed number of
// CPU spinners, each `cgbench spin` (one thread, a tight integer loop that
// never sleeps, nice 0), in a cgroup of their own below the test tree. It
// stands for a node whose CPUs other work keeps busy; what it took of the
// machine is measured from its cgroup's CPU usage and reported per cell.

// loadDir is the spinners' cgroup below the test tree's root.
const loadDir = "load"

// SpinCommand is cgbench's subcommand for one spinner.
const SpinCommand = "spin"

// spinMain never returns: it burns one CPU until it is killed.
func spinMain() int {
	runtime.GOMAXPROCS(1)
	x := uint64(1)
	for {
		x = x*6364136223846793005 + 1442695040888963407
	}
}

// SpinnerDescription says what the load generator is, for the report.
func SpinnerDescription(n int, cgroup string) string {
	return fmt.Sprintf("%d CPU spinners (`cgbench %s`: one thread each, a tight integer loop, nice 0) in the cgroup %s of every hierarchy, started before a loaded cell's first pair and killed after its last",
		n, SpinCommand, cgroup)
}

// inCgroup is the command line that runs argv in the cgroup rel of every
// hierarchy of host: self (cgbench) joins them (exec-in-cgroup), then
// becomes argv (same PID), so that argv runs nothing outside them.
func inCgroup(self string, host *cgroupfs.Host, rel string, argv ...string) []string {
	args := []string{self, runner.HelperCommand}
	for _, h := range host.Hierarchies {
		args = append(args, "--join", h.Dir(rel))
	}
	return append(append(args, "--"), argv...)
}

// Spinners is a running load generator.
type Spinners struct {
	tree  *cgroupfs.Tree
	rel   string
	cmds  []*exec.Cmd
	start time.Time
}

// StartSpinners starts n spinners in <tree root>/load.
func StartSpinners(tree *cgroupfs.Tree, n int) (*Spinners, error) {
	if n < 1 {
		return nil, fmt.Errorf("the load generator needs at least one spinner, got %d", n)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	s := &Spinners{tree: tree, rel: path.Join(tree.Root, loadDir), start: time.Now()}
	if err := tree.Mkdir(s.rel); err != nil {
		return nil, err
	}
	args := inCgroup(self, tree.Host, s.rel, self, SpinCommand)
	for i := 0; i < n; i++ {
		cmd := exec.Command(args[0], args[1:]...)
		if err := cmd.Start(); err != nil {
			s.Stop()
			return nil, fmt.Errorf("starting spinner %d: %w", i, err)
		}
		s.cmds = append(s.cmds, cmd)
	}
	return s, nil
}

// Stop kills the spinners (by PID), measures the CPU time their cgroup
// used, and removes the cgroup.
func (s *Spinners) Stop() (*LoadCPU, error) {
	cpu := &LoadCPU{Spinners: len(s.cmds), Wall: time.Since(s.start).Seconds(), NProc: runtime.NumCPU()}
	var errs []error
	if used, err := s.tree.Host.Usage(s.rel); err == nil {
		cpu.Seconds = used.Seconds()
	} else {
		errs = append(errs, fmt.Errorf("reading the load's CPU usage: %w", err))
	}
	for _, c := range s.cmds {
		c.Process.Signal(syscall.SIGKILL)
		c.Wait()
	}
	for _, h := range s.tree.Host.Hierarchies {
		for _, l := range cgroupfs.RemoveTree(h.Dir(s.rel), 2*time.Second) {
			errs = append(errs, errors.New("removing the load cgroup: "+l))
		}
	}
	return cpu, errors.Join(errs...)
}
