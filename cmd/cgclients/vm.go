package main

import (
	"context"
	"debug/elf"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/ci/vmimage"
	"github.com/runsc-cgroups/cgconform/ci/vmrun"
	"github.com/runsc-cgroups/cgconform/clients/build"
)

// vmCommand is the payload script: cgclients prove once per driver, each
// report in $CGM_OUT/<driver>/.
func vmCommand(drivers []string, proveArgs string) string {
	var b strings.Builder
	b.WriteString("# cgclients in a throw-away VM, written by cgclients vm.\ncd /run/cgm || exit 1\nP=/payload/bin\nrc=0\n")
	for _, d := range drivers {
		flag := ""
		if d == "systemd" {
			flag = " -systemd-cgroup"
		}
		fmt.Fprintf(&b, "echo \"cgclients: prove driver %s\"\n", d)
		// Progress on the console as it happens, the report in a file.
		fmt.Fprintf(&b, "{ $P/cgclients prove -bin $P -busybox /bin/busybox%s %s -out \"$CGM_OUT/%s\" >\"$CGM_OUT/%s.md\"; echo $? >\"$CGM_OUT/%s.rc\"; } 2>&1 | tee \"$CGM_OUT/%s.log\"\n", flag, proveArgs, d, d, d, d)
		fmt.Fprintf(&b, "[ \"$(cat \"$CGM_OUT/%s.rc\")\" = 0 ] || rc=1\n", d)
	}
	b.WriteString("echo \"cgclients: exit=$rc\"\nexit $rc\n")
	return b.String()
}

func cmdVM(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("vm", flag.ExitOnError)
	mode := fs.String("mode", "systemd-v2", "matrix mode (ci/vmimage): systemd-v2, systemd-v1, hybrid, v1, v2")
	drivers := fs.String("drivers", "", "cgroup drivers, comma separated (default: systemd,cgroupfs in systemd modes, cgroupfs elsewhere)")
	binDir := fs.String("bin", "bin", "folder with the built clients (make clients) and a static bin/cgclients")
	out := fs.String("out", "out/clients/vm", "results folder")
	cache := fs.String("cache", "out/cache/vm", "the matrix's image cache")
	prove := fs.String("prove-args", "-scenarios cri", "more cgclients prove flags, blank separated")
	timeout := fs.Duration("timeout", 45*time.Minute, "the VM's time limit")
	cpus := fs.Int("cpus", 2, "vCPUs")
	mem := fs.Int("mem", 4096, "memory MiB")
	prepare := fs.Bool("prepare", false, "only build (or find) the mode's images, boot nothing")
	fs.Parse(args)

	m, err := vmimage.ModeByName(*mode)
	if err != nil {
		return err
	}
	ds := split(*drivers)
	if len(ds) == 0 {
		ds = []string{"cgroupfs"}
		if m.Base == vmimage.BaseSystemd {
			ds = []string{"systemd", "cgroupfs"}
		}
	}
	proveArgs := *prove
	if m.Base == vmimage.BaseSystemd {
		// A real node: containerd in its unit's cgroup, pods at the
		// kubelet's default root.
		proveArgs += " -tree=false"
	}
	bins, err := build.Find(*binDir)
	if err != nil {
		return err
	}
	self := filepath.Join(*binDir, "cgclients")
	for _, p := range append(bins.Paths(), self) {
		if err := checkStatic(p); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(*out); err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	cacheDir, err := filepath.Abs(*cache) // the builder runs tools in other folders
	if err != nil {
		return err
	}
	b := &vmimage.Builder{CacheDir: cacheDir, Log: os.Stderr}
	unlock, err := b.Lock()
	if err != nil {
		return err
	}
	kernel, err := b.Kernel(ctx)
	var base string
	if err == nil {
		if m.Base == vmimage.BaseSystemd {
			base, err = b.SystemdDisk(ctx)
		} else {
			base, err = b.BusyboxInitramfs(ctx)
		}
	}
	unlock()
	if err != nil {
		return fmt.Errorf("the VM images: %w", err)
	}
	if *prepare {
		fmt.Fprintf(os.Stderr, "cgclients: images ready: %s %s\n", kernel, base)
		return nil
	}
	p := vmimage.Payload{Bins: map[string]string{"cgclients": self}, Command: vmCommand(ds, proveArgs)}
	for _, path := range bins.Paths() {
		p.Bins[filepath.Base(path)] = path
	}
	staged, err := p.Stage(filepath.Join(*out, "payload"))
	if err != nil {
		return err
	}
	disk, err := staged.Disk(ctx, *out)
	os.RemoveAll(staged.Dir)
	if err != nil {
		return err
	}
	defer os.Remove(disk)
	cmdline := []string{"console=ttyS0", "panic=-1", "loglevel=4"}
	vm := &vmrun.VM{
		Kernel: kernel, CPUs: *cpus, MemoryMiB: *mem, Timeout: *timeout,
		ConsoleLog: filepath.Join(*out, "console.log"),
		ReportPath: filepath.Join(*out, "serial-report.txt"),
		TailLines:  40,
		OnLine: func(line string) {
			if strings.TrimSpace(line) != "" {
				fmt.Fprintf(os.Stderr, "[vm-%s] %s\n", *mode, line)
			}
		},
	}
	if m.Base == vmimage.BaseSystemd {
		vm.Disks = []vmrun.Disk{{Path: base, Snapshot: true}, {Path: disk}}
		cmdline = append(cmdline, "root=/dev/nvme0n1", "rw", "rootfstype=ext4", "systemd.show_status=0", "quiet", "cgm.payload=/dev/nvme0n2")
	} else {
		vm.Initrd = base
		vm.Disks = []vmrun.Disk{{Path: disk}}
		cmdline = append(cmdline, "rdinit=/init", "cgm.payload=/dev/nvme0n1")
	}
	vm.Cmdline = strings.Join(append(cmdline, m.Cmdline...), " ")
	fmt.Fprintf(os.Stderr, "cgclients: booting %s (TCG unless -accel says otherwise), limit %s, console %s\n", *mode, *timeout, vm.ConsoleLog)
	res, err := vm.Run(ctx)
	if err != nil {
		return fmt.Errorf("the VM: %w", err)
	}
	files, err := vmimage.Collect(ctx, vm.ReportPath, disk)
	if err != nil {
		return fmt.Errorf("%s; %s%w", res.Stopped(*timeout), res.ConsoleTail(), err)
	}
	if err := vmrun.WriteFiles(*out, files); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "cgclients: VM done in %s (boot %s); results in %s\n", res.Wall.Round(time.Second), res.Boot.Round(time.Second), *out)
	for _, d := range ds {
		if md, ok := files[d+".md"]; ok {
			fmt.Printf("## %s, driver %s\n\n%s\n", *mode, d, md)
		}
	}
	if rc := strings.TrimSpace(string(files["exit-code"])); rc != "0" {
		return fmt.Errorf("cgclients in the VM exited %s (see %s)", rc, *out)
	}
	return nil
}

// checkStatic fails unless path is a statically linked executable: the
// VMs have no Go toolchain and the busybox image no libc.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w (make clients builds it)", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked: build it with CGO_ENABLED=0", path)
		}
	}
	return nil
}
