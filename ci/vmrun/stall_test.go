package vmrun

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestWatchdog feeds console lines at chosen moments of a fake clock.
func TestWatchdog(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	bound := func(running string) time.Duration {
		if strings.HasPrefix(running, "parallel-32 ") {
			return 80 * time.Minute
		}
		return 20 * time.Minute
	}
	type line struct {
		at   time.Duration // after t0
		text string
	}
	for _, tc := range []struct {
		name  string
		lines []line
		at    time.Duration
		stall bool
		// running and lockup of the stall, when it stalls
		running, lockup string
	}{
		{name: "quiet boot within the bound", at: 19 * time.Minute},
		{name: "silent from the start", at: 21 * time.Minute, stall: true},
		{
			name:  "a finished line is progress",
			lines: []line{{10 * time.Minute, "pass delete-force [host] runsc-patched 5.6s"}},
			at:    29 * time.Minute,
		},
		{
			name:  "a long case gets its own bound",
			lines: []line{{time.Minute, "=== RUN parallel-32 [host] runsc-stock"}},
			at:    70 * time.Minute,
		},
		{
			name: "the long case's bound ends with it",
			lines: []line{
				{time.Minute, "=== RUN parallel-32 [host] runsc-stock"},
				{5 * time.Minute, "pass parallel-32 [host] runsc-stock 240.0s"},
			},
			at: 26 * time.Minute, stall: true,
		},
		{
			name: "kernel lines are progress",
			lines: []line{
				{time.Minute, "=== RUN client-cri-pod [kubelet-systemd] runc"},
				{15 * time.Minute, "[  900.1] IPv6: ADDRCONF(NETDEV_CHANGE): veth1: link becomes ready"},
			},
			at: 30 * time.Minute,
		},
		{
			// Issue 38: systemd-v1, five minutes in, two VMs at once.
			name: "a soft lockup and its backtraces are not",
			lines: []line{
				{time.Minute, "=== RUN client-cri-pod [kubelet-systemd] runc"},
				{5 * time.Minute, "[  300.5] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [cgconform:812]"},
				{5 * time.Minute, "[  300.5] RIP: 0010:_raw_spin_lock+0x1a/0x30"},
				{10 * time.Minute, "[  600.5] rcu: INFO: rcu_sched self-detected stall on CPU"},
				{20 * time.Minute, "[ 1200.2] watchdog: BUG: soft lockup - CPU#1 stuck for 1833s! [cgconform:812]"},
			},
			at: 22 * time.Minute, stall: true, running: "client-cri-pod [kubelet-systemd] runc",
			lockup: "[ 1200.2] watchdog: BUG: soft lockup - CPU#1 stuck for 1833s! [cgconform:812]",
		},
		{
			name: "userspace after a lockup is progress again",
			lines: []line{
				{5 * time.Minute, "[  300.5] watchdog: BUG: soft lockup - CPU#0 stuck for 23s! [kworker/0:1]"},
				{6 * time.Minute, "cgm: start mode=v1"},
				{7 * time.Minute, "[  420.0] loop0: detected capacity change"},
			},
			at: 26 * time.Minute,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWatchdog(t0, bound)
			for _, l := range tc.lines {
				w.Line(l.text, t0.Add(l.at))
			}
			s := w.Stalled(t0.Add(tc.at))
			if (s != nil) != tc.stall {
				t.Fatalf("Stalled at +%s = %v, want stalled %v", tc.at, s, tc.stall)
			}
			if s == nil {
				return
			}
			if tc.running != "" && s.Running != tc.running {
				t.Errorf("Running = %q, want %q", s.Running, tc.running)
			}
			if s.Lockup != tc.lockup {
				t.Errorf("Lockup = %q, want %q", s.Lockup, tc.lockup)
			}
		})
	}
}

func TestWatchdogNoBoundNeverStalls(t *testing.T) {
	t0 := time.Now()
	w := NewWatchdog(t0, func(string) time.Duration { return 0 })
	if s := w.Stalled(t0.Add(100 * time.Hour)); s != nil {
		t.Errorf("Stalled with no bound: %v", s)
	}
}

// TestRunEndsStalledGuest: a guest that goes silent, and one whose kernel
// keeps printing its soft lockup, are both ended by the Watchdog, long
// before their hour's time limit, with their console's last lines.
func TestRunEndsStalledGuest(t *testing.T) {
	for _, scenario := range []string{"hang", "lockup"} {
		t.Run(scenario, func(t *testing.T) {
			vm, _ := fakeVM(t, scenario, time.Hour)
			// 3 s: under a loaded machine (CI's VMs beside) the fake
			// guest took more than 300 ms to print its first line.
			vm.Watchdog = NewWatchdog(time.Now(), func(string) time.Duration { return 3 * time.Second })
			vm.StallCheck = 50 * time.Millisecond
			res, err := vm.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if res.Stall == nil || res.TimedOut {
				t.Fatalf("Stall %v, TimedOut %v: want a stall", res.Stall, res.TimedOut)
			}
			if res.Stall.Running != "parallel-32 [host] runsc-stock" {
				t.Errorf("Stall.Running = %q", res.Stall.Running)
			}
			d := res.Describe("v2", time.Hour)
			if !strings.Contains(d, "guest stalled, VM killed: no progress for") || !strings.Contains(d, "last 3 console lines") {
				t.Errorf("Describe:\n%s", d)
			}
			if scenario == "lockup" && !strings.Contains(res.Stall.Lockup, "soft lockup") {
				t.Errorf("Stall.Lockup = %q", res.Stall.Lockup)
			}
		})
	}
}
