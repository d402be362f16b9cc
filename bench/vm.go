package bench

// A VM section of make bench runs cgbench inside a throw-away QEMU VM of
// one cgroup mode, booted the matrix's way (ci/vmimage.Boot): the cached
// Debian kernel, busybox initramfs or systemd disk of ci/vmimage (built on
// first use in out/cache/vm), a payload disk whose command runs cgbench
// instead of the harness, the framed results on the VM's second serial
// port (or the payload disk), and ci/vmrun's time limit, which kills qemu's
// whole process group on every way out. The systemd modes boot with the
// real clients on the payload, for the CRI scenario.

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/ci/vmimage"
	"github.com/runsc-cgroups/cgconform/ci/vmrun"
	"github.com/runsc-cgroups/cgconform/clients"
)

// In the VM: the payload is mounted at /payload and the busybox initramfs
// has /bin/busybox.
const (
	payloadBin = "/payload/bin/"
	vmBusybox  = "/bin/busybox"
)

// vmCommand is the payload script: cgbench measures the VM as its host (a
// throw-away one) and writes its report into $CGM_OUT, which cgm-run
// frames back. Its progress goes to the console; its tables to a file.
func vmCommand(args []string) string {
	full := append([]string{payloadBin + "cgbench"}, args...)
	full = append(full,
		"-stock", payloadBin+"runsc-stock", "-patched", payloadBin+"runsc-patched",
		"-busybox", vmBusybox, "-conformance-report=", "-matrix-report=", "-throwaway")
	var q []string
	for _, a := range full {
		q = append(q, clients.ShellQuote(a))
	}
	return "# cgbench in a throw-away VM, written by cgbench suite.\n" +
		"cd /run/cgm || exit 1\n" +
		strings.Join(q, " ") + ` -out "$CGM_OUT" >"$CGM_OUT/cgbench.md"` + "\n" +
		"rc=$?\necho \"cgbench: exit=$rc\"\nexit $rc\n"
}

// withBudget adds -budget to cgbench's flags, unless they have one: the VM's
// time limit less a margin for booting and cleaning up, so that cgbench
// stops in time and reports what it measured instead of being killed with
// the VM.
func withBudget(args []string, limit time.Duration) []string {
	for _, a := range args {
		if a == "-budget" || strings.HasPrefix(a, "-budget=") || a == "--budget" || strings.HasPrefix(a, "--budget=") {
			return args
		}
	}
	margin := min(10*time.Minute, limit/3)
	return append(append([]string(nil), args...), "-budget", (limit - margin).String())
}

// checkStatic fails unless path is a statically linked ELF executable: the
// busybox initramfs has no Go toolchain and only the libraries runc and
// crun need.
func checkStatic(path string) error {
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

// runVM boots the VM of mode with this cgbench (args its measuring flags,
// limit its time limit, bins more binaries for its payload) and fills sec
// from what came back. An error means the VM could not be set up; a VM
// that ran but sent nothing leaves sec.Problem saying why.
func runVM(ctx context.Context, o *suiteOpts, name string, args []string, limit time.Duration, bins map[string]string, sec *Section) error {
	mode, err := vmimage.ModeByName(name)
	if err != nil {
		return err
	}
	if mode.Base == vmimage.BaseSystemd && len(bins) == 0 {
		return fmt.Errorf("mode %s is for the CRI scenario: it needs the clients on the payload (build them with make clients)", name)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if err := checkStatic(exe); err != nil {
		return err
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "vm-%s: "+format+"\n", append([]any{name}, args...)...)
	}
	if err := os.RemoveAll(sec.Dir); err != nil {
		return err
	}
	if err := os.MkdirAll(sec.Dir, 0o755); err != nil {
		return err
	}
	cache, err := filepath.Abs(vmCache)
	if err != nil {
		return err
	}
	b := &vmimage.Builder{CacheDir: cache, Log: os.Stderr}
	unlock, err := b.Lock()
	if err != nil {
		return err
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
		return fmt.Errorf("the VM images (cached in %s): %w", cache, err)
	}
	kvm := o.kvm
	if kvm && o.accel != "kvm" {
		if kvm, err = vmrun.KeepKVM(ctx, kernel, logf); err != nil {
			return err
		}
	}
	p := vmimage.Payload{
		Bins:    map[string]string{"cgbench": exe, "runsc-stock": o.stock, "runsc-patched": o.patched},
		Command: vmCommand(withBudget(args, limit)),
	}
	for name, path := range bins {
		if _, ours := p.Bins[name]; !ours {
			p.Bins[name] = path
		}
	}
	staged, err := p.Stage(filepath.Join(sec.Dir, "payload"))
	if err != nil {
		return err
	}
	defer os.RemoveAll(staged.Dir)
	vm := &vmrun.VM{
		Kernel: kernel, CPUs: o.vmCPUs, MemoryMiB: o.vmMem, KVM: kvm, Timeout: limit,
		ConsoleLog: filepath.Join(sec.Dir, "console.log"),
		ReportPath: filepath.Join(sec.Dir, "serial-report.txt"),
		OnLine: func(line string) {
			if strings.TrimSpace(line) != "" {
				fmt.Fprintf(os.Stderr, "[vm-%s] %s\n", name, line)
			}
		},
	}
	accel := "QEMU TCG (no KVM)"
	if kvm {
		accel = "QEMU KVM"
	}
	where := fmt.Sprintf("%s VM, mode %s, %d vCPUs, %d MiB, kernel %s", accel, name, vm.CPUs, vm.MemoryMiB, filepath.Base(filepath.Dir(kernel)))
	logf("booting: %s, time limit %s; console in %s", where, limit, vm.ConsoleLog)
	booted, err := vmimage.Boot(ctx, vm, mode, base, "", staged, sec.Dir)
	if err != nil {
		return err
	}
	if booted.RunErr == nil && booted.CollectErr == nil {
		if err := vmrun.WriteFiles(sec.Dir, booted.Files); err != nil {
			return fmt.Errorf("saving the VM's results in %s: %w", sec.Dir, err)
		}
	}
	run := booted.Run
	if run != nil {
		sec.BootSeconds = run.Boot.Seconds()
	}
	sec.Where = where
	switch {
	case booted.RunErr != nil:
		sec.Problem = booted.RunErr.Error()
		return nil
	case booted.CollectErr != nil:
		sec.Problem = run.Stopped(limit) + "; " + run.ConsoleTail() + booted.CollectErr.Error()
		return nil
	}
	sec.Exit = booted.Exit
	report := booted.Files["report.json"]
	switch {
	case report == nil:
		sec.Problem = fmt.Sprintf("the VM sent its results without report.json (cgbench exit %d); see %s and %s", sec.Exit, filepath.Join(sec.Dir, "cgbench.md"), vm.ConsoleLog)
	case run.TimedOut:
		sec.Problem = fmt.Sprintf("the VM hit its %s limit after sending its results", limit)
	}
	if report != nil {
		if r, err := ReadReport(report); err != nil {
			sec.Problem = strings.TrimSpace(sec.Problem + "\nthe VM's report.json is unreadable: " + err.Error())
		} else {
			sec.Report = r
		}
	}
	return nil
}
