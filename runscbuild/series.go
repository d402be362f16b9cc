package runscbuild

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// The series file, patches/series, is the one list of the patches: the build
// applies them in its order, WORKSPACE lists them in its order, and the
// upstream tools cut it into pull requests along its "pr" lines.
//
//	# A comment. Blank lines are ignored.
//	pr 01-levels
//	0001-runsc-cgroup-create-every-level.patch
//	0002-runsc-cgroup-remove-every-level.patch
//	pr 02-empty-path after 01-levels
//	0003-runsc-container-empty-path.patch
//
// A "pr NAME [after DEP...]" line opens a pull request: NAME (two digits, a
// dash, a lower-case slug) is also its folder, patches/NAME, with its patch
// files and PR.md. Each following line names one patch file in it. "after"
// names the earlier pull requests it is checked on (and what they need).
// A "carry NAME [after DEP...]" line, after the last pull request, opens a
// set carried for our runsc only, applied last; its folder holds CARRY.md,
// the reason, instead of PR.md.
//
// Every .patch file in a PR folder must be listed, and none may sit in
// patches/ itself: a file dropped in and forgotten stops the build.

// SeriesFile is the series' name inside the patches folder.
const SeriesFile = "series"

// A pull request's description in its folder, and a carried set's.
const (
	PRDescription = "PR.md"
	CarryReason   = "CARRY.md"
)

var prName = regexp.MustCompile(`^[0-9]{2}-[a-z0-9]+(-[a-z0-9]+)*$`)

// Patch is one patch file of the series.
type Patch struct {
	Name string // relative to the patches folder: "01-levels/0001-x.patch"
	Path string // the file on disk
	PR   string // the pull request it belongs to
}

// PR is one pull request of the series.
type PR struct {
	Name    string   // "01-levels", also its folder
	After   []string // earlier pull requests it builds on, as written
	Patches []Patch
	Dir     string // patches/<Name>
	Line    int    // the "pr" line in the series file
	Carried bool   // a "carry" line: for our runsc only (CARRY.md)
}

// Description is the path of the pull request's PR.md (or CARRY.md).
func (p PR) Description() string {
	if p.Carried {
		return filepath.Join(p.Dir, CarryReason)
	}
	return filepath.Join(p.Dir, PRDescription)
}

// Series is a parsed series file.
type Series struct {
	Path    string // the series file
	Dir     string // the patches folder holding it
	PRs     []PR
	Carried []PR // applied after PRs by the build, never sent upstream
}

// All lists the pull requests, then the carried sets: the build's order.
func (s *Series) All() []PR {
	return append(slices.Clone(s.PRs), s.Carried...)
}

// Patches lists every patch in the order the build applies them.
func (s *Series) Patches() []Patch {
	return PatchesOf(s.All()...)
}

// PR returns the pull request or carried set called name.
func (s *Series) PR(name string) (PR, bool) {
	for _, pr := range s.All() {
		if pr.Name == name {
			return pr, true
		}
	}
	return PR{}, false
}

// Needs returns every pull request (or carried set) name must sit on,
// directly or through another one, in series order, without name itself.
func (s *Series) Needs(name string) []PR {
	want := map[string]bool{}
	var visit func(string)
	visit = func(n string) {
		pr, _ := s.PR(n)
		for _, dep := range pr.After {
			if !want[dep] {
				want[dep] = true
				visit(dep)
			}
		}
	}
	visit(name)
	var out []PR
	for _, pr := range s.All() {
		if want[pr.Name] {
			out = append(out, pr)
		}
	}
	return out
}

// Before returns everything listed before name, in order.
func (s *Series) Before(name string) []PR {
	all := s.All()
	for i, pr := range all {
		if pr.Name == name {
			return all[:i]
		}
	}
	return nil
}

// PatchesOf flattens pull requests into their patches, in order.
func PatchesOf(prs ...PR) []Patch {
	var out []Patch
	for _, pr := range prs {
		out = append(out, pr.Patches...)
	}
	return out
}

// ReadSeries reads and checks a series file against its folders.
func ReadSeries(seriesPath string) (*Series, error) {
	f, err := os.Open(seriesPath)
	if err != nil {
		return nil, fmt.Errorf("reading patch series: %w", err)
	}
	defer f.Close()
	s := &Series{Path: seriesPath, Dir: filepath.Dir(seriesPath)}
	errorf := func(line int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", seriesPath, line, fmt.Sprintf(format, args...))
	}
	seenPatch := map[string]int{}
	seenPR := map[string]int{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if fields[0] == "pr" || fields[0] == "carry" {
			pr, err := s.parsePRLine(fields, line, seenPR)
			if err != nil {
				return nil, errorf(line, "%v", err)
			}
			seenPR[pr.Name] = line
			if pr.Carried {
				s.Carried = append(s.Carried, pr)
			} else if len(s.Carried) > 0 {
				return nil, errorf(line, "pull request %s comes after a carried set: carried patches go last", pr.Name)
			} else {
				s.PRs = append(s.PRs, pr)
			}
			continue
		}
		if len(s.PRs)+len(s.Carried) == 0 {
			return nil, errorf(line, "patch %q comes before any \"pr NN-name\" line; every patch belongs to a pull request", text)
		}
		if len(fields) != 1 || strings.ContainsAny(text, `/\`) || !strings.HasSuffix(text, ".patch") {
			return nil, errorf(line, "want one patch file name (NNNN-subject.patch, inside the PR folder) or \"pr NN-name [after NN-name...]\", got %q", text)
		}
		pr := &s.PRs[len(s.PRs)-1]
		if len(s.Carried) > 0 {
			pr = &s.Carried[len(s.Carried)-1]
		}
		name := pr.Name + "/" + text
		if first, dup := seenPatch[name]; dup {
			return nil, errorf(line, "%q is listed twice (first on line %d)", name, first)
		}
		seenPatch[name] = line
		p := filepath.Join(pr.Dir, text)
		if _, err := os.Stat(p); err != nil {
			return nil, errorf(line, "patch file %q: %v", name, err)
		}
		pr.Patches = append(pr.Patches, Patch{Name: name, Path: p, PR: pr.Name})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", seriesPath, err)
	}
	if err := s.checkFolders(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Series) parsePRLine(fields []string, line int, seen map[string]int) (PR, error) {
	if len(fields) < 2 {
		return PR{}, fmt.Errorf("want \"pr NN-name [after NN-name...]\", got %q", strings.Join(fields, " "))
	}
	pr := PR{Name: fields[1], Dir: filepath.Join(s.Dir, fields[1]), Line: line, Carried: fields[0] == "carry"}
	if !prName.MatchString(pr.Name) {
		return PR{}, fmt.Errorf("pull request name %q: want two digits, a dash and a lower-case slug, e.g. 01-levels", pr.Name)
	}
	if first, dup := seen[pr.Name]; dup {
		return PR{}, fmt.Errorf("pull request %q is declared twice (first on line %d)", pr.Name, first)
	}
	all := s.All()
	if n := len(all); n > 0 && all[n-1].Name >= pr.Name {
		return PR{}, fmt.Errorf("pull request %q follows %q: number them in series order", pr.Name, all[n-1].Name)
	}
	rest := fields[2:]
	if len(rest) > 0 {
		if rest[0] != "after" || len(rest) == 1 {
			return PR{}, fmt.Errorf("after %q: want \"after NN-name...\", got %q", pr.Name, strings.Join(rest, " "))
		}
		for _, dep := range rest[1:] {
			if _, ok := seen[dep]; !ok {
				return PR{}, fmt.Errorf("%s is after %q, which is not an earlier pull request of the series", pr.Name, dep)
			}
			if slices.Contains(pr.After, dep) {
				return PR{}, fmt.Errorf("%s names %q twice after \"after\"", pr.Name, dep)
			}
			pr.After = append(pr.After, dep)
		}
	}
	return pr, nil
}

// checkFolders: each PR folder has its description and only the patches
// the series lists; patches/ itself holds no patch.
func (s *Series) checkFolders() error {
	var problems []string
	for _, pr := range s.All() {
		if len(pr.Patches) == 0 {
			problems = append(problems, fmt.Sprintf("%s:%d: pull request %s lists no patch", s.Path, pr.Line, pr.Name))
		}
		if _, err := os.Stat(pr.Description()); err != nil {
			problems = append(problems, fmt.Sprintf("pull request %s has no description: %v", pr.Name, err))
		}
		listed := map[string]bool{}
		for _, p := range pr.Patches {
			listed[filepath.Base(p.Path)] = true
		}
		files, err := filepath.Glob(filepath.Join(pr.Dir, "*.patch"))
		if err != nil {
			return err
		}
		for _, f := range files {
			if !listed[filepath.Base(f)] {
				problems = append(problems, fmt.Sprintf("%s is not listed under \"pr %s\" in %s", f, pr.Name, s.Path))
			}
		}
	}
	loose, err := filepath.Glob(filepath.Join(s.Dir, "*.patch"))
	if err != nil {
		return err
	}
	for _, f := range loose {
		problems = append(problems, fmt.Sprintf("%s is in no pull request folder: move it to %s/NN-name/ and list it in %s", f, s.Dir, s.Path))
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("patch series does not match its folders:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// WorkspaceBlock is the text between the WorkspaceMarkers in WORKSPACE's
// patches = [...]: each pull request's name as a comment, then its patches
// as labels of //patches.
func WorkspaceBlock(s *Series, indent string) string {
	var b strings.Builder
	for _, pr := range s.All() {
		fmt.Fprintf(&b, "%s# %s\n", indent, pr.Name)
		for _, p := range pr.Patches {
			fmt.Fprintf(&b, "%s\"//patches:%s\",\n", indent, p.Name)
		}
	}
	return b.String()
}

// WorkspaceMarkers delimit the generated block in WORKSPACE.
const (
	WorkspaceBegin = "# series:begin"
	WorkspaceEnd   = "# series:end"
)

// SyncWorkspace returns workspace with the block between the markers
// replaced by WorkspaceBlock, indented like the begin marker.
func SyncWorkspace(workspace string, s *Series) (string, error) {
	lines := strings.SplitAfter(workspace, "\n")
	begin, end := -1, -1
	for i, l := range lines {
		switch strings.TrimSpace(l) {
		case WorkspaceBegin:
			begin = i
		case WorkspaceEnd:
			end = i
		}
	}
	if begin < 0 || end < begin {
		return "", fmt.Errorf("WORKSPACE has no %q ... %q block in patches = [...]", WorkspaceBegin, WorkspaceEnd)
	}
	indent := lines[begin][:len(lines[begin])-len(strings.TrimLeft(lines[begin], " \t"))]
	var b strings.Builder
	for _, l := range lines[:begin+1] {
		b.WriteString(l)
	}
	b.WriteString(WorkspaceBlock(s, indent))
	for _, l := range lines[end:] {
		b.WriteString(l)
	}
	return b.String(), nil
}
