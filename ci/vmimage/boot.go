package vmimage

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/ci/vmrun"
)

// Booted is what one VM brought back.
type Booted struct {
	Run    *vmrun.Result // nil when qemu did not run
	RunErr error         // vm.Run's error: qemu could not start or crashed
	// Files are the results the payload sent (Collect), nil with
	// CollectErr when none came back.
	Files      map[string][]byte
	CollectErr error
	Exit       int           // the payload's exit code; -1 when it never said
	Disk       time.Duration // making the payload disk
}

// Setup fills in how mode m boots: a busybox mode from its initramfs
// (base) with the payload as its disk, after debian's disk when one is
// lent (its Docker and Podman, files/init); a systemd mode from the Debian
// disk base (a snapshot: the cached image is never written) with the
// payload second. args go last on the kernel command line.
func Setup(vm *vmrun.VM, m Mode, base, debian, payload string, args ...string) {
	cmdline := []string{"console=ttyS0", "panic=-1", "loglevel=4"}
	switch {
	case m.Base == BaseSystemd:
		vm.Disks = []vmrun.Disk{{Path: base, Snapshot: true}, {Path: payload}}
		cmdline = append(cmdline, "root=/dev/nvme0n1", "rw", "rootfstype=ext4", "systemd.show_status=0", "quiet", "cgm.payload=/dev/nvme0n2")
	case debian != "":
		vm.Initrd = base
		vm.Disks = []vmrun.Disk{{Path: debian, Snapshot: true}, {Path: payload}}
		cmdline = append(cmdline, "rdinit=/init", "cgm.payload=/dev/nvme0n2", "cgm.debian=/dev/nvme0n1")
	default:
		vm.Initrd = base
		vm.Disks = []vmrun.Disk{{Path: payload}}
		cmdline = append(cmdline, "rdinit=/init", "cgm.payload=/dev/nvme0n1")
	}
	vm.Cmdline = strings.Join(append(append(cmdline, m.Cmdline...), args...), " ")
}

// Boot runs one VM of mode m, the one way the matrix and the bench boot
// theirs: the staged payload made into dir/payload.ext4, the VM set up
// (Setup) and its qemu command line kept in dir/qemu-args.txt, then run,
// and what the payload sent collected; the payload disk is removed after.
// vm carries what differs (kernel, CPUs, memory, time limit, console and
// report paths, line handler). An error means the VM could not be set up;
// a VM that ran and sent nothing is a Booted with RunErr or CollectErr.
func Boot(ctx context.Context, vm *vmrun.VM, m Mode, base, debian string, payload *Staged, dir string, args ...string) (*Booted, error) {
	t0 := time.Now()
	disk, err := payload.Disk(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer os.Remove(disk)
	b := &Booted{Exit: -1, Disk: time.Since(t0)}
	Setup(vm, m, base, debian, disk, args...)
	if err := os.WriteFile(filepath.Join(dir, "qemu-args.txt"), []byte(strings.Join(vm.Args(), "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	if b.Run, b.RunErr = vm.Run(ctx); b.RunErr != nil {
		return b, nil
	}
	if b.Files, b.CollectErr = Collect(ctx, vm.ReportPath, disk); b.CollectErr != nil {
		return b, nil
	}
	if rc, err := strconv.Atoi(strings.TrimSpace(string(b.Files["exit-code"]))); err == nil {
		b.Exit = rc
	}
	return b, nil
}
