// Package cgroupfs reads the host's cgroup layout and manages the harness's
// own test cgroups.
//
// Two layers. A Tree's methods (Mkdir, Join, Chown, ...) only ever create,
// write into or remove cgroups below the Tree's root (the harness's test
// root): they refuse any other path. The plain functions (RemoveTree,
// EnableControllers, WritePid, CopyCpuset, ...) act on whatever directory
// they are given; their callers bound them (the runner passes only paths
// below its test root, or named with its run token). Reading the rest of
// the hierarchy is allowed, to find what a runtime left behind.
package cgroupfs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/moby/sys/mountinfo"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"golang.org/x/sys/unix"
)

// Hierarchy is one mounted cgroup hierarchy.
type Hierarchy struct {
	// Key identifies the hierarchy as /proc/PID/cgroup does, with the
	// controller list sorted: "memory", "cpu,cpuacct", "name=systemd", or
	// "" for cgroup2.
	Key string `json:"key"`
	// Mount is where the hierarchy's root is mounted.
	Mount string `json:"mount"`
	// V2 is set for the unified (cgroup2) hierarchy.
	V2 bool `json:"v2,omitempty"`
}

// Name is a readable name for the hierarchy.
func (h Hierarchy) Name() string {
	if h.V2 {
		return "unified"
	}
	return h.Key
}

// Controllers returns the v1 controllers of the hierarchy (none for named
// hierarchies and for v2).
func (h Hierarchy) Controllers() []string {
	if h.V2 {
		return nil
	}
	var out []string
	for _, c := range strings.Split(h.Key, ",") {
		if c != "" && !strings.HasPrefix(c, "name=") {
			out = append(out, c)
		}
	}
	return out
}

// Dir is the directory of cgroup rel ("/a/b") in h.
func (h Hierarchy) Dir(rel string) string {
	return filepath.Join(h.Mount, filepath.FromSlash(path.Clean("/"+rel)))
}

// Host is the cgroup layout of the machine as the harness sees it.
type Host struct {
	Mode        mode.Cgroup `json:"mode"`
	Hierarchies []Hierarchy `json:"hierarchies"`
	// Self maps hierarchy keys to the harness's own cgroup.
	Self map[string]string `json:"self"`
	// SystemdPID1 reports whether systemd is init.
	SystemdPID1 bool `json:"systemdPID1"`
	// CgroupNS reports whether the harness runs in a non-initial cgroup
	// namespace.
	CgroupNS bool `json:"cgroupNS"`
}

// Detect reads the layout of this machine.
func Detect() (*Host, error) {
	hs, err := Mounted()
	if err != nil {
		return nil, err
	}
	if len(hs) == 0 {
		return nil, fmt.Errorf("no cgroup hierarchy mounted: mount cgroupfs (v1) or cgroup2 at /sys/fs/cgroup")
	}
	self, err := ProcCgroup(os.Getpid())
	if err != nil {
		return nil, err
	}
	h := &Host{Hierarchies: hs, Self: self, Mode: ModeFor(hs)}
	if comm, err := os.ReadFile("/proc/1/comm"); err == nil {
		h.SystemdPID1 = strings.TrimSpace(string(comm)) == "systemd"
	}
	a, errA := os.Readlink("/proc/self/ns/cgroup")
	b, errB := os.Readlink("/proc/1/ns/cgroup")
	h.CgroupNS = errA == nil && errB == nil && a != b
	return h, nil
}

// Mounted lists the cgroup hierarchies of this process's mount namespace.
func Mounted() ([]Hierarchy, error) {
	mi, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer mi.Close()
	return ParseMountinfo(mi)
}

// ModeFor classifies a set of hierarchies.
func ModeFor(hs []Hierarchy) mode.Cgroup {
	v1, v2 := false, false
	for _, h := range hs {
		if h.V2 {
			v2 = true
		} else if len(h.Controllers()) > 0 {
			v1 = true
		}
	}
	switch {
	case v1 && v2:
		return mode.Hybrid
	case v2:
		return mode.V2
	default:
		return mode.V1
	}
}

// ParseMountinfo returns the cgroup hierarchies mounted at their root, one
// per hierarchy (the first mount under /sys/fs/cgroup wins).
func ParseMountinfo(r io.Reader) ([]Hierarchy, error) {
	mounts, err := mountinfo.GetMountsFromReader(r, mountinfo.FSTypeFilter("cgroup", "cgroup2"))
	if err != nil {
		return nil, fmt.Errorf("reading mountinfo: %w", err)
	}
	var out []Hierarchy
	seen := map[string]int{}
	for _, m := range mounts {
		if m.Root != "/" {
			continue
		}
		var h Hierarchy
		switch m.FSType {
		case "cgroup2":
			h = Hierarchy{Key: "", Mount: m.Mountpoint, V2: true}
		case "cgroup":
			var ctrls []string
			for _, o := range strings.Split(m.VFSOptions, ",") {
				switch {
				case o == "rw" || o == "ro" || o == "clone_children" || o == "noprefix" || o == "xattr" || o == "cpuset_v2_mode" || o == "favordynmods":
				case strings.HasPrefix(o, "release_agent="):
				default:
					ctrls = append(ctrls, o)
				}
			}
			if len(ctrls) == 0 {
				continue
			}
			h = Hierarchy{Key: normKey(strings.Join(ctrls, ",")), Mount: m.Mountpoint}
		}
		if i, ok := seen[h.Key]; ok {
			if !strings.HasPrefix(out[i].Mount, "/sys/fs/cgroup") && strings.HasPrefix(h.Mount, "/sys/fs/cgroup") {
				out[i] = h
			}
			continue
		}
		seen[h.Key] = len(out)
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func normKey(k string) string {
	parts := strings.Split(k, ",")
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// ParseProcCgroup parses /proc/PID/cgroup into hierarchy key -> path.
func ParseProcCgroup(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("malformed cgroup line %q", line)
		}
		key := parts[1]
		if parts[0] != "0" || key != "" {
			key = normKey(key)
		}
		out[key] = parts[2]
	}
	return out, sc.Err()
}

// ProcCgroup reads /proc/PID/cgroup.
func ProcCgroup(pid int) (map[string]string, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseProcCgroup(f)
}

// Managed returns the hierarchies a runtime places sandboxes in: the
// unified one on a pure v2 host, the v1 controller hierarchies otherwise.
func (h *Host) Managed() []Hierarchy {
	var out []Hierarchy
	for _, x := range h.Hierarchies {
		if h.Mode == mode.V2 && x.V2 || h.Mode != mode.V2 && len(x.Controllers()) > 0 {
			out = append(out, x)
		}
	}
	return out
}

// ForFile returns the hierarchies a cgroup file is in: the unified one on
// v2; on v1 the hierarchy of the controller that prefixes the name
// ("memory.limit_in_bytes" -> memory), or every managed hierarchy for a
// file of the cgroup core (cgroup.procs, tasks, notify_on_release), which
// each of them has.
func (h *Host) ForFile(name string) ([]Hierarchy, error) {
	m := h.Managed()
	if len(m) == 0 {
		return nil, fmt.Errorf("no managed hierarchy")
	}
	if h.Mode == mode.V2 {
		return m[:1], nil
	}
	prefix, _, dotted := strings.Cut(name, ".")
	if prefix == "cgroup" || !dotted {
		return m, nil
	}
	for _, x := range m {
		if slices.Contains(x.Controllers(), prefix) {
			return []Hierarchy{x}, nil
		}
	}
	return nil, fmt.Errorf("%s: no v1 hierarchy has the controller %q (on v1 a file's prefix picks its hierarchy)", name, prefix)
}

// Tree manages cgroups below one root, in every hierarchy.
type Tree struct {
	Host *Host
	// Root is the cgroup path ("/cgconform-xyz") everything is created
	// under. No method writes outside it.
	Root string
}

func (t *Tree) inside(rel string) error {
	c := path.Clean("/" + rel)
	if c != t.Root && !strings.HasPrefix(c, t.Root+"/") {
		return fmt.Errorf("refusing to touch cgroup %q outside the test root %q", c, t.Root)
	}
	return nil
}

// Mkdir creates rel and its missing ancestors below the root in every
// hierarchy. On v1 cpuset gets cpus and mems copied from the parent (a
// new cpuset is empty and no task can join it); on v2 every controller
// available in a parent is enabled for its children.
func (t *Tree) Mkdir(rel string) error {
	for _, h := range t.Host.Hierarchies {
		if err := t.MkdirIn(h, rel); err != nil {
			return err
		}
	}
	return nil
}

// MkdirIn is Mkdir in one hierarchy.
func (t *Tree) MkdirIn(h Hierarchy, rel string) error {
	if err := t.inside(rel); err != nil {
		return err
	}
	if err := t.mkdirIn(h, path.Clean("/"+rel)); err != nil {
		return fmt.Errorf("creating %s in %s: %w", rel, h.Name(), err)
	}
	return nil
}

func (t *Tree) mkdirIn(h Hierarchy, rel string) error {
	if rel != t.Root {
		if err := t.mkdirIn(h, path.Dir(rel)); err != nil {
			return err
		}
	}
	dir := h.Dir(rel)
	parent := filepath.Dir(dir)
	// The hierarchy root's subtree_control belongs to the host: only the
	// test root and below are ours to change.
	if h.V2 && t.Host.Mode == mode.V2 && rel != t.Root {
		EnableControllers(parent)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	if slices.Contains(h.Controllers(), "cpuset") {
		return CopyCpuset(parent, dir)
	}
	return nil
}

// CopyCpuset copies cpuset.cpus and cpuset.mems from one v1 cpuset to
// another: a new cpuset is empty and no task can join it until both are set.
func CopyCpuset(from, to string) error {
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		b, err := os.ReadFile(filepath.Join(from, f))
		if err != nil {
			return fmt.Errorf("reading %s to fill the cpuset %s: %w", f, to, err)
		}
		if err := os.WriteFile(filepath.Join(to, f), b, 0o644); err != nil {
			return fmt.Errorf("copying %s into %s: %w", f, to, err)
		}
	}
	return nil
}

// EnableControllers turns on, one by one, every controller the v2 cgroup
// dir offers to its children, and returns those enabled afterwards.
// Failures are left for the callers to observe.
func EnableControllers(dir string) []string {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil
	}
	control := filepath.Join(dir, "cgroup.subtree_control")
	on, _ := os.ReadFile(control)
	enabled := strings.Fields(string(on))
	for _, c := range strings.Fields(string(b)) {
		if slices.Contains(enabled, c) {
			continue
		}
		if os.WriteFile(control, []byte("+"+c), 0o644) == nil {
			enabled = append(enabled, c)
		}
	}
	return enabled
}

// Nest moves the processes of the v2 cgroup dir into its child leaf (made
// if missing) and enables dir's controllers for its children: what a
// caller can do before it starts a runtime that places a relative
// cgroupsPath in the parent of its own cgroup, so that it lands beneath
// dir. A controller left off means a process is still in dir.
func Nest(dir, leaf string) error {
	if err := os.Mkdir(filepath.Join(dir, leaf), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	pids, err := ReadProcs(dir)
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if err := WritePid(filepath.Join(dir, leaf), pid); err != nil {
			return fmt.Errorf("moving process %d: %w", pid, err)
		}
	}
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	on := EnableControllers(dir)
	for _, c := range strings.Fields(string(avail)) {
		if !slices.Contains(on, c) {
			return fmt.Errorf("controller %s not enabled in %s (a process left in it?)", c, dir)
		}
	}
	return nil
}

// EnableRootControllers enables, at the hierarchy root of a v2 host, the
// controllers it lacks. This changes the host; the CLI does it only when
// asked (-enable-root-controllers), e.g. in a throwaway VM.
func (h *Host) EnableRootControllers() {
	for _, x := range h.Hierarchies {
		if h.Mode == mode.V2 && x.V2 {
			EnableControllers(x.Mount)
		}
	}
}

// Create makes the tree's root in every hierarchy. The root must not exist
// yet in any of them: a tree someone else made is never ours to touch. On
// error, what it made is removed again.
func (t *Tree) Create() error {
	for _, h := range t.Host.Hierarchies {
		if _, err := os.Stat(h.Dir(t.Root)); err == nil {
			return fmt.Errorf("%s exists already (a leftover of an earlier run? remove it by hand once its processes are gone)", h.Dir(t.Root))
		}
	}
	if err := t.Mkdir(t.Root); err != nil {
		t.Remove(time.Second)
		return err
	}
	return nil
}

// Procs lists the PIDs anywhere in the tree, in any hierarchy.
func (t *Tree) Procs() []int {
	var out []int
	for _, h := range t.Host.Hierarchies {
		for _, d := range Dirs(h, t.Root) {
			pids, _ := Procs(h, d)
			out = append(out, pids...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Kill SIGKILLs every process anywhere in the tree, in any hierarchy (but
// the caller).
func (t *Tree) Kill() error {
	var errs []error
	for _, h := range t.Host.Hierarchies {
		for _, d := range Dirs(h, t.Root) {
			errs = append(errs, Kill(h.Dir(d)))
		}
	}
	return errors.Join(errs...)
}

// Kill SIGKILLs every process in the cgroup dir but the caller. Each is
// pinned by a pidfd and then seen in dir again, so a PID that ended and
// went to a process elsewhere is never signalled (Linux 5.3).
func Kill(dir string) error {
	pids, err := ReadProcs(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, pid := range pids {
		if pid == os.Getpid() {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if errors.Is(err, unix.ESRCH) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pidfd_open %d in %s: %w", pid, dir, err))
			continue
		}
		if now, _ := ReadProcs(dir); slices.Contains(now, pid) {
			if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("killing %d in %s: %w", pid, dir, err))
			}
		}
		unix.Close(fd)
	}
	return errors.Join(errs...)
}

// Remove removes the whole tree in every hierarchy, deepest first, waiting
// up to wait for each busy directory; it returns what it could not remove.
func (t *Tree) Remove(wait time.Duration) []string {
	var left []string
	for _, h := range t.Host.Hierarchies {
		left = append(left, RemoveTree(h.Dir(t.Root), wait)...)
	}
	return left
}

// Join moves pid into rel in every hierarchy.
func (t *Tree) Join(pid int, rel string) error {
	if err := t.inside(rel); err != nil {
		return err
	}
	for _, h := range t.Host.Hierarchies {
		if err := WritePid(h.Dir(rel), pid); err != nil {
			return fmt.Errorf("moving %d into %s in %s: %w", pid, rel, h.Name(), err)
		}
	}
	return nil
}

// WritePid writes pid into dir/cgroup.procs.
func WritePid(dir string, pid int) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
}

// Procs lists the PIDs in rel of h (empty when rel does not exist).
func Procs(h Hierarchy, rel string) ([]int, error) {
	pids, err := ReadProcs(h.Dir(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return pids, err
}

// ReadProcs reads the PIDs in dir/cgroup.procs (dir: a cgroup directory).
func ReadProcs(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// Dirs lists the cgroups (paths relative to the hierarchy root) at and
// below rel in h, parents first. A missing rel yields nothing.
func Dirs(h Hierarchy, rel string) []string {
	var out []string
	base := h.Dir(rel)
	_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		r, _ := filepath.Rel(h.Mount, p)
		out = append(out, path.Clean("/"+filepath.ToSlash(r)))
		return nil
	})
	return out
}

// FindNamed lists every cgroup in h whose base name contains token,
// skipping the subtree at skip. It finds what runtimes left outside the
// test root (e.g. "/<id>" at the root of a hierarchy).
func FindNamed(h Hierarchy, token, skip string) []string {
	var out []string
	skipDir := h.Dir(skip)
	_ = filepath.WalkDir(h.Mount, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if p == skipDir {
			return filepath.SkipDir
		}
		if strings.Contains(d.Name(), token) {
			r, _ := filepath.Rel(h.Mount, p)
			out = append(out, path.Clean("/"+filepath.ToSlash(r)))
			return filepath.SkipDir
		}
		return nil
	})
	return out
}

// RemoveTree removes the cgroup at abs (a directory under a hierarchy
// mount) and everything below it, deepest first, retrying while the
// kernel still drains exiting tasks. It returns the directories it could
// not remove.
func RemoveTree(abs string, wait time.Duration) []string {
	var dirs []string
	_ = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	var left []string
	for _, d := range dirs {
		deadline := time.Now().Add(wait)
		for {
			err := unix.Rmdir(d)
			if err == nil || errors.Is(err, unix.ENOENT) {
				break
			}
			if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				left = append(left, fmt.Sprintf("%s: %v", d, err))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return left
}

// Usage returns the CPU time charged to rel and its descendants:
// cpuacct.usage on v1, cpu.stat usage_usec on v2.
func (h *Host) Usage(rel string) (time.Duration, error) {
	if h.Mode == mode.V2 {
		for _, x := range h.Hierarchies {
			if !x.V2 {
				continue
			}
			b, err := os.ReadFile(filepath.Join(x.Dir(rel), "cpu.stat"))
			if err != nil {
				return 0, err
			}
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
					n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
					return time.Duration(n) * time.Microsecond, err
				}
			}
			return 0, fmt.Errorf("no usage_usec in %s/cpu.stat", rel)
		}
	}
	for _, x := range h.Hierarchies {
		if slices.Contains(x.Controllers(), "cpuacct") {
			b, err := os.ReadFile(filepath.Join(x.Dir(rel), "cpuacct.usage"))
			if err != nil {
				return 0, err
			}
			n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			return time.Duration(n), err
		}
	}
	return 0, fmt.Errorf("no cpuacct hierarchy and not cgroup v2: cannot measure usage")
}

// IsUnder reports whether p is at or below dir (cgroup paths).
func IsUnder(p, dir string) bool {
	p, dir = path.Clean("/"+p), path.Clean("/"+dir)
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
