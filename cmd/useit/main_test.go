package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExtract(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []snippet
		err        string
	}{
		{"two", "x\n<!-- use-it: a -->\n```sh\necho a\necho b\n```\ntext\n<!-- use-it: b -->\n```sh\n```\n", []snippet{{"a", "echo a\necho b\n"}, {"b", ""}}, ""},
		{"unmarked blocks are left", "```sh\nrm -rf /\n```\n", nil, ""},
		{"not sh", "<!-- use-it: a -->\n```toml\nx = 1\n```\n", nil, "line 1: the use-it marker a is not followed by a ```sh block"},
		{"text between", "<!-- use-it: a -->\n\n```sh\n```\n", nil, "not followed"},
		{"twice", "<!-- use-it: a -->\n```sh\n```\n<!-- use-it: a -->\n```sh\n```\n", nil, "line 4: a second snippet named a"},
		{"unclosed", "<!-- use-it: a -->\n```sh\necho\n", nil, "line 1: the snippet a has no closing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := extract(tc.text)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("extract error = %v, want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(snippet{})); diff != "" {
				t.Errorf("extract (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadmeSnippetsRun: the README's marked snippets are exactly those
// ci/commands/use-it.sh runs, so neither the text nor the run can drift.
func TestReadmeSnippetsRun(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	snippets, err := extract(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	var inReadme []string
	for _, s := range snippets {
		inReadme = append(inReadme, s.name)
	}
	script, err := os.ReadFile("../../ci/commands/use-it.sh")
	if err != nil {
		t.Fatal(err)
	}
	var run []string
	for _, m := range regexp.MustCompile(`(?m)(?:^\(?(?:cd \S+ && )?snippet |/useit-)([a-z]+)`).FindAllStringSubmatch(string(script), -1) {
		if !slices.Contains(run, m[1]) {
			run = append(run, m[1])
		}
	}
	if diff := cmp.Diff(inReadme, run); diff != "" {
		t.Errorf("README snippets (-) vs those use-it.sh runs (+):\n%s", diff)
	}
}
