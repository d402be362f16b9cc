package vmrun

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a fake qemu-system-x86_64: run with
// CGM_FAKE_QEMU set, it behaves as that scenario says and never returns to
// the tests.
func TestMain(m *testing.M) {
	if sc := os.Getenv("CGM_FAKE_QEMU"); sc != "" {
		os.Exit(fakeQEMU(sc, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeQEMU prints a boot and a few harness lines. "hang" then starts a
// grandchild (as a stuck sandbox would) and sleeps forever; "report" frames
// a result on the second serial port and powers off; "crash" exits 1;
// "kvm-abort" and "silent" never print the banner, as a qemu whose KVM
// cannot run a guest.
func fakeQEMU(scenario string, args []string) int {
	var reportPath string
	for i, a := range args {
		if a == "-serial" && i+1 < len(args) && strings.HasPrefix(args[i+1], "file:") {
			reportPath = strings.TrimPrefix(args[i+1], "file:")
		}
	}
	switch scenario {
	case "kvm-abort": // qemu 7.2, -cpu host, nested KVM on AMD EPYC
		fmt.Fprintln(os.Stderr, "qemu-system-x86_64: error: failed to set MSR 0x10a to 0x69")
		return 134
	case "silent": // the guest never gets to print
		time.Sleep(10 * time.Minute)
		return 0
	}
	fmt.Println("[    0.000000] Linux version 6.1.0-50-cloud-amd64")
	fmt.Println("cgm: start mode=v2 uptime=2.5")
	fmt.Println("pass delete-force                                 [host]               runsc-patched     5.6s ")
	fmt.Println("=== RUN parallel-32 [host] runsc-stock")
	switch scenario {
	case "hang":
		child := exec.Command("sleep", "600")
		if err := child.Start(); err != nil {
			fmt.Println("fake qemu: cannot start its child:", err)
			return 3
		}
		os.WriteFile(os.Getenv("CGM_FAKE_CHILD_PID"), []byte(strconv.Itoa(child.Process.Pid)), 0o644)
		fmt.Println("runsc: sandbox stuck")
		time.Sleep(10 * time.Minute)
	case "report":
		for t0 := time.Now(); time.Since(t0) < 50*time.Millisecond; { // the guest's work
		}
		f, err := os.Create(reportPath)
		if err != nil {
			fmt.Println("fake qemu:", err)
			return 3
		}
		EncodeFrame(f, []byte("results"))
		f.Close()
		fmt.Println("reboot: Power down")
	case "crash":
		fmt.Println("Kernel panic - not syncing: Attempted to kill init!")
		return 1
	case "lockup": // issue 38: the harness stuck, the kernel reporting it
		for {
			fmt.Println("[ 1834.100000] watchdog: BUG: soft lockup - CPU#1 stuck for 1833s! [cgconform:812]")
			fmt.Println("[ 1834.100100]  ? __schedule+0x2f5/0x8c0")
			time.Sleep(20 * time.Millisecond)
		}
	case "stuck-poweroff": // seen once under TCG: the guest said so, qemu never exited
		fmt.Println("cgm: powering off")
		time.Sleep(10 * time.Minute)
	}
	return 0
}

func fakeVM(t *testing.T, scenario string, timeout time.Duration) (*VM, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	t.Setenv("CGM_FAKE_QEMU", scenario)
	t.Setenv("CGM_FAKE_CHILD_PID", pidFile)
	return &VM{
		QEMU: self, Kernel: "vmlinuz", Cmdline: "console=ttyS0",
		Timeout: timeout, TailLines: 3,
		ConsoleLog: filepath.Join(dir, "console.log"),
		ReportPath: filepath.Join(dir, "report.txt"),
	}, pidFile
}

func alive(pid int) bool {
	// A zombie still answers kill 0; look at its state instead.
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(data))
	return len(f) > 2 && f[2] != "Z"
}

func TestRunKillsHungVMAndItsChildren(t *testing.T) {
	vm, pidFile := fakeVM(t, "hang", 2*time.Second)
	start := time.Now()
	res, err := vm.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("Run took %s with a 2s limit", took)
	}
	if !res.TimedOut {
		t.Error("Result.TimedOut = false for a VM that hung")
	}
	if res.RunningCase != "parallel-32 [host] runsc-stock" {
		t.Errorf("RunningCase = %q", res.RunningCase)
	}
	if res.LastDone != "delete-force [host] runsc-patched" {
		t.Errorf("LastDone = %q", res.LastDone)
	}
	if len(res.Tail) != 3 || res.Tail[2] != "runsc: sandbox stuck" {
		t.Errorf("Tail = %q, want the last 3 console lines", res.Tail)
	}
	if res.Boot <= 0 {
		t.Error("boot time not measured from the cgm: start line")
	}
	desc := res.Describe("v2", vm.Timeout)
	for _, want := range []string{"time limit", "parallel-32 [host] runsc-stock", "runsc: sandbox stuck"} {
		if !strings.Contains(desc, want) {
			t.Errorf("Describe lacks %q:\n%s", want, desc)
		}
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the fake qemu never started its child: %v", err)
	}
	pid, _ := strconv.Atoi(string(data))
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("qemu's child %d outlived the time limit: the process group was not killed", pid)
	}
	console, _ := os.ReadFile(vm.ConsoleLog)
	if !strings.Contains(string(console), "Linux version") {
		t.Errorf("console log lacks the boot line:\n%s", console)
	}
}

func TestRunReport(t *testing.T) {
	vm, _ := fakeVM(t, "report", time.Minute)
	res, err := vm.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.TimedOut || res.ExitErr != nil {
		t.Fatalf("Run = timeout %v, exit %v, want a clean power-off", res.TimedOut, res.ExitErr)
	}
	if res.CPU <= 0 || res.CPU > res.Wall*time.Duration(runtime.NumCPU()) {
		t.Errorf("CPU = %v, want the fake qemu's work, at most wall %v on every CPU", res.CPU, res.Wall)
	}
	f, err := os.Open(vm.ReportPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := DecodeFrame(f)
	if err != nil || string(got) != "results" {
		t.Errorf("frame = %q, %v", got, err)
	}
}

func TestRunStuckPowerOff(t *testing.T) {
	vm, _ := fakeVM(t, "stuck-poweroff", time.Minute)
	vm.PowerOffGrace = time.Second
	start := time.Now()
	res, err := vm.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("Run took %s after the guest powered off with a 1s grace", took)
	}
	if res.TimedOut || res.ExitErr != nil || !res.StuckPowerOff {
		t.Errorf("Run = timeout %v, exit %v, stuck %v; want a power-off ended by the grace", res.TimedOut, res.ExitErr, res.StuckPowerOff)
	}
}

func TestRunCrash(t *testing.T) {
	vm, _ := fakeVM(t, "crash", time.Minute)
	res, err := vm.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitErr == nil || res.TimedOut {
		t.Fatalf("Run = exit %v timeout %v, want qemu's failure", res.ExitErr, res.TimedOut)
	}
	if !strings.Contains(res.Describe("v1", time.Minute), "Kernel panic") {
		t.Error("Describe of a crash lacks the last console line")
	}
}

func TestRunCancel(t *testing.T) {
	vm, _ := fakeVM(t, "hang", time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	if _, err := vm.Run(ctx); err == nil {
		t.Error("Run of a cancelled VM returned no error")
	}
	if time.Since(start) > 15*time.Second {
		t.Error("cancel did not stop the VM promptly")
	}
}

func TestArgs(t *testing.T) {
	for _, tc := range []struct {
		name       string
		vm         VM
		want, deny []string
	}{
		{name: "tcg busybox", vm: VM{Kernel: "k", Initrd: "i", Cmdline: "console=ttyS0", ReportPath: "r",
			Disks: []Disk{{Path: "p.ext4"}}},
			want: []string{"-accel tcg,thread=multi", "-initrd i", "-serial stdio", "-serial file:r",
				"file=p.ext4,if=none,id=d0,format=raw,snapshot=off", "nvme-ns,drive=d0,bus=nvme0,nsid=1", "-no-reboot", "-smp 2", "-m 3072"},
			deny: []string{"kvm"}},
		{name: "kvm systemd", vm: VM{Kernel: "k", KVM: true, CPUs: 4, MemoryMiB: 4096, ReportPath: "r",
			Disks: []Disk{{Path: "root.ext4", Snapshot: true}, {Path: "p.ext4"}}},
			want: []string{"-accel kvm", "-cpu host", "-smp 4", "-m 4096", "file=root.ext4,if=none,id=d0,format=raw,snapshot=on",
				"nvme-ns,drive=d1,bus=nvme0,nsid=2"},
			deny: []string{"-initrd", "tcg"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(tc.vm.Args(), " ")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("args lack %q:\n%s", w, got)
				}
			}
			for _, d := range tc.deny {
				if strings.Contains(got, d) {
					t.Errorf("args hold %q:\n%s", d, got)
				}
			}
		})
	}
}

func TestUseKVM(t *testing.T) {
	for _, tc := range []struct {
		accel   string
		want    bool
		wantErr bool
	}{
		{"kvm", true, false},
		{"tcg", false, false},
		{"hvf", false, true},
	} {
		got, err := UseKVM(tc.accel)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("UseKVM(%q) = %v, %v; want %v, error %v", tc.accel, got, err, tc.want, tc.wantErr)
		}
	}
	if _, err := UseKVM("auto"); err != nil {
		t.Errorf("UseKVM(auto): %v", err)
	}
}

func TestProbeKVM(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scenario string
		wantErr  string // "" for usable
	}{
		{"report", ""},
		{"hang", ""}, // the banner is enough; the probe stops the guest
		{"kvm-abort", "failed to set MSR 0x10a"},
		{"silent", "printed nothing in 2s"},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			t.Setenv("CGM_FAKE_QEMU", tc.scenario)
			t.Setenv("CGM_FAKE_CHILD_PID", filepath.Join(t.TempDir(), "child.pid"))
			start := time.Now()
			err := ProbeKVM(context.Background(), self, "vmlinuz", 2*time.Second)
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("the probe took %s", took)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("ProbeKVM: %v, want usable", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("ProbeKVM: %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}
