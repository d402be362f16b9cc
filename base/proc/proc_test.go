package proc

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// tail is the rest of a real stat line after ppid and pgrp: session
// (field 6) to the end, starttime (field 22) 777.
const tail = " 34 0 -1 4194560 100 0 0 0 1 2 4 8 20 0 1 0 777 1000 200 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0"

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Stat
		bad  bool
	}{
		{line: "123 (containerd) S 1 123" + tail, want: Stat{PID: 123, Comm: "containerd", State: 'S', PPID: 1, Pgrp: 123, Start: 777, CPU: 15}},
		{line: "77 (a) b) (c) R 55 77" + tail, want: Stat{PID: 77, Comm: "a) b) (c", State: 'R', PPID: 55, Pgrp: 77, Start: 777, CPU: 15}},
		{line: "88 (my shim (v2)) Z 87 1" + tail + "\n", want: Stat{PID: 88, Comm: "my shim (v2)", State: 'Z', PPID: 87, Pgrp: 1, Start: 777, CPU: 15}},
		{line: "9 () S 8 8" + tail, want: Stat{PID: 9, State: 'S', PPID: 8, Pgrp: 8, Start: 777, CPU: 15}},
		{line: "garbage", bad: true},
		{line: "9 (x)", bad: true},
		{line: "9 (x) S 1 1 34 0", bad: true},
		{line: "x (y) S 1 1" + tail, bad: true},
		{line: "9 (x) S one 1" + tail, bad: true},
		{line: "9 (x) S 1 1" + strings.Replace(tail, " 1 2 4 8 ", " 1 x 4 8 ", 1), bad: true},
	} {
		got, err := ParseStat(tc.line)
		if (err != nil) != tc.bad {
			t.Errorf("%.40q: err %v, want bad=%t", tc.line, err, tc.bad)
			continue
		}
		if diff := cmp.Diff(tc.want, got); !tc.bad && diff != "" {
			t.Errorf("%.40q (-want +got):\n%s", tc.line, diff)
		}
	}
	self, err := ReadStat(os.Getpid())
	if err != nil || self.PID != os.Getpid() || self.PPID != os.Getppid() || self.Pgrp != unix.Getpgrp() || self.Start == 0 {
		t.Errorf("ReadStat(self) = %+v, %v", self, err)
	}
}

// started starts argv with an exited channel, as the clients do.
func started(t *testing.T, argv ...string) (*exec.Cmd, Process, chan struct{}) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p, err := Identify(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the first line: the child has set up its traps.
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	return cmd, p, exited
}

func TestStopTERM(t *testing.T) {
	cmd, p, exited := started(t, "sh", "-c", "echo up; exec sleep 60")
	t0 := time.Now()
	killed, err := p.Stop(5*time.Second, exited)
	if killed || err != nil || time.Since(t0) > 4*time.Second {
		t.Errorf("Stop = %t, %v after %s; want SIGTERM to do", killed, err, time.Since(t0))
	}
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGTERM {
		t.Errorf("the child ended %v, want SIGTERM", cmd.ProcessState)
	}
}

func TestStopKILLAfterGrace(t *testing.T) {
	cmd, p, exited := started(t, "sh", "-c", `trap "" TERM; echo up; exec sleep 60`)
	t0 := time.Now()
	killed, err := p.Stop(300*time.Millisecond, exited)
	if !killed || err != nil || time.Since(t0) < 300*time.Millisecond {
		t.Errorf("Stop = %t, %v after %s; want SIGKILL after the grace", killed, err, time.Since(t0))
	}
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGKILL {
		t.Errorf("the child ended %v, want SIGKILL", cmd.ProcessState)
	}
}

// A process that is not the one named (its PID recycled: another start
// time) is never signalled; without an exited channel, Stop waits on
// /proc.
func TestSignalOnlyTheNamedProcess(t *testing.T) {
	_, p, exited := started(t, "sh", "-c", "echo up; exec sleep 60")
	other := Process{PID: p.PID, Start: p.Start + 1}
	if err := other.Signal(unix.SIGKILL); !errors.Is(err, ErrGone) {
		t.Errorf("Signal of a recycled PID: %v, want ErrGone", err)
	}
	if killed, err := other.Stop(time.Second, nil); killed || err != nil {
		t.Errorf("Stop of a recycled PID = %t, %v", killed, err)
	}
	if !p.Alive() {
		t.Fatal("the child was signalled through a stale name")
	}
	if killed, err := p.Stop(5*time.Second, nil); killed || err != nil || p.Alive() {
		t.Errorf("Stop(nil) = %t, %v; alive %t", killed, err, p.Alive())
	}
	<-exited
}
