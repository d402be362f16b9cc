package patchmail

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mailWith builds a format-patch mail with the given From: (folded as
// format-patch folds long ones) and message lines.
func mailWith(from string, message ...string) string {
	return "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n" +
		"From: " + from + "\n" +
		"Date: Wed, 2 Dec 2026 12:06:46 +0000\n" +
		"Subject: [PATCH 03/12] runsc/cgroup: create every level of a relative cgroup\n v2 path\n" +
		"\n" +
		strings.Join(message, "\n") + "\n" +
		"---\n" +
		" runsc/cgroup/a.go | 2 +-\n" +
		" 1 file changed, 1 insertion(+), 1 deletion(-)\n" +
		"\n" +
		"diff --git a/runsc/cgroup/a.go b/runsc/cgroup/a.go\n" +
		"index 1111111..2222222 100644\n" +
		"--- a/runsc/cgroup/a.go\n" +
		"+++ b/runsc/cgroup/a.go\n" +
		"@@ -1 +1 @@\n" +
		"-package a\n" +
		"+package a // changed\n" +
		"-- \n2.39.5\n\n"
}

var neutral = mailWith(Placeholder, "Symptom: it breaks.", "", "Fix: it does not.", "", AssistedBy)

func TestParseRoundTrip(t *testing.T) {
	for _, in := range []string{
		neutral,
		mailWith("Seed maintainers\n <m@users.noreply.example>", "Body.", "", "Assisted-by: Claude (Anthropic)", "Signed-off-by: Someone <s@example.org>"),
		mailWith(Placeholder), // no body at all
	} {
		m, err := Parse([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(in, m.String()); diff != "" {
			t.Errorf("round trip (-in +out):\n%s", diff)
		}
	}
	m, _ := Parse([]byte(mailWith("Seed maintainers\n <m@users.noreply.example>", "x")))
	if got, _ := m.Get("from"); got != "Seed maintainers <m@users.noreply.example>" {
		t.Errorf("folded From: = %q", got)
	}
	if got, _ := m.Get("Subject"); got != "[PATCH 03/12] runsc/cgroup: create every level of a relative cgroup v2 path" {
		t.Errorf("folded Subject: = %q", got)
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{
		"diff --git a/x b/x\n",
		"From 0123 Mon Sep 17 00:00:00 2001\nFrom: x\nSubject: y\n",
		"From 0123 Mon Sep 17 00:00:00 2001\nFrom: x\n\njust prose, no diff\n",
	} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%q): no error", in)
		}
	}
}

func TestProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		mail string
		want []string // substrings, one per problem, in order
	}{
		{name: "neutral", mail: neutral},
		{name: "a person as author", mail: mailWith("Jane Doe <jane@users.noreply.github.com>", "x", "", AssistedBy), want: []string{"want the placeholder"}},
		{name: "seed placeholder", mail: mailWith("Seed 2600061b maintainers\n <maintainers@users.noreply.a-seed-2600061b.example>", "x", "", AssistedBy), want: []string{"want the placeholder"}},
		{name: "signed off", mail: mailWith(Placeholder, "x", "", AssistedBy, "Signed-off-by: Jane Doe <jane@users.noreply.github.com>"), want: []string{"names no one"}},
		{name: "co-authored", mail: mailWith(Placeholder, "x", "", AssistedBy, "Co-authored-by: Bot <bot@example.org>"), want: []string{"names no one"}},
		{name: "vendor suffix", mail: mailWith(Placeholder, "x", "", "Assisted-by: Claude (Anthropic)"), want: []string{"want exactly \"Assisted-by: Claude\""}},
		{name: "vague", mail: mailWith(Placeholder, "x", "", "Assisted-by: an AI coding assistant"), want: []string{"want exactly"}},
		{name: "lower case key", mail: mailWith(Placeholder, "x", "", "assisted-by: Claude"), want: []string{"want exactly"}},
		{name: "missing", mail: mailWith(Placeholder, "x"), want: []string{"0 Assisted-by trailers"}},
		{name: "twice", mail: mailWith(Placeholder, "x", "", AssistedBy, AssistedBy), want: []string{"2 Assisted-by trailers"}},
		{name: "inside the prose", mail: mailWith(Placeholder, AssistedBy, "", "More prose after it."), want: []string{"not in the trailer block"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Problems([]byte(tc.mail))
			if len(got) != len(tc.want) {
				t.Fatalf("Problems = %q, want %d matching %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to mention %q", i, got[i], w)
				}
			}
		})
	}
}

func TestNeutralize(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		message []string
	}{
		{
			name:    "seed identity and vendor suffix",
			in:      mailWith("Seed maintainers\n <m@users.noreply.example>", "Body.", "", "Assisted-by: Claude (Anthropic)", "Signed-off-by: Someone <s@example.org>"),
			message: []string{"Body.", "", AssistedBy},
		},
		{
			name:    "no trailer at all",
			in:      mailWith("Jane <j@example.org>", "Body.", "", "More."),
			message: []string{"Body.", "", "More.", "", AssistedBy},
		},
		{
			name:    "already neutral",
			in:      neutral,
			message: []string{"Symptom: it breaks.", "", "Fix: it does not.", "", AssistedBy},
		},
		{
			name:    "other trailers kept",
			in:      mailWith(Placeholder, "Body.", "", "Fixes: #123", "Assisted-by: an AI coding assistant"),
			message: []string{"Body.", "", "Fixes: #123", AssistedBy},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Neutralize([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if p := Problems(out); len(p) > 0 {
				t.Errorf("still not neutral: %q", p)
			}
			m, err := Parse(out)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.message, m.Message); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			in, _ := Parse([]byte(tc.in))
			if m.Rest != in.Rest {
				t.Errorf("the diff changed")
			}
		})
	}
}

func TestIdentityCheck(t *testing.T) {
	for _, tc := range []struct {
		id      Identity
		wantErr string
	}{
		{id: Identity{Name: "Jane Doe", Email: "jane@users.noreply.github.com"}},
		{id: Identity{Name: "Zoë Ångström", Email: "zoe@users.noreply.github.com"}},
		{id: Identity{Name: "", Email: "jane@users.noreply.github.com"}, wantErr: "no author"},
		{id: Identity{Name: "Jane", Email: ""}, wantErr: "no author"},
		{id: Identity{Name: "Jane", Email: "Jane <jane@users.noreply.github.com>"}, wantErr: "plain address"},
		{id: Identity{Name: "Jane", Email: "not-an-address"}, wantErr: "plain address"},
		{id: Identity{Name: "Author Set At Send Time", Email: "author@send-time.invalid"}, wantErr: "placeholder"},
		{id: Identity{Name: "Seed 2600061b maintainers", Email: "maintainers@users.noreply.a-seed-2600061b.example"}, wantErr: "reserved for examples"},
		{id: Identity{Name: "Jane", Email: "jane@example.org"}, wantErr: "reserved for examples"},
		{id: Identity{Name: "Jane", Email: "jane@mail.example.com"}, wantErr: "reserved for examples"},
		{id: Identity{Name: "Jane", Email: "jane@localhost"}, wantErr: "reserved for examples"},
		{id: Identity{Name: "Jane", Email: "jane@example.dev"}},
		{id: Identity{Name: "Jane <x>", Email: "jane@users.noreply.github.com"}, wantErr: "contains <"},
	} {
		err := tc.id.Check()
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.id, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%+v: error %v, want one mentioning %q", tc.id, err, tc.wantErr)
		}
	}
}

func TestAuthor(t *testing.T) {
	id := Identity{Name: "Jane Doe", Email: "jane@users.noreply.github.com"}
	out, err := Author([]byte(neutral), id, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, k := range []string{"From", "Subject", "Date"} {
		got[k], _ = m.Get(k)
	}
	want := map[string]string{
		"From":    "Jane Doe <jane@users.noreply.github.com>",
		"Subject": "[PATCH 2/3] runsc/cgroup: create every level of a relative cgroup v2 path",
		"Date":    "Wed, 2 Dec 2026 12:06:46 +0000",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{AssistedBy, "Signed-off-by: Jane Doe <jane@users.noreply.github.com>"}, m.Trailers()); diff != "" {
		t.Errorf("trailers (-want +got):\n%s", diff)
	}
	one, err := Author([]byte(neutral), id, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := Parse(one); !strings.HasPrefix(must(m.Get("Subject")), "[PATCH] runsc/cgroup:") {
		t.Errorf("a lone patch's subject: %q", must(m.Get("Subject")))
	}
	if _, err := Author([]byte(mailWith("Seed <s@example.org>", "x", "", AssistedBy)), id, 1, 1); err == nil {
		t.Errorf("Author accepted a patch that already names someone")
	}
	if _, err := Author([]byte(neutral), Identity{}, 1, 1); err == nil {
		t.Errorf("Author accepted an empty identity")
	}
}

func must(s string, _ bool) string { return s }

// TestAuthorAppliesWithGitAm checks what git makes of the rewritten mail:
// the author, including a name that needs encoding, and the trailers.
func TestAuthorAppliesWithGitAm(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, id := range []Identity{
		{Name: "Jane Doe", Email: "jane@users.noreply.github.com"},
		{Name: "Zoë O'Brien-Łukasz, Jr", Email: "zoe@users.noreply.github.com"},
		{Name: "J. R. \"Bob\" Hacker", Email: "bob@users.noreply.github.com"},
	} {
		t.Run(id.Name, func(t *testing.T) {
			dir := t.TempDir()
			gitIn := func(args ...string) string {
				t.Helper()
				cmd := exec.Command("git", args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
					"GIT_COMMITTER_NAME=c", "GIT_COMMITTER_EMAIL=c@example.org",
					"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.org")
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			if err := os.MkdirAll(filepath.Join(dir, "runsc", "cgroup"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "runsc", "cgroup", "a.go"), []byte("package a\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			gitIn("init", "-q")
			gitIn("add", "-A")
			gitIn("commit", "-q", "-m", "base")
			out, err := Author([]byte(neutral), id, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(t.TempDir(), "0001.patch")
			if err := os.WriteFile(p, out, 0o644); err != nil {
				t.Fatal(err)
			}
			gitIn("am", "-q", p)
			if got := strings.TrimSpace(gitIn("log", "-1", "--format=%an <%ae>")); got != id.String() {
				t.Errorf("author = %q, want %q", got, id.String())
			}
			if got := strings.TrimSpace(gitIn("log", "-1", "--format=%s")); got != "runsc/cgroup: create every level of a relative cgroup v2 path" {
				t.Errorf("subject = %q", got)
			}
			body := gitIn("log", "-1", "--format=%b")
			if !strings.HasSuffix(strings.TrimSpace(body), AssistedBy+"\nSigned-off-by: "+id.String()) {
				t.Errorf("message does not end with the trailers:\n%s", body)
			}
		})
	}
}

func TestFiles(t *testing.T) {
	patch := "diff --git a/runsc/BUILD b/runsc/BUILD\nindex 1..2\n" +
		"diff --git a/runsc/new.go b/runsc/new.go\nnew file mode 100644\n" +
		"diff --git a/runsc/old.go b/runsc/old.go\ndeleted file mode 100644\n"
	want := []FileChange{{Path: "runsc/BUILD"}, {Path: "runsc/new.go", Added: true}, {Path: "runsc/old.go", Deleted: true}}
	if diff := cmp.Diff(want, Files([]byte(patch))); diff != "" {
		t.Errorf("Files (-want +got):\n%s", diff)
	}
}

func TestNumberedName(t *testing.T) {
	for in, want := range map[string]string{
		"0007-runsc-cgroup-nest.patch": "0002-runsc-cgroup-nest.patch",
		"runsc-cgroup-nest.patch":      "0002-runsc-cgroup-nest.patch",
	} {
		if got := NumberedName(in, 2); got != want {
			t.Errorf("NumberedName(%q, 2) = %q, want %q", in, got, want)
		}
	}
}
