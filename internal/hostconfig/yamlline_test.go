package hostconfig

import (
	"strings"
	"testing"
)

// A YAML syntax error is reported on the line that holds the mistake, not
// on the line where the enclosing block began, as one line.
func TestSyntaxErrorsNameTheirRealLine(t *testing.T) {
	for _, tt := range []struct {
		name, doc, want string
	}{
		{"under-indented key", "addr: 127.0.0.1:8080\nparent:\n  adapter: scripted\n scenario: x.yaml\n", "line 4: did not find expected key (check the indentation"},
		{"over-indented key after a deeper one", "addr: 127.0.0.1:8080\nparent:\n    adapter: scripted\n  scenario: x.yaml\n", "line 4: did not find expected key"},
		{"a list item's key", "addr: a\nagents:\n  - key: a\n   agent_card_url: http://x\n", "line 4: did not find expected '-' indicator"},
		{"after a flow mapping over two lines", "addr: a\nagents:\n  - key: a\n    policy: {max_timeout: 3s,\n      context: ephemeral}\n   agent_card_url: http://x\n", "line 6: "},
		{"a tab", "parent:\n  adapter: scripted\n\tscenario: x.yaml\n", "line 3: found a tab character"},
		{"a key too deep", "parent:\n  adapter: scripted\n    model: x: y\n", "line 3: mapping values are not allowed"},
		{"unclosed flow sequence", "addr: [1\n", "line 1: did not find expected ',' or ']'"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("host.yaml", []byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), "config host.yaml: "+tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
