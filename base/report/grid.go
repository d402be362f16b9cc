package report

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Symbols is how one table shows each outcome; an outcome without a
// symbol shows as its name.
type Symbols map[Outcome]string

// Of is the symbol of o.
func (s Symbols) Of(o Outcome) string {
	if v, ok := s[o]; ok {
		return v
	}
	return string(o)
}

// TextSymbols are the progress lines' and the host table's.
var TextSymbols = Symbols{Pass: "pass", Fail: "FAIL", Divergence: "xdiv", Skip: "skip"}

// Row is a grid's row: a case in one context, and a runtime where each
// runtime has rows of its own.
type Row struct{ Case, Context, Runtime string }

// Name is "case [context]".
func (r Row) Name() string { return r.Case + " [" + r.Context + "]" }

// Grid lays cells of type T out for a table: the one model of the host's
// table (rows case [context], columns runtimes), the matrix's (rows case
// [context] x runtime, columns host modes) and the pull requests' (the
// same, several runtimes to a cell). Rows and columns keep the order they
// first came in; a later Add to a cell replaces the earlier one.
type Grid[T any] struct {
	Rows  []Row
	Cols  []string
	cells map[Row]map[string]T
}

// AddCol adds a column, if new.
func (g *Grid[T]) AddCol(col string) {
	if !slices.Contains(g.Cols, col) {
		g.Cols = append(g.Cols, col)
	}
}

// Add puts v in the cell of row and col.
func (g *Grid[T]) Add(row Row, col string, v T) {
	if g.cells == nil {
		g.cells = map[Row]map[string]T{}
	}
	if g.cells[row] == nil {
		g.cells[row] = map[string]T{}
		g.Rows = append(g.Rows, row)
	}
	g.AddCol(col)
	g.cells[row][col] = v
}

// At is the cell of row and col; ok is false for an empty one.
func (g *Grid[T]) At(row Row, col string) (v T, ok bool) {
	v, ok = g.cells[row][col]
	return v, ok
}

// OneLine is s on one line, cut to at most n bytes on a rune boundary
// and then ended with more (messages quote runtimes' output, any UTF-8).
func OneLine(s string, n int, more string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + more
	}
	return s
}
