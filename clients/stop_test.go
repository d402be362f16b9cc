package clients

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runsc-cgroups/cgconform/harness/proc"
)

// doubleFork runs `sh -c 'CMD & echo $!'` and names the backgrounded
// process, which outlives its parent (as a shim that daemonizes does).
func doubleFork(t *testing.T, setpgid bool, argv string) (daemon, child proc.Process) {
	t.Helper()
	cmd := exec.Command("sh", "-c", argv+" >/dev/null 2>&1 & echo $!")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: setpgid}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if daemon, err = proc.Identify(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 32)
	n, _ := out.Read(b)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil {
		t.Fatalf("sh printed %q", b[:n])
	}
	if child, err = proc.Identify(pid); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range append(proc.Descendants(proc.All(), child.PID), proc.Stat{PID: child.PID, Start: child.Start}) {
			if p := proc.Of(p); p.Signal(unix.SIGKILL) == nil {
				p.Wait(nil, 5*time.Second)
				p.Reap()
			}
		}
	})
	return daemon, child
}

// Stop kills, by PID, what a daemon's shim left after double-forking
// (adopted by us as a subreaper), and never a process that merely names
// the base folder on its command line (issue 48: it used to SIGKILL any
// such process on the machine).
func TestStopKillsTheFamilyNotStrangers(t *testing.T) {
	if _, err := os.Stat(ShimSocketDir); err == nil {
		t.Skip(ShimSocketDir + " exists: a containerd runs here, and Stop would remove the shim sockets it makes meanwhile")
	}
	for _, kind := range []string{"containerd", Docker} {
		t.Run(kind, func(t *testing.T) {
			base, err := os.MkdirTemp("", "cgclients-stop-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(base) })
			// A stranger's process naming our base, started before we
			// were a subreaper: it descends from init, not from us (or,
			// if a test before made us one, predates the family).
			_, stranger := doubleFork(t, true, "exec sh -c 'sleep 60; true' "+base+"/containerd.sock")
			time.Sleep(50 * time.Millisecond) // a clock tick (10 ms) later
			if err := proc.Subreaper(); err != nil {
				t.Skip("no PR_SET_CHILD_SUBREAPER:", err)
			}
			// The daemon's shim, double-forked into its own group.
			daemon, shim := doubleFork(t, true, "sleep 60")
			if s, err := proc.ReadStat(shim.PID); err != nil || s.PPID != os.Getpid() {
				t.Fatalf("the double-forked sleep was not adopted: %+v %v", s, err)
			}
			var killed []int
			switch kind {
			case "containerd":
				c := &Containerd{Layout: Layout{Base: base}, exited: make(chan struct{}), daemon: daemon, shimRun: noteShimRun()}
				r := c.Stop()
				for _, p := range r.Killed {
					killed = append(killed, p.PID)
				}
				if len(r.Errors) > 0 {
					t.Errorf("Stop: %v", r.Errors)
				}
			default:
				e := &Engine{Kind: kind, Base: base, since: daemon.Start, shimRun: noteShimRun()}
				if errs := e.Stop(); len(errs) > 0 {
					t.Errorf("Stop: %v", errs)
				}
			}
			if shim.Alive() {
				t.Errorf("the adopted shim %d survived Stop", shim.PID)
			}
			if kind == "containerd" && (len(killed) != 1 || killed[0] != shim.PID) {
				t.Errorf("Stop killed %v, want [%d]", killed, shim.PID)
			}
			if !stranger.Alive() {
				t.Errorf("Stop killed the stranger %d, which only names %s", stranger.PID, base)
			}
			if _, err := os.Stat(base); err == nil {
				t.Errorf("Stop left %s", base)
			}
		})
	}
}
