package vmimage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/ci/vmrun"
)

// Boot is one VM of a host mode, booted the way the matrix boots it (and
// cgbench's VMs with it): a busybox mode from its initramfs with the
// payload as its disk, or with the Debian disk first when it lends Docker
// and Podman; a systemd mode from the Debian disk with the payload as the
// second disk. The base disks are snapshots: the cached images are never
// written.
type Boot struct {
	Mode   Mode
	Kernel string
	// Base is the mode's base image: the busybox initramfs or the systemd
	// disk.
	Base string
	// Debian, for a busybox mode, is the systemd disk that lends it Docker
	// and Podman (files/init); "" leaves it out.
	Debian string
	// KernelArgs go on the kernel command line after the mode's own.
	KernelArgs []string
	CPUs       int
	MemoryMiB  int
	KVM        bool
	Timeout    time.Duration
	// Dir receives payload.ext4, qemu-args.txt, console.log and
	// serial-report.txt; Run empties it first.
	Dir    string
	OnLine func(line string)
	// Stall, if not nil, is the stall bound of each case (vmrun.Watchdog).
	Stall func(running string) time.Duration
	QEMU  string // qemu-system-x86_64 unless set
}

// Booted is what one boot left.
type Booted struct {
	// Disk is the payload disk: the results are on it when the serial
	// frame did not arrive. The caller removes it.
	Disk string
	// PayloadTime is the time to make Disk.
	PayloadTime time.Duration
	VM          *vmrun.VM
	// Result is nil when qemu never ran; RunErr is vm.Run's error (qemu
	// did not start, or ctx ended).
	Result *vmrun.Result
	RunErr error
	// Files are the results the VM sent (Collect), nil when none came
	// back; CollectErr says why.
	Files      map[string][]byte
	CollectErr error
}

// VM is the qemu VM of b with payload as its payload disk.
func (b *Boot) VM(payload string) *vmrun.VM {
	cmdline := []string{"console=ttyS0", "panic=-1", "loglevel=4"}
	vm := &vmrun.VM{
		QEMU:       b.QEMU,
		Kernel:     b.Kernel,
		CPUs:       b.CPUs,
		MemoryMiB:  b.MemoryMiB,
		KVM:        b.KVM,
		Timeout:    b.Timeout,
		ConsoleLog: filepath.Join(b.Dir, "console.log"),
		ReportPath: filepath.Join(b.Dir, "serial-report.txt"),
		OnLine:     b.OnLine,
	}
	if b.Stall != nil {
		vm.Watchdog = vmrun.NewWatchdog(time.Now(), b.Stall)
	}
	switch b.Mode.Base {
	case BaseBusybox:
		vm.Initrd = b.Base
		vm.Disks = []vmrun.Disk{{Path: payload}}
		cmdline = append(cmdline, "rdinit=/init", "cgm.payload=/dev/nvme0n1")
		if b.Debian != "" {
			// The systemd disk lends Docker and Podman (files/init).
			vm.Disks = []vmrun.Disk{{Path: b.Debian, Snapshot: true}, {Path: payload}}
			cmdline = append(cmdline[:len(cmdline)-1], "cgm.payload=/dev/nvme0n2", "cgm.debian=/dev/nvme0n1")
		}
	case BaseSystemd:
		vm.Disks = []vmrun.Disk{{Path: b.Base, Snapshot: true}, {Path: payload}}
		cmdline = append(cmdline, "root=/dev/nvme0n1", "rw", "rootfstype=ext4", "systemd.show_status=0", "quiet",
			"cgm.payload=/dev/nvme0n2")
	}
	vm.Cmdline = strings.Join(append(append(cmdline, b.Mode.Cmdline...), b.KernelArgs...), " ")
	return vm
}

// Run empties Dir, makes the payload disk of p in it, writes the qemu
// command line to qemu-args.txt, boots the VM and, when it ran, collects
// the results it sent. The error is a failure to set the VM up (then
// Booted holds what was done); a VM that ran and failed is in Booted.
func (b *Boot) Run(ctx context.Context, p *Staged) (*Booted, error) {
	out := &Booted{}
	if err := os.RemoveAll(b.Dir); err != nil {
		return out, err
	}
	if err := os.MkdirAll(b.Dir, 0o755); err != nil {
		return out, err
	}
	t0 := time.Now()
	disk, err := p.Disk(ctx, b.Dir)
	out.PayloadTime = time.Since(t0)
	if err != nil {
		return out, err
	}
	out.Disk = disk
	out.VM = b.VM(disk)
	if err := os.WriteFile(filepath.Join(b.Dir, "qemu-args.txt"), []byte(strings.Join(out.VM.Args(), "\n")+"\n"), 0o644); err != nil {
		return out, err
	}
	out.Result, out.RunErr = out.VM.Run(ctx)
	if out.RunErr != nil {
		return out, nil
	}
	out.Files, out.CollectErr = Collect(ctx, out.VM.ReportPath, disk)
	return out, nil
}
