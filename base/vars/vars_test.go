package vars

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRefs(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"plain", nil, ""},
		{"${token}-a/${id}", []string{"token", "id"}, ""},
		{"${pid.intruder}", []string{"pid.intruder"}, ""},
		{"$token and $$ stay", nil, ""},
		{"x-${token", nil, `"${" without its "}"`},
		{"x-${}", nil, "empty ${}"},
	} {
		got, err := Refs(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Refs(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Refs(%q): %v", tc.in, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Refs(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestExpand(t *testing.T) {
	vals := map[string]string{"token": "cgc1", "id": "cgc1-a", "input": "${token}/x"}
	for _, tc := range []struct{ in, want, wantErr string }{
		{"p-${token}/${id}", "p-cgc1/cgc1-a", ""},
		// One pass: a value is not expanded again.
		{"${input}", "${token}/x", ""},
		{"${tokn}", "", "unknown variable ${tokn} (known here: ${id}, ${input}, ${token})"},
		{"${token", "", `"${" without its "}"`},
	} {
		got, err := Expand(tc.in, vals)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Expand(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestExpandJSON(t *testing.T) {
	got, err := ExpandJSON(json.RawMessage(`{"linux":{"cgroupsPath":"p-${token}","sysctl":{"k":"${id}"}},"args":["${id}",1]}`), map[string]string{"token": "t", "id": `a"b`})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"args":["a\"b",1],"linux":{"cgroupsPath":"p-t","sysctl":{"k":"a\"b"}}}`; string(got) != want {
		t.Errorf("ExpandJSON = %s, want %s", got, want)
	}
	if _, err := ExpandJSON(json.RawMessage(`{"a":"${nope}"}`), nil); err == nil {
		t.Error("an unknown variable in JSON was accepted")
	}
}
