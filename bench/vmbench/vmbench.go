// Package vmbench runs cgbench inside a throw-away QEMU VM of one cgroup
// mode and brings its report back. It reuses the matrix's tooling: the
// cached Debian kernel, busybox initramfs and systemd disk of ci/vmimage
// (built on first use in out/cache/vm), a payload disk whose command runs
// cgbench instead of the harness, the framed results on the VM's second
// serial port (or the payload disk), and ci/vmrun's time limit, which kills
// qemu's whole process group on every way out. The systemd modes boot the
// matrix's Debian disk (snapshot, never written) with the real clients on
// the payload, for the CRI scenario.
package vmbench

import (
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/ci/vmimage"
	"github.com/runsc-cgroups/cgconform/ci/vmrun"
	"github.com/runsc-cgroups/cgconform/clients"
)

// Options says what runs in which VM.
type Options struct {
	// Mode is a busybox mode of ci/vmimage: v1, hybrid or v2.
	Mode string
	// CacheDir is the matrix's image cache (out/cache/vm).
	CacheDir  string
	KernelPkg string // "" for vmimage.DefaultKernelPkg
	// Dir receives console.log, qemu-args.txt and what cgbench wrote in
	// the VM (report.json, report.md, logs of failed commands).
	Dir string
	// Cgbench is a statically linked cgbench; Stock and Patched are the
	// runsc binaries. All three go on the payload disk.
	Cgbench, Stock, Patched string
	// Clients are more binaries for the payload's bin folder, by name
	// (containerd, crictl, the runsc shims: make clients); the systemd
	// modes need them (cgbench -only cri finds them next to runsc).
	Clients map[string]string
	// Args are cgbench's measuring flags in the VM; Run adds where the
	// binaries, busybox and the output folder are.
	Args      []string
	CPUs      int
	MemoryMiB int
	KVM       bool
	ProbeKVM  bool // check that KVM can run a guest first, else fall back to TCG ("-accel auto")
	Timeout   time.Duration
	// Log receives progress lines, and every console line prefixed with
	// the mode.
	Log io.Writer
}

// Result is what came back.
type Result struct {
	// Report is the report.json cgbench wrote in the VM; nil when none
	// came back.
	Report []byte
	// Exit is cgbench's exit status in the VM, -1 when it never told.
	Exit       int
	Boot, Wall time.Duration
	// Problem says why no report came back: the VM timed out, crashed or
	// powered off early, with its last console lines.
	Problem string
	// Where describes the VM for the report.
	Where string
}

// In the VM: the payload is mounted at /payload and the busybox initramfs
// has /bin/busybox.
const (
	payloadBin = "/payload/bin/"
	vmBusybox  = "/bin/busybox"
)

// Command is the payload script: cgbench measures the VM as its host (a
// throw-away one) and writes its report into $CGM_OUT, which cgm-run
// frames back. Its progress goes to the console; its tables to a file.
func Command(args []string) string {
	full := append([]string{payloadBin + "cgbench"}, args...)
	full = append(full,
		"-stock", payloadBin+"runsc-stock", "-patched", payloadBin+"runsc-patched",
		"-busybox", vmBusybox, "-conformance-report=", "-matrix-report=", "-throwaway")
	var q []string
	for _, a := range full {
		q = append(q, clients.ShellQuote(a))
	}
	return "# cgbench in a throw-away VM, written by bench/vmbench.\n" +
		"cd /run/cgm || exit 1\n" +
		strings.Join(q, " ") + ` -out "$CGM_OUT" >"$CGM_OUT/cgbench.md"` + "\n" +
		"rc=$?\necho \"cgbench: exit=$rc\"\nexit $rc\n"
}

// WithBudget adds -budget to cgbench's flags, unless they have one: the VM's
// time limit less a margin for booting and cleaning up, so that cgbench
// stops in time and reports what it measured instead of being killed with
// the VM.
func WithBudget(args []string, limit time.Duration) []string {
	for _, a := range args {
		if a == "-budget" || strings.HasPrefix(a, "-budget=") || a == "--budget" || strings.HasPrefix(a, "--budget=") {
			return args
		}
	}
	margin := min(10*time.Minute, limit/3)
	return append(append([]string(nil), args...), "-budget", (limit - margin).String())
}

// CheckStatic fails unless path is a statically linked ELF executable: the
// busybox initramfs has no Go toolchain and only the libraries runc and
// crun need.
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s is not an ELF executable: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked: build cgbench with CGO_ENABLED=0 for the VM (make bench does)", path)
		}
	}
	return nil
}

// Run builds or takes the cached images, boots the VM and collects what
// cgbench left. An error means the VM could not be set up; a VM that ran
// but sent nothing is a Result with a Problem.
func Run(ctx context.Context, o Options) (*Result, error) {
	mode, err := vmimage.ModeByName(o.Mode)
	if err != nil {
		return nil, err
	}
	if mode.Base == vmimage.BaseSystemd && len(o.Clients) == 0 {
		return nil, fmt.Errorf("mode %s is for the CRI scenario: it needs the clients on the payload (build them with make clients)", o.Mode)
	}
	if err := CheckStatic(o.Cgbench); err != nil {
		return nil, err
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "vm-%s: "+format+"\n", append([]any{o.Mode}, args...)...)
		}
	}
	if err := os.RemoveAll(o.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}

	b := &vmimage.Builder{CacheDir: o.CacheDir, KernelPkg: o.KernelPkg, Log: o.Log}
	unlock, err := b.Lock()
	if err != nil {
		return nil, err
	}
	// The lock only guards building the images, as in the matrix.
	kernel, err := b.Kernel(ctx)
	var base string
	if err == nil {
		if mode.Base == vmimage.BaseSystemd {
			base, err = b.SystemdDisk(ctx)
		} else {
			base, err = b.BusyboxInitramfs(ctx)
		}
	}
	unlock()
	if err != nil {
		return nil, fmt.Errorf("the VM images (cached in %s): %w", o.CacheDir, err)
	}
	if o.KVM && o.ProbeKVM {
		if o.KVM, err = vmrun.KeepKVM(ctx, kernel, logf); err != nil {
			return nil, err
		}
	}
	p := vmimage.Payload{
		Bins:    map[string]string{"cgbench": o.Cgbench, "runsc-stock": o.Stock, "runsc-patched": o.Patched},
		Command: Command(WithBudget(o.Args, o.Timeout)),
	}
	for name, path := range o.Clients {
		if _, ours := p.Bins[name]; !ours {
			p.Bins[name] = path
		}
	}
	staged, err := p.Stage(filepath.Join(o.Dir, "payload"))
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staged.Dir)
	vm := &vmrun.VM{
		Kernel:     kernel,
		CPUs:       o.CPUs,
		MemoryMiB:  o.MemoryMiB,
		KVM:        o.KVM,
		Timeout:    o.Timeout,
		ConsoleLog: filepath.Join(o.Dir, "console.log"),
		ReportPath: filepath.Join(o.Dir, "serial-report.txt"),
		TailLines:  40,
		OnLine: func(line string) {
			if o.Log != nil && strings.TrimSpace(line) != "" {
				fmt.Fprintf(o.Log, "[vm-%s] %s\n", o.Mode, line)
			}
		},
	}
	accel := "QEMU TCG (no KVM)"
	if o.KVM {
		accel = "QEMU KVM"
	}
	res := &Result{Exit: -1, Where: fmt.Sprintf("%s VM, mode %s, %d vCPUs, %d MiB, kernel %s", accel, o.Mode, vm.CPUs, vm.MemoryMiB, filepath.Base(filepath.Dir(kernel)))}
	logf("booting: %s, time limit %s; console in %s", res.Where, o.Timeout, vm.ConsoleLog)
	booted, err := vmimage.Boot(ctx, vm, mode, base, "", staged, o.Dir)
	if err != nil {
		return nil, err
	}
	run := booted.Run
	if run != nil {
		res.Boot, res.Wall = run.Boot, run.Wall
	}
	switch {
	case booted.RunErr != nil:
		res.Problem = booted.RunErr.Error()
		return res, nil
	case booted.CollectErr != nil:
		res.Problem = run.Stopped(o.Timeout) + "; " + run.ConsoleTail() + booted.CollectErr.Error()
		return res, nil
	}
	if err := vmrun.WriteFiles(o.Dir, booted.Files); err != nil {
		return nil, fmt.Errorf("saving the VM's results in %s: %w", o.Dir, err)
	}
	res.Exit = booted.Exit
	res.Report = booted.Files["report.json"]
	switch {
	case res.Report == nil:
		res.Problem = fmt.Sprintf("the VM sent its results without report.json (cgbench exit %d); see %s and %s", res.Exit, filepath.Join(o.Dir, "cgbench.md"), vm.ConsoleLog)
	case run.TimedOut:
		res.Problem = fmt.Sprintf("the VM hit its %s limit after sending its results", o.Timeout)
	}
	logf("done in %s (boot %s), cgbench exit %d", res.Wall.Round(time.Second), res.Boot.Round(time.Second), res.Exit)
	return res, nil
}
