package vmrun

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/runsc-cgroups/cgconform/base/report"
)

// Disk is one NVMe namespace; all share one controller, so the guest sees
// them as nvme0n1, nvme0n2… in order, with no probe race.
type Disk struct {
	Path     string
	Snapshot bool // writes go to a throw-away overlay; the cached image stays pristine
}

// VM describes one boot.
type VM struct {
	QEMU        string // qemu-system-x86_64 unless set
	Kernel      string
	Initrd      string // empty for the disk-booted systemd images
	Cmdline     string
	Disks       []Disk
	CPUs        int
	MemoryMiB   int
	KVM         bool
	Timeout     time.Duration
	ConsoleLog  string // the whole console is saved here
	ReportPath  string // the second serial port (the results frame) is written here
	TailLines   int    // console lines kept for the failure report
	OnLine      func(line string)
	ExtraQEMU   []string
	StartMarker string // console line prefix that ends the boot phase
	// PowerOffGrace is how long qemu may stay up after the guest prints
	// "cgm: powering off" (default 1 minute): once, under TCG, poweroff -f
	// never ended, and the VM sat until its time limit with its report sent.
	PowerOffGrace time.Duration
	// Watchdog, if set, ends the guest as soon as it stops making
	// progress (Result.Stall says how), instead of waiting for Timeout.
	Watchdog *Watchdog
	// StallCheck is how often the Watchdog is asked (default 1 s).
	StallCheck time.Duration
}

// Result is what one boot produced.
type Result struct {
	Wall          time.Duration
	CPU           time.Duration // qemu's user and system time: how busy it kept the host
	Boot          time.Duration // until the payload announced itself; 0 if it never did
	TimedOut      bool
	Stall         *Stall // the Watchdog ended a guest that made no progress
	StuckPowerOff bool   // the guest powered off but qemu stayed up past PowerOffGrace
	ExitErr       error  // qemu's own exit status, if it failed
	Tail          []string
	RunningCase   string // from the last "=== RUN" line, if the harness prints them
	LastDone      string // from the last result line
}

// ParseProgress says whether a console line is one of cgconform's progress
// lines (report.Progress) that starts or ends a case, and names it ("case
// [context] runtime").
func ParseProgress(line string) (started, done string) {
	p, ok := report.ParseProgress(line)
	switch {
	case !ok:
		return "", ""
	case p.Done:
		return "", p.Name()
	}
	return p.Name(), ""
}

// UseKVM turns an -accel choice into whether to use KVM: "kvm", "tcg", or
// "auto" (or "": KVM when /dev/kvm can be opened for writing).
func UseKVM(accel string) (bool, error) {
	switch accel {
	case "kvm":
		return true, nil
	case "tcg":
		return false, nil
	case "auto", "":
		f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
		if err != nil {
			return false, nil
		}
		f.Close()
		return true, nil
	}
	return false, fmt.Errorf("-accel %q: want kvm, tcg or auto", accel)
}

// kvmProbeLimit is how long KeepKVM waits for the banner; under a working
// KVM it comes in well under a second.
const kvmProbeLimit = 20 * time.Second

// KeepKVM is "-accel auto" once the kernel is at hand: it probes KVM
// (ProbeKVM) and, when KVM cannot run a guest, says why through logf and
// returns false so the caller uses TCG. It fails only when ctx ends.
func KeepKVM(ctx context.Context, kernel string, logf func(string, ...any)) (bool, error) {
	err := ProbeKVM(ctx, "", kernel, kvmProbeLimit)
	switch {
	case err == nil:
		return true, nil
	case ctx.Err() != nil:
		return false, err
	}
	logf("/dev/kvm is there but cannot run a guest, so the VMs run under TCG (-accel kvm insists): %v", err)
	return false, nil
}

// ProbeKVM boots kernel under KVM with no disk and says whether its banner
// ("Linux version") reaches the console within limit. /dev/kvm can open on
// a host whose nested virtualization cannot run a guest: seen on AMD EPYC
// cloud machines, where qemu 7.2 with -cpu host aborts ("failed to set MSR
// 0x10a") and with any other -cpu the guest never prints a line.
func ProbeKVM(parent context.Context, qemu, kernel string, limit time.Duration) error {
	dir, err := os.MkdirTemp("", "cgm-kvm-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var banner atomic.Bool
	vm := &VM{
		QEMU: qemu, Kernel: kernel, Cmdline: "console=ttyS0 panic=-1", KVM: true,
		CPUs: 1, MemoryMiB: 256, Timeout: limit, TailLines: 2,
		ReportPath: filepath.Join(dir, "serial1"),
		OnLine: func(line string) {
			if strings.Contains(line, "Linux version") {
				banner.Store(true)
				cancel()
			}
		},
	}
	res, err := vm.Run(ctx)
	switch {
	case banner.Load():
		return nil
	case res == nil:
		return err
	case parent.Err() != nil:
		return parent.Err()
	case res.TimedOut:
		return fmt.Errorf("the guest printed nothing in %s", limit)
	}
	why := "qemu exited before the kernel printed its banner"
	if res.ExitErr != nil {
		why = fmt.Sprintf("qemu failed (%v) before the kernel printed its banner", res.ExitErr)
	}
	if len(res.Tail) > 0 {
		why += ": " + strings.Join(res.Tail, " | ")
	}
	return errors.New(why)
}

// Args is the qemu command line for the VM.
func (vm *VM) Args() []string {
	accel := "tcg,thread=multi"
	cpu := "max"
	if vm.KVM {
		accel, cpu = "kvm", "host"
	}
	cpus, mem := vm.CPUs, vm.MemoryMiB
	if cpus <= 0 {
		cpus = 2
	}
	if mem <= 0 {
		mem = 3072
	}
	args := []string{
		"-machine", "q35", "-accel", accel, "-cpu", cpu,
		"-smp", strconv.Itoa(cpus), "-m", strconv.Itoa(mem),
		"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
		"-kernel", vm.Kernel,
		"-append", vm.Cmdline,
		"-serial", "stdio",
		"-serial", "file:" + vm.ReportPath,
		"-device", "nvme,id=nvme0,serial=cgm",
	}
	if vm.Initrd != "" {
		args = append(args, "-initrd", vm.Initrd)
	}
	for i, d := range vm.Disks {
		snap := "off"
		if d.Snapshot {
			snap = "on"
		}
		args = append(args,
			"-drive", fmt.Sprintf("file=%s,if=none,id=d%d,format=raw,snapshot=%s", d.Path, i, snap),
			"-device", fmt.Sprintf("nvme-ns,drive=d%d,bus=nvme0,nsid=%d", i, i+1))
	}
	return append(args, vm.ExtraQEMU...)
}

// Run boots the VM and waits for it to power off, to fail, or to run out of
// time. qemu runs in its own process group, which is killed on every path
// out of Run, so nothing it started outlives it.
func (vm *VM) Run(ctx context.Context) (*Result, error) {
	bin := cmp.Or(vm.QEMU, "qemu-system-x86_64")
	n := vm.TailLines
	if n <= 0 {
		n = 40
	}
	marker := cmp.Or(vm.StartMarker, "cgm: start")
	timeout := vm.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Minute
	}
	var console io.Writer = io.Discard
	if vm.ConsoleLog != "" {
		f, err := os.Create(vm.ConsoleLog)
		if err != nil {
			return nil, fmt.Errorf("creating the console log: %w", err)
		}
		defer f.Close()
		console = f
	}

	cmd := exec.Command(bin, vm.Args()...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // stdin: os/exec's null device
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = pw
	cmd.Stderr = pw
	start := time.Now()
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("starting %s (apt-get install qemu-system-x86): %w", bin, err)
	}
	pw.Close()
	pgid := cmd.Process.Pid
	killGroup := func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
	defer killGroup()

	res := &Result{}
	var (
		mu      sync.Mutex
		tail    []string // the last n lines
		running string
		done    string
		boot    time.Duration
	)
	readDone := make(chan struct{})
	poweringOff := make(chan struct{})
	go func() {
		defer close(readDone)
		saidOff := false
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), "\r")
			fmt.Fprintln(console, line)
			if vm.Watchdog != nil {
				vm.Watchdog.Line(line, time.Now())
			}
			mu.Lock()
			if tail = append(tail, line); len(tail) > n {
				tail = tail[len(tail)-n:]
			}
			if boot == 0 && strings.HasPrefix(line, marker) {
				boot = time.Since(start)
			}
			if st, d := ParseProgress(line); st != "" {
				running = st
			} else if d != "" {
				done, running = d, ""
			}
			mu.Unlock()
			if line == "cgm: powering off" && !saidOff {
				saidOff = true
				close(poweringOff)
			}
			if vm.OnLine != nil {
				vm.OnLine(line)
			}
		}
	}()

	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	grace := vm.PowerOffGrace
	if grace <= 0 {
		grace = time.Minute
	}
	var stuck <-chan time.Time
	off := poweringOff
	var stallTick <-chan time.Time
	if vm.Watchdog != nil {
		vm.Watchdog.restart(start)
		every := vm.StallCheck
		if every <= 0 {
			every = time.Second
		}
		tick := time.NewTicker(every)
		defer tick.Stop()
		stallTick = tick.C
	}
loop:
	for {
		select {
		case err := <-waitDone:
			res.ExitErr = err
		case <-off:
			off, stuck = nil, time.After(grace)
			continue
		case <-stuck:
			res.StuckPowerOff = true
			killGroup()
			<-waitDone
		case now := <-stallTick:
			if res.Stall = vm.Watchdog.Stalled(now); res.Stall == nil {
				continue
			}
			killGroup()
			<-waitDone
		case <-timer.C:
			res.TimedOut = true
			killGroup()
			<-waitDone
		case <-ctx.Done():
			killGroup()
			<-waitDone
			res.ExitErr = ctx.Err()
		}
		break loop
	}
	// Anything qemu forked keeps the pipe open; the group kill ends it.
	killGroup()
	select {
	case <-readDone:
	case <-time.After(5 * time.Second):
	}
	pr.Close()
	res.Wall = time.Since(start)
	if st := cmd.ProcessState; st != nil {
		res.CPU = st.UserTime() + st.SystemTime()
	}
	mu.Lock()
	res.Tail = slices.Clone(tail)
	res.Boot, res.RunningCase, res.LastDone = boot, running, done
	mu.Unlock()
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("VM stopped: %w", err)
	}
	return res, nil
}

// Describe explains an unfinished harness VM: why it stopped, which case
// was running, and the last console lines.
func (r *Result) Describe(mode string, timeout time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "mode %s: %s", mode, r.Stopped(timeout))
	switch {
	case r.RunningCase != "":
		fmt.Fprintf(&b, "; case running: %s", r.RunningCase)
	case r.LastDone != "":
		fmt.Fprintf(&b, "; last case finished: %s (the next one in case order was running)", r.LastDone)
	default:
		b.WriteString("; no case had finished")
	}
	b.WriteString("\n")
	b.WriteString(r.ConsoleTail())
	return b.String()
}

// Stopped says why a VM ended without sending its results.
func (r *Result) Stopped(timeout time.Duration) string {
	switch {
	case r.Stall != nil:
		return "guest stalled, VM killed: " + r.Stall.String()
	case r.TimedOut:
		return fmt.Sprintf("VM killed after its %s time limit", timeout)
	case r.ExitErr != nil:
		return fmt.Sprintf("qemu failed: %v", r.ExitErr)
	}
	return "VM powered off without sending its results"
}

// ConsoleTail is the last console lines, one indented line each.
func (r *Result) ConsoleTail() string {
	var b strings.Builder
	fmt.Fprintf(&b, "last %d console lines:\n", len(r.Tail))
	for _, l := range r.Tail {
		fmt.Fprintf(&b, "  | %s\n", l)
	}
	return b.String()
}
