package report

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGrid: rows and columns keep the order they first came in, a later
// Add replaces a cell in place, and an empty cell says so.
func TestGrid(t *testing.T) {
	g := &Grid[Outcome]{}
	a, b := Row{Case: "a", Context: "host"}, Row{Case: "b", Context: "host", Runtime: "runc"}
	g.AddCol("v2")
	g.Add(b, "v1", Fail)
	g.Add(a, "v2", Pass)
	g.Add(b, "v1", Pass)
	if diff := cmp.Diff([]Row{b, a}, g.Rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"v2", "v1"}, g.Cols); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	if o, ok := g.At(b, "v1"); !ok || o != Pass {
		t.Errorf("At(b, v1) = %q, %v; want the later pass", o, ok)
	}
	if o, ok := g.At(a, "v1"); ok || o != "" {
		t.Errorf("At(a, v1) = %q, %v; want an empty cell", o, ok)
	}
	if got := a.Name(); got != "a [host]" {
		t.Errorf("Name = %q", got)
	}
}

func TestSymbols(t *testing.T) {
	s := Symbols{Pass: "✓"}
	if got := s.Of(Pass); got != "✓" {
		t.Errorf("Of(pass) = %q", got)
	}
	if got := s.Of(Fail); got != "fail" {
		t.Errorf("Of(fail) = %q, want the outcome's name", got)
	}
	if got := TextSymbols.Of(Divergence); got != "xdiv" {
		t.Errorf("TextSymbols.Of(divergence) = %q", got)
	}
}
