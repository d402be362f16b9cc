package report

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWriteJUnit(t *testing.T) {
	suites := []JUnitSuite{
		{Name: "a", Tests: []JUnitTest{
			{Name: "ok", Classname: "c.a", Seconds: 1.25, Outcome: Pass},
			{Name: "bad", Classname: "c.a", Seconds: 0.5, Outcome: Fail, Message: "step: wrong", Detail: "-want +got"},
			{Name: "xdiv", Classname: "c.a", Outcome: Divergence, Message: "stock <leaks>", Detail: "step (expected): left"},
		}},
		{Name: "b", Seconds: 90, Tests: []JUnitTest{
			{Name: "vm", Classname: "c.b", Outcome: Errored, Message: "timeout", Detail: "console"},
			{Name: "later", Classname: "c.b", Outcome: Skip, Message: "needs systemd"},
		}},
	}
	want := `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="a" tests="3" failures="1" errors="0" skipped="1" time="1.750">
    <testcase name="ok" classname="c.a" time="1.250"></testcase>
    <testcase name="bad" classname="c.a" time="0.500">
      <failure message="step: wrong">-want +got</failure>
    </testcase>
    <testcase name="xdiv" classname="c.a" time="0.000">
      <skipped message="expected divergence: stock &lt;leaks&gt;"></skipped>
      <system-out>step (expected): left</system-out>
    </testcase>
  </testsuite>
  <testsuite name="b" tests="2" failures="0" errors="1" skipped="1" time="90.000">
    <testcase name="vm" classname="c.b" time="0.000">
      <error message="timeout">console</error>
    </testcase>
    <testcase name="later" classname="c.b" time="0.000">
      <skipped message="needs systemd"></skipped>
    </testcase>
  </testsuite>
</testsuites>
`
	var b bytes.Buffer
	if err := WriteJUnit(&b, suites); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("junit.xml (-want +got):\n%s", diff)
	}
}

func TestMarkdownTable(t *testing.T) {
	got := MarkdownTable([]string{"case", "v1"}, [][]string{{"a", "pass"}, {"b|c", "FAIL"}})
	want := "| case | v1 |\n|---|---|\n| a | pass |\n| b\\|c | FAIL |\n"
	if got != want {
		t.Errorf("MarkdownTable = %q, want %q", got, want)
	}
}
