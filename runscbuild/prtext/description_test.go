package prtext

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runsc-cgroups/cgconform/runscbuild"
)

// These hold every committed PR.md (../../patches) to the shape of a gVisor
// pull request description.

// TestPRDescriptions: every PR.md has the sections of a gVisor pull request,
// a table marker for its before/after, and names what it depends on.
func TestPRDescriptions(t *testing.T) {
	s, err := runscbuild.ReadSeries(filepath.Join("..", "..", "patches", runscbuild.SeriesFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.PRs) == 0 {
		t.Fatal("patches/series lists no pull request")
	}
	for _, pr := range s.PRs {
		data, err := os.ReadFile(pr.Description())
		if err != nil {
			t.Fatal(err)
		}
		for _, problem := range CheckDescription(string(data), pr.After) {
			t.Errorf("%s: %s", pr.Description(), problem)
		}
	}
}

func TestCheckDescription(t *testing.T) {
	good := "# runsc/cgroup: x\n\nDepends on 01-levels.\n\n## Problem\n\n```sh\nrunsc create\n```\n\n## Change\n\nx\n\n" +
		"## Before and after\n\n<!-- table: delete -->\n\n## Compatibility\n\nx\n\n## Requirements\n\nx\n\n" +
		"## How it was tested\n\n```sh\nmake test\n```\n\n## Out of scope\n\nx\n"
	for _, tc := range []struct {
		name  string
		md    string
		after []string
		want  []string // substrings, one per problem
	}{
		{name: "good", md: good, after: []string{"01-levels"}},
		{name: "no title", md: strings.TrimPrefix(good, "# "), want: []string{"title"}},
		{name: "dependency not named", md: good, after: []string{"01-levels", "02-empty-path"}, want: []string{"depends on 02-empty-path"}},
		{name: "section missing", md: strings.Replace(good, "## Requirements\n\nx\n\n", "", 1), want: []string{"sections are"}},
		{name: "sections reordered", md: strings.Replace(strings.Replace(good, "## Change", "## TMP", 1), "## Compatibility", "## Change", 1), want: []string{"sections are"}},
		{name: "no reproduction", md: strings.Replace(good, "```sh\nrunsc create\n```", "run it", 1), want: []string{"no reproduction"}},
		{name: "no commands", md: strings.Replace(good, "```sh\nmake test\n```", "we ran it", 1), want: []string{"no commands"}},
		{name: "no marker", md: strings.Replace(good, "<!-- table: delete -->", "It works now.", 1), want: []string{"no <!-- table"}},
		{name: "typed table", md: strings.Replace(good, "<!-- table: delete -->", "<!-- table: delete -->\n\n| a | b |\n|---|---|", 1), want: []string{"hand-typed"}},
		{name: "bad marker", md: strings.Replace(good, "<!-- table: delete -->", "<!-- table: Delete! -->", 1), want: []string{"not a case name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckDescription(tc.md, tc.after)
			if len(got) != len(tc.want) {
				t.Fatalf("CheckDescription = %q, want %d problems matching %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to mention %q", i, got[i], w)
				}
			}
		})
	}
}

// Sections are the headings every PR.md has, in this order, after its "# "
// title: the shape of a gVisor pull request description.
var Sections = []string{
	"Problem",
	"Change",
	"Before and after",
	"Compatibility",
	"Requirements",
	"How it was tested",
	"Out of scope",
}

// CheckDescription lists what a PR.md lacks: the title, a section, a
// reproduction in Problem and commands in How it was tested (fenced code), a
// table marker (and no hand-typed table) in Before and after, and the name
// of every pull request it comes after.
func CheckDescription(md string, after []string) []string {
	var problems []string
	if !strings.HasPrefix(md, "# ") {
		problems = append(problems, "does not start with a \"# \" title")
	}
	if _, err := Markers(md); err != nil {
		problems = append(problems, err.Error())
	}
	body := map[string]string{}
	var order []string
	current := ""
	for _, l := range strings.Split(md, "\n") {
		if h, ok := strings.CutPrefix(l, "## "); ok {
			current = strings.TrimSpace(h)
			order = append(order, current)
			continue
		}
		if current != "" {
			body[current] += l + "\n"
		}
	}
	if !slices.Equal(order, Sections) {
		problems = append(problems, fmt.Sprintf("sections are %q, want %q", order, Sections))
	}
	if !strings.Contains(body["Problem"], "```") {
		problems = append(problems, "Problem has no reproduction (a fenced code block)")
	}
	if !strings.Contains(body["How it was tested"], "```") {
		problems = append(problems, "How it was tested has no commands (a fenced code block)")
	}
	ba := body["Before and after"]
	if !marker.MatchString(ba) {
		problems = append(problems, "Before and after has no <!-- table: ... --> marker")
	}
	for _, l := range strings.Split(ba, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "|") {
			problems = append(problems, "Before and after holds a hand-typed table; use a <!-- table: ... --> marker")
			break
		}
	}
	for _, dep := range after {
		if !strings.Contains(md, dep) {
			problems = append(problems, fmt.Sprintf("does not say it depends on %s (the series says it comes after it)", dep))
		}
	}
	return problems
}
