// Package cgtree makes, joins and removes the benchmark's own cgroup tree.
//
// Safety rule on a shared host: it only creates, writes into or removes
// directories below <hierarchy mount>/<Tree.Name>, a name it made up and
// that did not exist before; it only kills processes found inside that tree,
// which descend from the process it placed there.
package cgtree

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Hierarchy is one mounted cgroup hierarchy.
type Hierarchy struct {
	Mount string `json:"mount"`
	// Controllers is the v1 option list ("cpu", "name=systemd"); empty for v2.
	Controllers string `json:"controllers,omitempty"`
	V2          bool   `json:"v2,omitempty"`
}

// Host modes.
const (
	ModeV1     = "v1"
	ModeHybrid = "hybrid"
	ModeV2     = "v2"
)

// Mounted lists the cgroup hierarchies of this process's mount namespace.
func Mounted() ([]Hierarchy, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseMountinfo(f)
}

var v1Known = map[string]bool{
	"cpu": true, "cpuacct": true, "cpuset": true, "memory": true, "devices": true,
	"freezer": true, "net_cls": true, "net_prio": true, "blkio": true,
	"perf_event": true, "hugetlb": true, "pids": true, "rdma": true, "misc": true,
}

// ParseMountinfo returns the cgroup hierarchies mounted at their own root
// (the first mount of each wins).
func ParseMountinfo(r io.Reader) ([]Hierarchy, error) {
	var out []Hierarchy
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// id parent maj:min root mountpoint opts [optional…] - fstype source superopts
		f := strings.Fields(sc.Text())
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || len(f) < sep+2 {
			continue
		}
		fstype, root, mnt := f[sep+1], f[3], unescape(f[4])
		if root != "/" {
			continue // a bind of a sub-cgroup: not where a runtime looks
		}
		var h Hierarchy
		switch fstype {
		case "cgroup2":
			h = Hierarchy{Mount: mnt, V2: true}
		case "cgroup":
			var ctrls []string
			super := ""
			if len(f) > sep+3 {
				super = f[sep+3]
			}
			for _, o := range strings.Split(super, ",") {
				if v1Known[o] || strings.HasPrefix(o, "name=") {
					ctrls = append(ctrls, o)
				}
			}
			sort.Strings(ctrls)
			h = Hierarchy{Mount: mnt, Controllers: strings.Join(ctrls, ",")}
		default:
			continue
		}
		key := h.Controllers
		if h.V2 {
			key = "cgroup2"
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, h)
	}
	return out, sc.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Mode classifies the host: v1, hybrid (v1 controllers plus cgroup2) or v2.
func Mode(hs []Hierarchy) string {
	v1, v2 := false, false
	for _, h := range hs {
		if h.V2 {
			v2 = true
		} else if h.Controllers != "" && !strings.HasPrefix(h.Controllers, "name=") {
			v1 = true
		}
	}
	switch {
	case v1 && v2:
		return ModeHybrid
	case v2:
		return ModeV2
	default:
		return ModeV1
	}
}

// Tree is <mount>/<Name> in each of Hierarchies, with the caller's leaf
// <Name>/caller.
type Tree struct {
	Name        string      `json:"name"`
	Hierarchies []Hierarchy `json:"hierarchies"`
	// V2Controllers lists the controllers enabled for the tree's children
	// on cgroup v2.
	V2Controllers []string `json:"v2Controllers,omitempty"`
}

// CallerDir is the leaf the caller process joins, relative to the tree.
const CallerDir = "caller"

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Where a runtime looks: every v1 hierarchy (controllers and named, such as
// name=systemd), or the unified one on a pure v2 host. On a hybrid host
// runsc works on v1 only, so the unified hierarchy is left alone.
func treeHierarchies(hs []Hierarchy) []Hierarchy {
	var out []Hierarchy
	mode := Mode(hs)
	for _, h := range hs {
		if h.V2 == (mode == ModeV2) {
			out = append(out, h)
		}
	}
	return out
}

// Create makes the tree and its caller leaf in every hierarchy a runtime
// uses. The name must not exist yet in any of them: a tree we did not make is
// never ours to touch. On error, what was made is removed again.
func Create(name string, hs []Hierarchy) (*Tree, error) {
	if !validName.MatchString(name) {
		return nil, fmt.Errorf("cgroup tree name %q: use letters, digits, '.', '_' and '-' only", name)
	}
	t := &Tree{Name: name, Hierarchies: treeHierarchies(hs)}
	if len(t.Hierarchies) == 0 {
		return nil, errors.New("no cgroup hierarchy mounted: mount cgroupfs (v1) or cgroup2 at /sys/fs/cgroup")
	}
	var made []Hierarchy
	fail := func(err error) (*Tree, error) {
		(&Tree{Name: name, Hierarchies: made}).Remove(false)
		return nil, err
	}
	for _, h := range t.Hierarchies {
		top := filepath.Join(h.Mount, name)
		if err := os.Mkdir(top, 0o755); err != nil {
			return fail(fmt.Errorf("creating the test cgroup %s (a leftover of an earlier run? remove it by hand once its processes are gone): %w", top, err))
		}
		made = append(made, h)
		if strings.Contains(","+h.Controllers+",", ",cpuset,") {
			if err := copyCpuset(h.Mount, top); err != nil {
				return fail(err)
			}
		}
		if h.V2 {
			t.V2Controllers = enableV2(top)
		}
		leaf := filepath.Join(top, CallerDir)
		if err := os.Mkdir(leaf, 0o755); err != nil {
			return fail(fmt.Errorf("creating the caller cgroup %s: %w", leaf, err))
		}
		if strings.Contains(","+h.Controllers+",", ",cpuset,") {
			if err := copyCpuset(top, leaf); err != nil {
				return fail(err)
			}
		}
	}
	return t, nil
}

// A new v1 cpuset is empty and refuses tasks until cpus and mems are set.
func copyCpuset(from, to string) error {
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		data, err := os.ReadFile(filepath.Join(from, f))
		if err != nil {
			return fmt.Errorf("reading %s to fill the test cpuset: %w", f, err)
		}
		if err := os.WriteFile(filepath.Join(to, f), data, 0o644); err != nil {
			return fmt.Errorf("writing %s in %s: %w", f, to, err)
		}
	}
	return nil
}

// enableV2 enables, one by one, every controller the tree may hand to its
// children, and returns those that took.
func enableV2(top string) []string {
	data, err := os.ReadFile(filepath.Join(top, "cgroup.controllers"))
	if err != nil {
		return nil
	}
	var on []string
	for _, c := range strings.Fields(string(data)) {
		if os.WriteFile(filepath.Join(top, "cgroup.subtree_control"), []byte("+"+c), 0o644) == nil {
			on = append(on, c)
		}
	}
	return on
}

// EnableRootControllers enables every controller of a v2 hierarchy's root
// for its children. That changes the host for everyone: only for a
// throw-away VM whose init left the root's subtree_control empty.
func EnableRootControllers(h Hierarchy) []string {
	if !h.V2 {
		return nil
	}
	return enableV2(h.Mount)
}

// Dir is the directory of rel ("caller", "caller/x") inside the tree in h.
func (t *Tree) Dir(h Hierarchy, rel string) string {
	return filepath.Join(h.Mount, t.Name, filepath.Clean("/"+rel))
}

// CallerProcs lists the cgroup.procs files of the caller leaf.
func (t *Tree) CallerProcs() []string {
	var out []string
	for _, h := range t.Hierarchies {
		out = append(out, filepath.Join(t.Dir(h, CallerDir), "cgroup.procs"))
	}
	return out
}

// Join moves pid into each cgroup.procs file. Each must belong to a tree
// made by this package (checked by name: under a cgroup mount, below a
// directory holding a "caller" leaf).
func Join(procsFiles []string, pid int) error {
	hs, err := Mounted()
	if err != nil {
		return err
	}
	for _, f := range procsFiles {
		if err := checkJoinable(f, hs); err != nil {
			return err
		}
	}
	for _, f := range procsFiles {
		if err := os.WriteFile(f, []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("moving pid %d into %s: %w", pid, f, err)
		}
	}
	return nil
}

func checkJoinable(f string, hs []Hierarchy) error {
	clean := filepath.Clean(f)
	if clean != f || filepath.Base(f) != "cgroup.procs" {
		return fmt.Errorf("%q is not a clean path to a cgroup.procs file", f)
	}
	for _, h := range hs {
		rel, err := filepath.Rel(h.Mount, filepath.Dir(f))
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		parts := strings.Split(rel, string(filepath.Separator))
		if len(parts) >= 2 && validName.MatchString(parts[0]) && parts[1] == CallerDir {
			return nil
		}
	}
	return fmt.Errorf("%s is not inside a cgbench test tree (<cgroup mount>/<name>/%s/…): refusing to move a process there", f, CallerDir)
}

// Procs lists the PIDs anywhere in the tree.
func (t *Tree) Procs() ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for _, h := range t.Hierarchies {
		dirs, err := t.dirs(h)
		if err != nil {
			return nil, err
		}
		for _, d := range dirs {
			pids, err := ReadProcs(d)
			if err != nil {
				continue // removed meanwhile
			}
			for _, p := range pids {
				if !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// ReadProcs reads dir/cgroup.procs.
func ReadProcs(dir string) ([]int, error) {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, l := range strings.Fields(string(data)) {
		if p, err := strconv.Atoi(l); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// Subdirs lists the cgroups below the tree's top in h, relative to it,
// deepest first.
func (t *Tree) Subdirs(h Hierarchy) ([]string, error) {
	dirs, err := t.dirs(h)
	if err != nil {
		return nil, err
	}
	top := filepath.Join(h.Mount, t.Name)
	var out []string
	for _, d := range dirs {
		if d == top {
			continue
		}
		rel, _ := filepath.Rel(top, d)
		out = append(out, rel)
	}
	return out, nil
}

// dirs lists the tree's directories in h, deepest first; none if the tree
// does not exist there.
func (t *Tree) dirs(h Hierarchy) ([]string, error) {
	top := filepath.Join(h.Mount, t.Name)
	var out []string
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		di, dj := strings.Count(out[i], "/"), strings.Count(out[j], "/")
		if di != dj {
			return di > dj
		}
		return out[i] < out[j]
	})
	return out, nil
}

// Remove removes the whole tree, deepest first, retrying a busy directory
// for a few seconds. With kill, it first SIGKILLs every process left inside
// the tree (they descend from the caller we placed there). It returns what
// could not be removed.
func (t *Tree) Remove(kill bool) error {
	if kill {
		pids, _ := t.Procs()
		for _, p := range pids {
			if p != os.Getpid() {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
	}
	var errs []error
	for _, h := range t.Hierarchies {
		dirs, err := t.dirs(h)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, d := range dirs {
			if err := rmdirRetry(d, 5*time.Second); err != nil {
				pids, _ := ReadProcs(d)
				errs = append(errs, fmt.Errorf("removing %s (pids inside: %v): %w", d, pids, err))
			}
		}
	}
	return errors.Join(errs...)
}

func rmdirRetry(dir string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	wait := 10 * time.Millisecond
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
		if wait < 500*time.Millisecond {
			wait *= 2
		}
	}
}

// Exists reports in which hierarchies <mount>/<name> exists.
func Exists(hs []Hierarchy, name string) []string {
	var out []string
	for _, h := range hs {
		p := filepath.Join(h.Mount, name)
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
