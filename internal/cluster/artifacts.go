package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
)

// ArtifactStore is an artifact.Store shared by every replica: a JetStream
// object store (ArtifactsBucket), bounded by Config.ArtifactBytes and
// Config.TTL. When it is full, new artifacts are refused (ErrStoreFull)
// until the TTL frees space: objects are never cut to make room.
type ArtifactStore struct{ c *Cluster }

var _ artifact.Store = ArtifactStore{}

// Artifacts returns the cluster's artifact store.
func (c *Cluster) Artifacts() ArtifactStore { return ArtifactStore{c: c} }

func objectName(runID, delegationID, id string) string {
	return token(runID) + "." + token(delegationID) + "." + token(id)
}

// Put implements artifact.Store.
func (s ArtifactStore) Put(ctx context.Context, a artifact.Stored) error {
	if int64(len(a.Content)) > s.c.cfg.ArtifactBytes {
		return artifact.ErrStoreFull
	}
	meta := jetstream.ObjectMeta{Name: objectName(a.RunID, a.DelegationID, a.ID),
		Metadata: map[string]string{"run_id": a.RunID, "delegation_id": a.DelegationID, "id": a.ID, "name": a.Name, "mime_type": a.MimeType}}
	_, err := s.c.objects.Put(ctx, meta, bytes.NewReader(a.Content))
	if err != nil {
		if strings.Contains(err.Error(), "maximum bytes") || strings.Contains(err.Error(), "resource limits") {
			return fmt.Errorf("%w: %w", artifact.ErrStoreFull, err)
		}
		return fmt.Errorf("cluster: storing an artifact: %w", err)
	}
	return nil
}

// Get implements artifact.Store.
func (s ArtifactStore) Get(ctx context.Context, runID, delegationID, artifactID string) (artifact.Stored, error) {
	name := objectName(runID, delegationID, artifactID)
	res, err := s.c.objects.Get(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return artifact.Stored{}, artifact.ErrNotFound
	}
	if err != nil {
		return artifact.Stored{}, fmt.Errorf("cluster: reading an artifact: %w", err)
	}
	defer res.Close()
	info, err := res.Info()
	if err != nil {
		return artifact.Stored{}, err
	}
	md := info.Metadata
	if md["run_id"] != runID || md["delegation_id"] != delegationID || md["id"] != artifactID {
		return artifact.Stored{}, artifact.ErrNotFound
	}
	content, err := io.ReadAll(io.LimitReader(res, int64(info.Size)+1))
	if err != nil {
		return artifact.Stored{}, fmt.Errorf("cluster: reading an artifact: %w", err)
	}
	return artifact.Stored{RunID: runID, DelegationID: delegationID, ID: artifactID, Name: md["name"], MimeType: md["mime_type"], Content: content}, nil
}
