package runscbuild

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// A pull request's folder may hold a file MutationsFile: the ways to break
// its fix that its tests must catch. make upstream-check applies each one
// alone to the go tree of the pull request alone and runs its unit tests
// again; a mutation they do not catch fails the pull request.
//
//	runsc/container/state_file.go
//		err = os.Rename(tmp, path)
//		err = os.WriteFile(path, data, 0640)
//
//	runsc/sandbox/sandbox.go
//		return unix.Kill(pid, 0) != unix.ESRCH
//		return unix.Kill(pid, 0) == nil
//
// Blocks are separated by one blank line; each is exactly three lines: the
// file's path in the gVisor tree, the line as written in the patched tree
// (exact, tabs included; it must be there exactly once) and the broken line
// that replaces it. Blank lines at the end of the file are ignored.

// MutationsFile is the name of a pull request's mutation list in its
// folder.
const MutationsFile = "mutations"

// Mutation is one block of a mutation list.
type Mutation struct {
	Block  int    `json:"block"`  // 1-based, in file order
	File   string `json:"file"`   // the path in the gVisor tree, with slashes
	Line   string `json:"line"`   // the line as written in the patched tree
	Broken string `json:"broken"` // the line that replaces it
}

// MutationError is a mutation list's problem, naming the list and, when it
// is one block's, the block.
type MutationError struct {
	List  string // the list's file, as named to the user
	Block int    // 0: the whole list
	Msg   string
}

func (e *MutationError) Error() string {
	if e.Block == 0 {
		return e.List + ": " + e.Msg
	}
	return fmt.Sprintf("%s: block %d: %s", e.List, e.Block, e.Msg)
}

// Mutations reads the pull request's mutation list: nil and no error when
// its folder has none. name is how errors name the file.
func (p PR) Mutations(name string) ([]Mutation, []byte, error) {
	data, err := os.ReadFile(filepath.Join(p.Dir, MutationsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	ms, err := ParseMutations(name, data)
	return ms, data, err
}

// ParseMutations parses a mutation list (see MutationsFile). It returns
// the well-formed blocks and, joined, a *MutationError for each block that
// is not: not three lines, a path that is not a clean relative path, a
// broken line identical to the original.
func ParseMutations(name string, data []byte) ([]Mutation, error) {
	text := string(data)
	if strings.TrimSpace(text) == "" {
		return nil, &MutationError{List: name, Msg: "lists no mutation: remove the file, or give blocks of three lines (path, line, broken line)"}
	}
	// Blank lines at the end are not blocks.
	text = strings.TrimRight(text, "\n")
	var out []Mutation
	var errs []error
	for i, block := range strings.Split(text, "\n\n") {
		n := i + 1
		lines := strings.Split(block, "\n")
		if block == "" || lines[0] == "" {
			errs = append(errs, &MutationError{List: name, Block: n, Msg: "starts with a blank line: blocks are separated by exactly one blank line"})
			continue
		}
		if len(lines) != 3 {
			errs = append(errs, &MutationError{List: name, Block: n, Msg: fmt.Sprintf("has %d lines (%q...), want 3: the file, the line as written, the broken line", len(lines), lines[0])})
			continue
		}
		m := Mutation{Block: n, File: lines[0], Line: lines[1], Broken: lines[2]}
		if p := m.File; p == "" || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || strings.ContainsAny(p, " \t\\") {
			errs = append(errs, &MutationError{List: name, Block: n, Msg: fmt.Sprintf("first line %q is not a clean relative path in the gVisor tree (e.g. runsc/container/container.go)", p)})
			continue
		}
		if m.Broken == m.Line {
			errs = append(errs, &MutationError{List: name, Block: n, Msg: fmt.Sprintf("the broken line is the line itself (%q): it breaks nothing", m.Line)})
			continue
		}
		out = append(out, m)
	}
	return out, errors.Join(errs...)
}

// Count is how many lines of src are exactly m.Line.
func (m Mutation) Count(src []byte) int {
	n := 0
	for _, l := range bytes.Split(src, []byte("\n")) {
		if string(l) == m.Line {
			n++
		}
	}
	return n
}

// Apply returns src with m's line replaced by its broken line. The line
// must be in src exactly once.
func (m Mutation) Apply(src []byte) ([]byte, error) {
	if n := m.Count(src); n != 1 {
		return nil, fmt.Errorf("%s has the line %q %d times, want exactly once", m.File, m.Line, n)
	}
	lines := bytes.Split(src, []byte("\n"))
	for i, l := range lines {
		if string(l) == m.Line {
			lines[i] = []byte(m.Broken)
		}
	}
	return bytes.Join(lines, []byte("\n")), nil
}
