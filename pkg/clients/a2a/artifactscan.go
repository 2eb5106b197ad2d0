package a2a

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
)

// artifactScanner decodes the common shape of a streamed artifact update
// without reflection: {"jsonrpc","id","result":{"artifactUpdate":{"taskId",
// "contextId","append","lastChunk","artifact":{"artifactId","name",
// "description","parts":[{"text","mediaType","filename"}]}}}}, keys in any
// order, unknown keys skipped, strings unescaped as encoding/json does. The
// ids and names a stream repeats on every chunk are kept from the previous
// event rather than allocated again. Anything else (a key that only
// case-folds to a known one, an escaped key, a repeated key, metadata,
// extensions, a part that is not text, a value of another type, invalid
// JSON) makes it give up: decodeStreamed then decodes the event as before,
// so what it returns is what encoding/json would (FuzzArtifactScanner holds
// the two equal). One scanner per stream; not safe for concurrent use.
type artifactScanner struct {
	data []byte
	pos  int
	// The previous event's repeated strings, reused when unchanged.
	taskID, contextID, artifactID, name, mediaType string
}

// scanAbort stops a scan that cannot take the input.
type scanAbort struct{}

// decode returns the artifact update data holds, or nil to give up.
func (s *artifactScanner) decode(data []byte) (ev sdk.Event) {
	s.data, s.pos = data, 0
	defer func() {
		s.data = nil
		if r := recover(); r != nil {
			if _, ok := r.(scanAbort); !ok {
				panic(r)
			}
			ev = nil
		}
	}()
	var u *sdk.TaskArtifactUpdateEvent
	s.space()
	s.object([]string{"jsonrpc", "id", "result", "error"}, func(key int) {
		switch key {
		case 0, 1:
			s.stringOrNull() // validated, not kept
		case 2:
			if s.null() {
				return
			}
			s.object([]string{"artifactUpdate", "message", "task", "statusUpdate"}, func(key int) {
				if key != 0 {
					s.mustNull() // another event alongside: a2a-go's business
					return
				}
				if s.null() {
					return
				}
				u = s.artifactUpdate()
			})
		case 3:
			s.mustNull()
		}
	})
	s.space()
	if s.pos != len(s.data) || u == nil {
		panic(scanAbort{})
	}
	return u
}

func (s *artifactScanner) artifactUpdate() *sdk.TaskArtifactUpdateEvent {
	u := &sdk.TaskArtifactUpdateEvent{}
	s.object([]string{"append", "artifact", "contextId", "lastChunk", "taskId", "metadata"}, func(key int) {
		switch key {
		case 0:
			u.Append = s.boolOrNull(u.Append)
		case 1:
			if !s.null() {
				u.Artifact = s.artifact()
			}
		case 2:
			s.contextID = s.reused(s.contextID)
			u.ContextID = s.contextID
		case 3:
			u.LastChunk = s.boolOrNull(u.LastChunk)
		case 4:
			s.taskID = s.reused(s.taskID)
			u.TaskID = sdk.TaskID(s.taskID)
		case 5:
			s.mustNull()
		}
	})
	return u
}

func (s *artifactScanner) artifact() *sdk.Artifact {
	a := &sdk.Artifact{}
	s.object([]string{"artifactId", "description", "extensions", "metadata", "name", "parts"}, func(key int) {
		switch key {
		case 0:
			s.artifactID = s.reused(s.artifactID)
			a.ID = sdk.ArtifactID(s.artifactID)
		case 1:
			a.Description = s.str("")
		case 2, 3:
			s.mustNull()
		case 4:
			s.name = s.reused(s.name)
			a.Name = s.name
		case 5:
			if s.null() {
				a.Parts = nil
				return
			}
			a.Parts = sdk.ContentParts{}
			s.array(func() {
				if s.null() {
					a.Parts = append(a.Parts, nil)
					return
				}
				a.Parts = append(a.Parts, s.part())
			})
		}
	})
	return a
}

func (s *artifactScanner) part() *sdk.Part {
	p := &sdk.Part{}
	hasText := false
	s.object([]string{"text", "raw", "data", "url", "filename", "mediaType", "metadata"}, func(key int) {
		switch key {
		case 0:
			if !s.null() {
				p.Content = sdk.Text(s.str(""))
				hasText = true
			}
		case 1, 2, 3, 6:
			s.mustNull()
		case 4:
			p.Filename = s.str("")
		case 5:
			s.mediaType = s.reused(s.mediaType)
			p.MediaType = s.mediaType
		}
	})
	if !hasText {
		panic(scanAbort{}) // a2a-go decides what an empty part is
	}
	return p
}

// object reads an object whose known keys are names (exact case; each at
// most once), calling value with a key's index for its value and skipping
// the values of other keys.
func (s *artifactScanner) object(names []string, value func(key int)) {
	s.expect('{')
	var seen uint
	s.space()
	if s.peek() == '}' {
		s.pos++
		return
	}
	for {
		s.space()
		key := s.key()
		s.space()
		s.expect(':')
		s.space()
		i := -1
		for j, n := range names {
			if string(key) == n {
				i = j
				break
			}
		}
		if i < 0 {
			for _, n := range names {
				if strings.EqualFold(string(key), n) {
					panic(scanAbort{}) // encoding/json would match it
				}
			}
		}
		if i < 0 {
			s.skip()
		} else {
			if seen&(1<<i) != 0 {
				panic(scanAbort{})
			}
			seen |= 1 << i
			value(i)
		}
		s.space()
		switch s.next() {
		case ',':
			continue
		case '}':
			return
		default:
			panic(scanAbort{})
		}
	}
}

func (s *artifactScanner) array(elem func()) {
	s.expect('[')
	s.space()
	if s.peek() == ']' {
		s.pos++
		return
	}
	for {
		s.space()
		elem()
		s.space()
		switch s.next() {
		case ',':
			continue
		case ']':
			return
		default:
			panic(scanAbort{})
		}
	}
}

// key reads an object key, which must need no unescaping.
func (s *artifactScanner) key() []byte {
	s.expect('"')
	start := s.pos
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		if c == '"' {
			k := s.data[start:s.pos]
			s.pos++
			return k
		}
		if c == '\\' || c < 0x20 {
			panic(scanAbort{})
		}
		s.pos++
	}
	panic(scanAbort{})
}

// null consumes a null, if there is one.
func (s *artifactScanner) null() bool {
	if bytes.HasPrefix(s.data[s.pos:], litNull) {
		s.pos += 4
		return true
	}
	return false
}

var litNull, litTrue, litFalse = []byte("null"), []byte("true"), []byte("false")

func (s *artifactScanner) mustNull() {
	if !s.null() {
		panic(scanAbort{})
	}
}

func (s *artifactScanner) boolOrNull(cur bool) bool {
	rest := s.data[s.pos:]
	switch {
	case bytes.HasPrefix(rest, litTrue):
		s.pos += 4
		return true
	case bytes.HasPrefix(rest, litFalse):
		s.pos += 5
		return false
	case s.null():
		return cur // encoding/json leaves the field as it was
	}
	panic(scanAbort{})
}

func (s *artifactScanner) stringOrNull() {
	if !s.null() {
		s.str("")
	}
}

// reused reads a string (a null leaves the field empty, as encoding/json
// leaves a field it never set) and returns prev when it is the same.
func (s *artifactScanner) reused(prev string) string {
	if s.null() {
		return ""
	}
	return s.str(prev)
}

// str reads a JSON string as encoding/json unquotes it: escapes decoded,
// an invalid surrogate or invalid UTF-8 as U+FFFD. When it equals prev,
// prev is returned and nothing is allocated.
func (s *artifactScanner) str(prev string) string {
	s.expect('"')
	start := s.pos
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			raw := s.data[start:s.pos]
			s.pos++
			if string(raw) == prev {
				return prev
			}
			return string(raw)
		case c == '\\' || c >= utf8.RuneSelf:
			return s.unquote(start, prev)
		case c < 0x20:
			panic(scanAbort{})
		}
		s.pos++
	}
	panic(scanAbort{})
}

// unquote decodes the string that began at start (just after its quote).
func (s *artifactScanner) unquote(start int, prev string) string {
	out := make([]byte, 0, s.pos-start+16)
	out = append(out, s.data[start:s.pos]...)
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			if string(out) == prev {
				return prev
			}
			return string(out)
		case c < 0x20:
			panic(scanAbort{})
		case c == '\\':
			s.pos++
			if s.pos >= len(s.data) {
				panic(scanAbort{})
			}
			e := s.data[s.pos]
			s.pos++
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := s.hex4()
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if s.pos+1 < len(s.data) && s.data[s.pos] == '\\' && s.data[s.pos+1] == 'u' {
						save := s.pos
						s.pos += 2
						r2 = s.hex4()
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							out = utf8.AppendRune(out, dec)
							continue
						}
						s.pos = save // the second escape stands on its own
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
			default:
				panic(scanAbort{})
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			s.pos++
		default:
			r, size := utf8.DecodeRune(s.data[s.pos:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, s.data[s.pos:s.pos+size]...)
			}
			s.pos += size
		}
	}
	panic(scanAbort{})
}

func (s *artifactScanner) hex4() rune {
	if s.pos+4 > len(s.data) {
		panic(scanAbort{})
	}
	var r rune
	for _, c := range s.data[s.pos : s.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			panic(scanAbort{})
		}
		r = r*16 + rune(c)
	}
	s.pos += 4
	return r
}

// skip validates and passes over any JSON value.
func (s *artifactScanner) skip() {
	switch c := s.peek(); {
	case c == '{':
		s.pos++
		s.space()
		if s.peek() == '}' {
			s.pos++
			return
		}
		for {
			s.space()
			s.str("")
			s.space()
			s.expect(':')
			s.space()
			s.skip()
			s.space()
			switch s.next() {
			case ',':
				continue
			case '}':
				return
			default:
				panic(scanAbort{})
			}
		}
	case c == '[':
		s.array(s.skip)
	case c == '"':
		s.str("")
	case c == 't' || c == 'f':
		s.boolOrNull(false)
	case c == 'n':
		s.mustNull()
	case c == '-' || c >= '0' && c <= '9':
		s.number()
	default:
		panic(scanAbort{})
	}
}

// number passes over a JSON number (its grammar, as encoding/json checks it).
func (s *artifactScanner) number() {
	if s.peek() == '-' {
		s.pos++
	}
	switch c := s.peek(); {
	case c == '0':
		s.pos++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		panic(scanAbort{})
	}
	if s.peek() == '.' {
		s.pos++
		s.digits()
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.pos++
		if c := s.peek(); c == '+' || c == '-' {
			s.pos++
		}
		s.digits()
	}
}

func (s *artifactScanner) digits() {
	start := s.pos
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
	}
	if s.pos == start {
		panic(scanAbort{})
	}
}

func (s *artifactScanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *artifactScanner) peek() byte {
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

func (s *artifactScanner) next() byte {
	c := s.peek()
	s.pos++
	return c
}

func (s *artifactScanner) expect(c byte) {
	if s.next() != c {
		panic(scanAbort{})
	}
}
