package hostconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

var yamlLine = lazyRegexp(`^line (\d+): (.*)$`)

// syntaxError words a YAML syntax error of data for the operator. The YAML
// parser reports some errors at the line where the enclosing block began
// (an over- or under-indented key in a mapping: "line 2: did not find
// expected key" for a mistake on line 4), so the line is found again as
// the first line at which the document, read up to there, fails with the
// same error.
func syntaxError(data []byte, msg string) string {
	msg = strings.TrimPrefix(msg, "yaml: ")
	m := yamlLine().FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	reported, _ := strconv.Atoi(m[1])
	problem := m[2]
	line := reported
	lines := bytes.SplitAfter(data, []byte("\n"))
	for k := 1; k <= len(lines); k++ {
		prefix := bytes.Join(lines[:k], nil)
		if err := decodeAny(prefix); err != nil {
			if pm := yamlLine().FindStringSubmatch(strings.TrimPrefix(err.Error(), "yaml: ")); pm != nil && pm[2] == problem {
				line = k
				break
			}
		}
	}
	hint := ""
	switch problem {
	case "did not find expected key", "did not find expected '-' indicator", "mapping values are not allowed in this context",
		"found a tab character that violates indentation", "found character that cannot start any token":
		hint = " (check the indentation of this line: keys of one mapping line up, and YAML indents with spaces)"
	}
	return fmt.Sprintf("line %d: %s%s", line, problem, hint)
}

// decodeAny parses data as YAML without a target type.
func decodeAny(data []byte) error {
	var v any
	err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&v)
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
