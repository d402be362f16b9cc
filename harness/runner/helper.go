package runner

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/moby/sys/mountinfo"
	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"golang.org/x/sys/unix"
)

// The harness never starts a runtime from its own cgroups (on a shared host
// those belong to someone else). Every runtime command runs as
//
//	cgconform exec-in-cgroup --join DIR... [--cgroupns-of PID] -- RUNTIME ARGS
//
// which moves itself into the caller context's cgroups, optionally enters the
// delegated pod's cgroup namespace (that of PID, the container's own process)
// and a private mount namespace with the cgroup hierarchies mounted at the
// namespace root, and only then execs the runtime (kubepods-nsenter joins a
// cgroup outside that namespace, as nsenter from a host shell leaves it). The pod's own process is started with
// --new-cgroupns: it anchors a namespace rooted at the container's cgroup,
// which every later command enters, as "kubectl exec" does. A command that
// made its own namespace instead would root it wherever it was born, which
// after nesting is the leaf, not the container's cgroup.

// HelperCommand is the subcommand name of the re-exec.
const HelperCommand = "exec-in-cgroup"

const mountCommand = "mount-cgroup2-exec"

// HelperMain implements the re-exec subcommands; args excludes the
// program name and the subcommand. It returns only on error.
func HelperMain(sub string, args []string) int {
	switch sub {
	case HelperCommand:
		return execInCgroup(args)
	case mountCommand:
		return mountAndExec(args)
	}
	return helperFailed("cgconform: unknown helper %q", sub)
}

// nestedLeaf is where a nested runtime moves its caller's processes (runsc
// --nested-cgroups; systemd's DelegateSubgroup= convention).
const nestedLeaf = "supervisor"

// joinCgroup moves pid into dir. Once a nested runtime has moved the caller's
// processes into dir's leaf and enabled controllers, dir takes no processes
// (EBUSY): a new process of the caller is born in the leaf, so join that.
func joinCgroup(dir string, pid int) error {
	err := cgroupfs.WritePid(dir, pid)
	if !errors.Is(err, unix.EBUSY) {
		return err
	}
	leaf := dir + "/" + nestedLeaf
	if _, serr := os.Stat(leaf); serr != nil {
		return err
	}
	return cgroupfs.WritePid(leaf, pid)
}

func execInCgroup(args []string) int {
	fs := flag.NewFlagSet(HelperCommand, flag.ContinueOnError)
	var join []string
	fs.Func("join", "cgroup directory to join (repeatable)", func(d string) error { join = append(join, d); return nil })
	newNS := fs.Bool("new-cgroupns", false, "exec in a new cgroup namespace rooted at the cgroups joined")
	nsOf := fs.Int("cgroupns-of", 0, "run in the cgroup namespace of this PID and a new mount namespace with its cgroup hierarchies mounted from there")
	readOnly := fs.Bool("read-only", false, "run in a new mount namespace where the cgroup hierarchies are read-only, as a pod that is not privileged sees them")
	mountnsOf := fs.Int("mountns-of", 0, "run in the mount namespace of this PID (through nsenter(1): a Go program cannot setns into a mount namespace once it has threads)")
	if err := fs.Parse(args); err != nil {
		return 125
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return helperFailed("cgconform exec-in-cgroup: no command")
	}
	pid := os.Getpid()
	for _, d := range join {
		if err := joinCgroup(d, pid); err != nil {
			return helperFailed("cgconform exec-in-cgroup: joining %s: %v", d, err)
		}
	}
	if *mountnsOf != 0 {
		argv = append([]string{"nsenter", fmt.Sprintf("--mount=/proc/%d/ns/mnt", *mountnsOf), "--"}, argv...)
	}
	if !*newNS && *nsOf == 0 && !*readOnly {
		return execve(argv)
	}
	// The cgroup namespace is per thread until exec; an exec or a child
	// started from this locked thread inherits it.
	runtime.LockOSThread()
	if *newNS {
		if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
			return helperFailed("cgconform exec-in-cgroup: unshare(CLONE_NEWCGROUP): %v", err)
		}
		return execve(argv)
	}
	if *nsOf != 0 {
		if err := enterCgroupns(*nsOf); err != nil {
			return helperFailed("cgconform exec-in-cgroup: %v", err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return helperFailed("%v", err)
	}
	mountArgs := []string{mountCommand}
	if *readOnly {
		mountArgs = append(mountArgs, "--read-only")
	}
	if *nsOf == 0 {
		mountArgs = append(mountArgs, "--bind")
	}
	cmd := exec.Command(self, append(append(mountArgs, "--"), argv...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return helperFailed("cgconform exec-in-cgroup: %v", err)
	}
	return 0
}

func enterCgroupns(pid int) error {
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/cgroup", pid))
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWCGROUP); err != nil {
		return fmt.Errorf("setns(cgroup namespace of pid %d): %w", pid, err)
	}
	return nil
}

func mountAndExec(args []string) int {
	fs := flag.NewFlagSet(mountCommand, flag.ContinueOnError)
	readOnly := fs.Bool("read-only", false, "mount the hierarchies read-only")
	// --bind (the caller's own cgroup namespace): remount each mount point
	// in place. A new cgroup2 mount from the initial namespace would reset
	// the host's cgroup2 options (nsdelegate) for every namespace.
	bind := fs.Bool("bind", false, "remount the hierarchies in place")
	if fs.Parse(args) != nil || fs.NArg() == 0 {
		return 125
	}
	args = fs.Args()
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
	if *readOnly {
		flags |= unix.MS_RDONLY
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return helperFailed("cgconform: making mounts private: %v", err)
	}
	ms, err := cgroupMounts()
	if err != nil {
		return helperFailed("cgconform: %v", err)
	}
	if *bind {
		for _, m := range ms {
			if err := unix.Mount("", m.point, "", flags|unix.MS_REMOUNT|unix.MS_BIND, ""); err != nil {
				return helperFailed("cgconform: remounting %s: %v", m.point, err)
			}
		}
		return execve(args)
	}
	// Mounting a hierarchy again on its own mount point fails with EBUSY:
	// detach the old mounts first, deepest first (this mount namespace is
	// private, the host keeps its own).
	for i := len(ms) - 1; i >= 0; i-- {
		_ = unix.Unmount(ms[i].point, unix.MNT_DETACH)
	}
	// Mounted from inside the new cgroup namespace, each hierarchy shows the
	// namespace root as /, as in a delegated pod.
	for _, m := range ms {
		if err := unix.Mount(m.fstype, m.point, m.fstype, flags, m.data); err != nil {
			return helperFailed("cgconform: mounting %s (%s) at %s: %v", m.fstype, m.data, m.point, err)
		}
	}
	return execve(args)
}

type cgroupMount struct{ point, fstype, data string }

// cgroupMounts lists the cgroup and cgroup2 mounts of this mount namespace
// in mount order: one cgroup2 at /sys/fs/cgroup on a v2 host, the v1
// hierarchies (and the unified one on a hybrid host) below it otherwise. A
// v1 hierarchy is mounted again with its controllers and flags (its super
// options but rw/ro); cgroup2 with none (nsdelegate belongs to the initial
// namespace).
func cgroupMounts() ([]cgroupMount, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return parseCgroupMounts(string(data))
}

func parseCgroupMounts(info string) ([]cgroupMount, error) {
	mounts, err := mountinfo.GetMountsFromReader(strings.NewReader(info), mountinfo.FSTypeFilter("cgroup", "cgroup2"))
	if err != nil {
		return nil, err
	}
	var ms []cgroupMount
	for _, m := range mounts {
		c := cgroupMount{point: m.Mountpoint, fstype: m.FSType}
		if m.FSType == "cgroup" {
			c.data = strings.Join(slices.DeleteFunc(strings.Split(m.VFSOptions, ","), func(o string) bool { return o == "rw" || o == "ro" }), ",")
		}
		ms = append(ms, c)
	}
	if len(ms) == 0 {
		return nil, errors.New("no cgroup hierarchy is mounted")
	}
	return ms, nil
}

// helperFailed says on stderr why a helper did not run the command, and
// returns its exit status.
func helperFailed(format string, a ...any) int {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	return 125
}

func execve(argv []string) int {
	p, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "cgconform exec-in-cgroup: %v\n", err)
		return 127
	}
	err = syscall.Exec(p, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "cgconform exec-in-cgroup: exec %s: %v\n", p, err)
	return 126
}
