package vmimage

import (
	"strings"
	"testing"
)

func TestRecipeHash(t *testing.T) {
	base := func() *Recipe {
		r := NewRecipe("img")
		r.AddString("version:systemd", "252.38-1~deb12u1")
		r.Add("file:init", []byte("#!/bin/sh\n"))
		return r
	}
	same := base()
	if base().Hash() != same.Hash() {
		t.Fatal("the same inputs hash differently")
	}
	for _, tc := range []struct {
		name   string
		change func(r *Recipe)
	}{
		{"package version", func(r *Recipe) { r.AddString("version:systemd", "252.39-1~deb12u1") }},
		{"recipe text", func(r *Recipe) { r.Add("file:init", []byte("#!/bin/sh\necho\n")) }},
		{"new input", func(r *Recipe) { r.AddString("bin:runc", "x") }},
		{"name", func(r *Recipe) { r.Name = "other" }},
		// Length prefixes keep key and value apart.
		{"boundary", func(r *Recipe) {
			r.inputs = map[string][]byte{"version:systemd252.38-1~deb12u1": nil, "file:init": []byte("#!/bin/sh\n")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			tc.change(r)
			if r.Hash() == same.Hash() {
				t.Errorf("changing the %s kept hash %s", tc.name, r.Hash())
			}
		})
	}
}

func TestRecipeHashIgnoresAddOrder(t *testing.T) {
	a, b := NewRecipe("x"), NewRecipe("x")
	a.AddString("k1", "v1")
	a.AddString("k2", "v2")
	b.AddString("k2", "v2")
	b.AddString("k1", "v1")
	if a.Hash() != b.Hash() {
		t.Errorf("hash depends on the order inputs were added: %s vs %s", a.Hash(), b.Hash())
	}
	a.Add("bin:x", []byte("\x7fELF\x00"))
	if m := a.Manifest(); !strings.Contains(m, "hash "+a.Hash()) || !strings.Contains(m, "k1 = v1") || !strings.Contains(m, "bin:x sha256:") {
		t.Errorf("manifest lacks the hash or an input:\n%s", m)
	}
}

func TestParseModes(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string
		wantErr string
	}{
		{in: "", want: "v1,hybrid,v2,systemd-v2,systemd-v1"},
		{in: "all", want: "v1,hybrid,v2,systemd-v2,systemd-v1"},
		{in: "v2", want: "v2"},
		{in: "systemd-v1 v1,v1", want: "v1,systemd-v1"},
		{in: "v3", wantErr: `unknown mode "v3": pick from v1, hybrid`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			modes, err := ParseModes(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseModes(%q) error = %v, want %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, m := range modes {
				names = append(names, m.Name)
			}
			if got := strings.Join(names, ","); got != tc.want {
				t.Errorf("ParseModes(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestModesBootTheirLayout(t *testing.T) {
	for _, m := range Modes {
		t.Run(m.Name, func(t *testing.T) {
			args := strings.Join(m.Cmdline, " ")
			if !strings.Contains(args, "cgm.mode="+m.Name) {
				t.Errorf("mode %s does not name itself on the kernel command line: %q", m.Name, args)
			}
			wantV1 := m.Name == "systemd-v1"
			if got := strings.Contains(args, "systemd.unified_cgroup_hierarchy=0"); got != wantV1 {
				t.Errorf("mode %s: unified_cgroup_hierarchy=0 present = %v, want %v", m.Name, got, wantV1)
			}
		})
	}
}

func TestParseAptVersions(t *testing.T) {
	out := []byte("Package: systemd\nVersion: 252.38-1~deb12u1\nDepends: libc6 (>= 2.34)\n\n" +
		"Package: dbus\nArchitecture: amd64\nVersion: 1.14.10-1~deb12u1\n\n")
	got, err := parseAptVersions(out, []string{"systemd", "dbus"})
	if err != nil || got["systemd"] != "252.38-1~deb12u1" || got["dbus"] != "1.14.10-1~deb12u1" {
		t.Errorf("parseAptVersions = %v, %v", got, err)
	}
	if _, err := parseAptVersions(out, []string{"systemd", "nope"}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("a missing package gave error %v, want one naming it", err)
	}
}

func TestParseLdd(t *testing.T) {
	out := []byte(`	linux-vdso.so.1 (0x00007fda27a40000)
	libseccomp.so.2 => /lib/x86_64-linux-gnu/libseccomp.so.2 (0x00007fda27a0c000)
	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007fda2782a000)
	/lib64/ld-linux-x86-64.so.2 (0x00007fda27a42000)
`)
	got := strings.Join(parseLdd(out), " ")
	want := "/lib/x86_64-linux-gnu/libseccomp.so.2 /lib/x86_64-linux-gnu/libc.so.6 /lib64/ld-linux-x86-64.so.2"
	if got != want {
		t.Errorf("parseLdd = %q, want %q", got, want)
	}
}
