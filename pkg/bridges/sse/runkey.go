package sse

import (
	"strconv"
	"strings"
)

// runKeyMark starts a run key that carries a principal (see [RunKey]).
const runKeyMark = "~"

// RunKey is the key under which a run is kept: its AG-UI runId within the
// namespace of the principal that started it (docs/design.md#secrets,
// "Principals own their runs"). Two principals may therefore use the same
// client runId, each for a run of its own, and a principal can neither see
// nor block another's run by its runId. Without a principal ("", no
// [WithOwner]) the key is the runId itself; otherwise it is
// "~<len(principal)>:<principal>/<runId>", which no runId without a
// principal maps to (such a runId that starts with "~" is written
// "~0:/<runId>"). The runId a client sees on the wire (RUN_STARTED, the
// routes) is always the runId itself; [SplitRunKey] recovers it.
func RunKey(principal, runID string) string {
	if principal == "" && !strings.HasPrefix(runID, runKeyMark) {
		return runID
	}
	return runKeyMark + strconv.Itoa(len(principal)) + ":" + principal + "/" + runID
}

// SplitRunKey returns the principal and the AG-UI runId of a key made by
// [RunKey]. Any other string is a runId without a principal.
func SplitRunKey(key string) (principal, runID string) {
	rest, ok := strings.CutPrefix(key, runKeyMark)
	if !ok {
		return "", key
	}
	n, rest, ok := strings.Cut(rest, ":")
	size, err := strconv.Atoi(n)
	if !ok || err != nil || size < 0 || size >= len(rest) || rest[size] != '/' || strconv.Itoa(size) != n {
		return "", key
	}
	return rest[:size], rest[size+1:]
}
