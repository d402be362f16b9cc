package runner

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"

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

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// HelperMain implements the re-exec subcommands; args excludes the
// program name and the subcommand. It returns only on error.
func HelperMain(sub string, args []string) int {
	switch sub {
	case HelperCommand:
		return execInCgroup(args)
	case mountCommand:
		return mountAndExec(args)
	}
	fmt.Fprintf(os.Stderr, "cgconform: unknown helper %q\n", sub)
	return 125
}

// nestedLeaf is where a nested runtime moves its caller's processes (runsc
// --nested-cgroups; systemd's DelegateSubgroup= convention).
const nestedLeaf = "supervisor"

// joinCgroup moves pid into dir. Once a nested runtime has moved the caller's
// processes into dir's leaf and enabled controllers, dir takes no processes
// (EBUSY): a new process of the caller is born in the leaf, so join that.
func joinCgroup(dir string, pid int) error {
	write := func(d string) error {
		return os.WriteFile(d+"/cgroup.procs", []byte(fmt.Sprint(pid)), 0o644)
	}
	err := write(dir)
	if !errors.Is(err, unix.EBUSY) {
		return err
	}
	leaf := dir + "/" + nestedLeaf
	if _, serr := os.Stat(leaf); serr != nil {
		return err
	}
	return write(leaf)
}

func execInCgroup(args []string) int {
	fs := flag.NewFlagSet(HelperCommand, flag.ContinueOnError)
	var join listFlag
	fs.Var(&join, "join", "cgroup directory to join (repeatable)")
	newNS := fs.Bool("new-cgroupns", false, "exec in a new cgroup namespace rooted at the cgroups joined")
	nsOf := fs.Int("cgroupns-of", 0, "run in the cgroup namespace of this PID and a new mount namespace with its cgroup hierarchies mounted from there")
	readOnly := fs.Bool("read-only", false, "run in a new mount namespace where the cgroup hierarchies are read-only, as a pod that is not privileged sees them")
	mountnsOf := fs.Int("mountns-of", 0, "run in the mount namespace of this PID (through nsenter(1): a Go program cannot setns into a mount namespace once it has threads)")
	if err := fs.Parse(args); err != nil {
		return 125
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "cgconform exec-in-cgroup: no command")
		return 125
	}
	pid := os.Getpid()
	for _, d := range join {
		if err := joinCgroup(d, pid); err != nil {
			fmt.Fprintf(os.Stderr, "cgconform exec-in-cgroup: joining %s: %v\n", d, err)
			return 125
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
			fmt.Fprintf(os.Stderr, "cgconform exec-in-cgroup: unshare(CLONE_NEWCGROUP): %v\n", err)
			return 125
		}
		return execve(argv)
	}
	if *nsOf != 0 {
		if err := enterCgroupns(*nsOf); err != nil {
			fmt.Fprintf(os.Stderr, "cgconform exec-in-cgroup: %v\n", err)
			return 125
		}
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 125
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
		fmt.Fprintf(os.Stderr, "cgconform exec-in-cgroup: %v\n", err)
		return 125
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
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
	if len(args) > 0 && args[0] == "--read-only" {
		flags |= unix.MS_RDONLY
		args = args[1:]
	}
	// --bind (the caller's own cgroup namespace): remount each mount point
	// in place. A new cgroup2 mount from the initial namespace would reset
	// the host's cgroup2 options (nsdelegate) for every namespace.
	bind := len(args) > 0 && args[0] == "--bind"
	if bind {
		args = args[1:]
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return 125
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fmt.Fprintf(os.Stderr, "cgconform: making mounts private: %v\n", err)
		return 125
	}
	ms, err := cgroupMounts()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cgconform: %v\n", err)
		return 125
	}
	if bind {
		for _, m := range ms {
			if err := unix.Mount("", m.point, "", flags|unix.MS_REMOUNT|unix.MS_BIND, ""); err != nil {
				fmt.Fprintf(os.Stderr, "cgconform: remounting %s: %v\n", m.point, err)
				return 125
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
			fmt.Fprintf(os.Stderr, "cgconform: mounting %s (%s) at %s: %v\n", m.fstype, m.data, m.point, err)
			return 125
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

func parseCgroupMounts(mountinfo string) ([]cgroupMount, error) {
	var ms []cgroupMount
	for _, line := range strings.Split(mountinfo, "\n") {
		// ID parent maj:min root point options [optional...] - fstype source super
		f := strings.Fields(line)
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || len(f) < sep+4 {
			continue
		}
		m := cgroupMount{point: f[4], fstype: f[sep+1]}
		switch m.fstype {
		case "cgroup2":
		case "cgroup":
			var opts []string
			for _, o := range strings.Split(f[sep+3], ",") {
				if o != "rw" && o != "ro" {
					opts = append(opts, o)
				}
			}
			m.data = strings.Join(opts, ",")
		default:
			continue
		}
		ms = append(ms, m)
	}
	if len(ms) == 0 {
		return nil, errors.New("no cgroup hierarchy is mounted")
	}
	return ms, nil
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
