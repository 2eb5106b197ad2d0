package cluster

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// Names of the JetStream streams, buckets and subjects a cluster uses
// (docs/design.md#scale-out). Every replica of a host shares them.
const (
	// FramesStream holds every run's AG-UI frames, one subject per run.
	FramesStream = "AGENTADAPTOR_FRAMES"
	// framesPrefix + token(runId) is a run's frames subject.
	framesPrefix = "agentadaptor.frames."
	// controlPrefix + token(replica) is a replica's control subject
	// (request/reply: cancel, input answers).
	controlPrefix = "agentadaptor.ctl."

	// RunsBucket keeps a record per run (owner replica, principal, ids, end).
	RunsBucket = "agentadaptor-runs"
	// ActiveBucket lists the runs that have not ended.
	ActiveBucket = "agentadaptor-active"
	// LeasesBucket holds each active run's lease (TTL: the lease).
	LeasesBucket = "agentadaptor-leases"
	// ClaimsBucket records which replica is ending a lost run (refreshed
	// while it works, marked done when it finished).
	ClaimsBucket = "agentadaptor-claims"
	// AuditBucket holds the delegation audit records.
	AuditBucket = "agentadaptor-audit"
	// ContextsBucket holds the sticky remote contexts of chat threads.
	ContextsBucket = "agentadaptor-contexts"
	// ArtifactsBucket is the object store of remote artifacts.
	ArtifactsBucket = "agentadaptor-artifacts"
	// CancelsBucket records which replica cancels each remote task (key
	// token(sdkRunId).token(delegationId)): the first to create the key
	// sends CancelTask, nobody else does.
	CancelsBucket = "agentadaptor-cancels"
)

// Headers of the frames stream's messages.
const (
	hdrID   = "Aa-Id"   // the frame's id (cursor); of a batch, its first frame's
	hdrType = "Aa-Type" // the frame's AG-UI type (a message of one frame)
	hdrN    = "Aa-N"    // a batch: the number of frames (data: see encodeBatch)
	hdrEnd  = "Aa-End"  // an end marker: the run's last frame id
)

// maxPlainToken is the longest id encoded as is (base64url); longer ones
// are hashed.
const maxPlainToken = 96

// token encodes an arbitrary id as one NATS subject token and KV key
// segment: base64url without padding ([A-Za-z0-9_-]), or "=" and the
// base64url SHA-256 of a long id ('=' never occurs in the plain form).
func token(id string) string {
	if len(id) <= maxPlainToken {
		if id == "" {
			return "_"
		}
		return base64.RawURLEncoding.EncodeToString([]byte(id))
	}
	sum := sha256.Sum256([]byte(id))
	return "=" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// runKey is the key of a run in every bucket and the last token of its
// frames subject: token(runId), or, when run ids are the principal's own
// (the host passes the principal), token(principal NUL runId). A
// principal never contains NUL.
func runKey(principal, runID string) string {
	if principal == "" {
		return token(runID)
	}
	return token(principal + "\x00" + runID)
}

func framesSubject(key string) string      { return framesPrefix + key }
func controlSubject(replica string) string { return controlPrefix + token(replica) }

// sanitizeReplica turns a host name into a replica name.
func sanitizeReplica(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := b.String()
	if len(out) > 48 {
		out = out[:48]
	}
	return out
}
