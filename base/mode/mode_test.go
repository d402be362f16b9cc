package mode

import "testing"

func TestHostCgroup(t *testing.T) {
	want := map[Host]Cgroup{
		HostV1: V1, HostHybrid: Hybrid, HostV2: V2,
		HostSystemdV2: V2,
		// systemd's legacy layout mounts cgroup2 at unified beside the v1
		// controllers: a hybrid host to the harness.
		HostSystemdV1: Hybrid,
	}
	if len(Hosts) != len(want) {
		t.Fatalf("Hosts has %d entries, the table %d", len(Hosts), len(want))
	}
	for _, h := range Hosts {
		if got := h.Cgroup(); got != want[h] {
			t.Errorf("%s.Cgroup() = %q, want %q", h, got, want[h])
		}
		if _, err := ParseCgroup(string(h.Cgroup())); err != nil {
			t.Errorf("%s maps to an unknown layout: %v", h, err)
		}
	}
}

func TestParse(t *testing.T) {
	if _, err := ParseHost("systemd-v3"); err == nil {
		t.Error("ParseHost accepted systemd-v3")
	}
	if h, err := ParseHost("systemd-v1"); err != nil || h != HostSystemdV1 {
		t.Errorf("ParseHost(systemd-v1) = %q, %v", h, err)
	}
	// The two vocabularies share only "hybrid": a matrix name is not a
	// layout name.
	if _, err := ParseCgroup("v2"); err == nil {
		t.Error("ParseCgroup accepted the matrix name v2")
	}
	if c, err := ParseCgroup("hybrid"); err != nil || !c.HasV1Controllers() {
		t.Errorf("ParseCgroup(hybrid) = %q, %v", c, err)
	}
}
