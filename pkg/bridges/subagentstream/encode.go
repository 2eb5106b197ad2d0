package subagentstream

import (
	"strconv"
	"unicode/utf8"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// The hot events of a delegation (text deltas above all, but also started,
// status, text start/end, finished) are encoded here directly, without the
// map of Value and without reflection: the bytes are exactly those of
// json.Marshal(agui.NewCustomEvent(name, Value(ev, runID, false), at)), keys
// in the map's sorted order (a test holds the two together). Events that
// carry an artifact, an error or a raw payload, and ModeStandard's
// attributed events, take the general path (docs/design.md#subagent-wire-shape).

// identity is what a delegation event's CUSTOM value says besides its
// kind-specific fields. A coalesced text delta is re-encoded from it
// (docs/design.md#backpressure); consecutive deltas of a delegation share
// one identity while its fields stay the same.
type identity struct {
	runID, parentToolCallID, delegationID, agentKey, agentName, protocol string
	remoteTaskID, remoteContextID, status, text                          string
	// head and tail are the identity's part of the value, encoded once:
	// the keys before "delta" and "messageId" (from ,"value":{), and those
	// after them up to the event's end, without "synthesized". Set by
	// identityOf, never changed: frames in subscribers' queues re-encode
	// from them when they coalesce.
	head, tail []byte
}

func identityOf(runID string, ev *delegation.DelegationEvent) identity {
	id := identity{
		runID: runID, parentToolCallID: ev.ParentToolCallID, delegationID: ev.DelegationID,
		agentKey: ev.AgentKey, agentName: ev.AgentName, protocol: ev.Protocol,
		remoteTaskID: ev.RemoteTaskID, remoteContextID: ev.RemoteContextID,
		status: ev.Status, text: ev.Text,
	}
	head := appendJSONString([]byte(`,"value":{"agentKey":`), id.agentKey)
	head = appendField(head, `,"agentName":`, id.agentName)
	head = append(head, `,"delegationId":`...)
	id.head = appendJSONString(head, id.delegationID)
	id.tail = id.appendTail(nil, false)
	return id
}

// appendTail appends the keys of the value after "messageId", in sorted
// order, and the event's end.
func (id *identity) appendTail(dst []byte, synthesized bool) []byte {
	dst = appendField(dst, `,"parentToolCallId":`, id.parentToolCallID)
	dst = append(dst, `,"protocol":`...)
	dst = appendJSONString(dst, id.protocol)
	dst = appendField(dst, `,"remoteContextId":`, id.remoteContextID)
	dst = appendField(dst, `,"remoteTaskId":`, id.remoteTaskID)
	dst = append(dst, `,"runId":`...)
	dst = appendJSONString(dst, id.runID)
	dst = appendField(dst, `,"status":`, id.status)
	if synthesized {
		dst = append(dst, `,"synthesized":true`...)
	}
	dst = appendField(dst, `,"text":`, id.text)
	return append(dst, "}}"...)
}

// is reports whether ev (in the stream runID) has this identity.
func (id *identity) is(runID string, ev *delegation.DelegationEvent) bool {
	return id.runID == runID && id.parentToolCallID == ev.ParentToolCallID && id.delegationID == ev.DelegationID &&
		id.agentKey == ev.AgentKey && id.agentName == ev.AgentName && id.protocol == ev.Protocol &&
		id.remoteTaskID == ev.RemoteTaskID && id.remoteContextID == ev.RemoteContextID && id.status == ev.Status && id.text == ev.Text
}

// fastEncodable reports whether ev takes the direct encoding.
func fastEncodable(ev *delegation.DelegationEvent, mode Mode, includeRaw bool) bool {
	return mode != ModeStandard && ev.Artifact == nil && ev.Error == nil && !(includeRaw && len(ev.Raw) > 0) && ev.Kind != ""
}

// appendCustomEvent appends {"type":"CUSTOM","timestamp":ts,"name":name,
// "value":{...}} for a delegation event with identity id and the given
// message id and delta.
func appendCustomEvent(dst []byte, name string, ts int64, id *identity, messageID, delta string, synthesized bool) []byte {
	dst = append(dst, `{"type":"CUSTOM","timestamp":`...)
	dst = strconv.AppendInt(dst, ts, 10)
	dst = append(dst, `,"name":`...)
	dst = appendJSONString(dst, name)
	// The keys of Value's map, in sorted order; runId, delegationId,
	// agentKey and protocol are always present.
	dst = append(dst, id.head...)
	dst = appendField(dst, `,"delta":`, delta)
	dst = appendField(dst, `,"messageId":`, messageID)
	if synthesized {
		return id.appendTail(dst, true)
	}
	return append(dst, id.tail...)
}

func appendField(dst []byte, key, v string) []byte {
	if v == "" {
		return dst
	}
	return appendJSONString(append(dst, key...), v)
}

// encodedSize is the length of appendCustomEvent's output when no
// character of name, messageID or delta needs escaping (append grows the
// buffer when one does), "synthesized" counted in: a frame's buffer is
// allocated once and at its size, since replay logs keep it
// (docs/design.md#replay-and-reconnect).
func encodedSize(name string, id *identity, messageID, delta string) int {
	n := len(`{"type":"CUSTOM","timestamp":`) + 20 + len(`,"name":""`) + len(name) + len(`,"synthesized":true`)
	field := func(key, v string) {
		if v != "" {
			n += len(key) + 2 + len(v)
		}
	}
	field(`,"delta":`, delta)
	field(`,"messageId":`, messageID)
	return n + len(id.head) + len(id.tail)
}

// fastFrame encodes a delegation event the direct way (see fastEncodable).
func fastFrame(name string, ts int64, id *identity, messageID, delta string, synthesized bool) *Frame {
	data := appendCustomEvent(make([]byte, 0, encodedSize(name, id, messageID, delta)), name, ts, id, messageID, delta, synthesized)
	return &Frame{Type: events.EventTypeCustom, Data: data, delegation: id.delegationID}
}

// deltaFrame is a text delta's frame and what coalesces it, allocated
// together.
type deltaFrame struct {
	Frame
	info deltaInfo
}

// fastDeltaFrame encodes a text delta the direct way, coalescable.
func fastDeltaFrame(ts int64, id *identity, messageID, delta string) *Frame {
	name := string(delegation.DelegationTextDelta)
	df := &deltaFrame{
		Frame: Frame{Type: events.EventTypeCustom, delegation: id.delegationID,
			Data: appendCustomEvent(make([]byte, 0, encodedSize(name, id, messageID, delta)), name, ts, id, messageID, delta, false)},
		info: deltaInfo{delegationID: id.delegationID, messageID: messageID, text: delta, id: id, ts: ts},
	}
	df.delta = &df.info
	return &df.Frame
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string exactly as encoding/json
// writes it with HTML escaping (json.Marshal's default): <, > and & as
// \u00XX, control characters escaped, invalid UTF-8 as \ufffd, U+2028 and
// U+2029 escaped.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
