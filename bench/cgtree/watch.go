package cgtree

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"time"

	"github.com/runsc-cgroups/cgconform/harness/cgroupfs"
)

// Watch finds the cgroups a runtime left behind: new directories in the
// tree, and <hierarchy>/<name> for the unique names a run used (stock runsc
// puts an empty cgroupsPath at "/"+ID, outside our tree).
type Watch struct {
	Tree *Tree
	// All is every mounted hierarchy, where top-level names are looked for.
	All []cgroupfs.Hierarchy
	// Self is the caller's PID: the leaf a nested runtime moves it into is
	// where the caller lives now, not a leak.
	Self int
}

// Snapshot lists every directory of the tree.
func (w *Watch) Snapshot() (map[string]bool, error) {
	out := map[string]bool{}
	for _, h := range w.Tree.Hierarchies {
		ds, err := w.Tree.dirs(h)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			out[d] = true
		}
	}
	return out, nil
}

// Top lists where <hierarchy>/<name> exists.
func (w *Watch) Top(name string) []string { return Exists(w.All, name) }

// Leaked lists the tree's directories that are not in before (except the
// caller's own leaf) and every <hierarchy>/<name> for names, then removes
// them, killing what is still inside: they were made for this run, under
// names it made up, and hold only its sandboxes.
func (w *Watch) Leaked(before map[string]bool, names ...string) ([]string, error) {
	now, err := w.Snapshot()
	if err != nil {
		return nil, err
	}
	var leaked []string
	for d := range now {
		if before[d] {
			continue
		}
		if pids, _ := cgroupfs.ReadProcs(d); slices.Contains(pids, w.Self) {
			continue
		}
		leaked = append(leaked, d)
	}
	// Deepest first, so that parents go after their children.
	sort.Slice(leaked, func(i, j int) bool { return len(leaked[i]) > len(leaked[j]) })
	for _, d := range leaked {
		killIn(d)
		cgroupfs.RemoveTree(d, 2*time.Second)
	}
	for _, n := range names {
		for _, h := range w.All {
			if _, err := os.Stat(filepath.Join(h.Mount, n)); err != nil {
				continue
			}
			t := &Tree{Name: n, Hierarchies: []cgroupfs.Hierarchy{h}}
			sub, _ := t.dirs(h)
			leaked = append(leaked, sub...)
			t.Remove(true)
		}
	}
	return leaked, nil
}

func killIn(dir string) {
	pids, _ := cgroupfs.ReadProcs(dir)
	for _, p := range pids {
		if p != os.Getpid() {
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
}
