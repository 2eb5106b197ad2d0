package benche2e

import (
	"bytes"
	"strings"
	"testing"
)

// The ratio columns: project to every baseline, the project's other
// configurations to bare only.
func TestTableRatioColumns(t *testing.T) {
	vals := map[string]float64{"project": 120, "project-nice": 30, "bare": 3, "peer": 40}
	rows := []row{{"p99", func(s string) (float64, string, bool) {
		v, ok := vals[s]
		return v, "", ok
	}}}
	for _, tt := range []struct {
		systems []string
		header  string
		ratios  string
	}{
		{[]string{"project", "project-nice", "bare", "peer"},
			"| | project | project-nice | bare | peer | project/bare | project/peer | project-nice/bare |",
			"| 40.00× | 3.00× | 10.00× |"},
		{[]string{"project", "bare", "peer"},
			"| | project | bare | peer | project/bare | project/peer |",
			"| 40.00× | 3.00× |"},
		{[]string{"project", "project-nice"},
			"| | project | project-nice | project-nice/project |",
			"| 0.25× |"},
		{[]string{"project-nice", "peer"},
			"| | project-nice | peer | project-nice/peer |",
			"| 0.75× |"},
	} {
		var b bytes.Buffer
		table(&b, tt.systems, rows)
		lines := strings.Split(b.String(), "\n")
		if lines[0] != tt.header {
			t.Errorf("%v: header %q, want %q", tt.systems, lines[0], tt.header)
		}
		if !strings.HasSuffix(lines[2], tt.ratios) {
			t.Errorf("%v: row %q, want it to end in %q", tt.systems, lines[2], tt.ratios)
		}
		if n, want := strings.Count(lines[1], "|"), strings.Count(lines[0], "|"); n != want {
			t.Errorf("%v: separator %q has %d bars, header %d", tt.systems, lines[1], n, want)
		}
	}
}
