package cluster

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"

	"github.com/seed0634/agentadaptor/pkg/credentials"
)

// Defaults of Config.
const (
	DefaultLease          = 10 * time.Second
	DefaultRetention      = subagentstream.DefaultRetention
	DefaultBufferBytes    = 64 << 20
	DefaultArtifactBytes  = 256 << 20
	DefaultTTL            = 24 * time.Hour
	DefaultFramesBytes    = 1 << 30
	DefaultConnectTimeout = 5 * time.Second
)

// Config configures a Cluster. URL is required; every other field has a
// documented default.
type Config struct {
	// URL is the NATS server (a comma-separated list for a NATS cluster).
	URL string
	// Replica names this replica (default: hostname-pid).
	Replica string
	// Lease is how long a replica's runs outlive its last refresh before a
	// survivor ends them (default 10s); it is refreshed every Lease/3.
	Lease time.Duration
	// CredsRef refers to NATS credentials as env:NAME or file:/path: a
	// .creds file's content (user JWT and nkey seed, for a server in
	// operator mode) or a user nkey seed alone (SU..., for a server whose
	// config lists the user's public nkey); "" for none.
	CredsRef string
	// Retention is how long an ended run stays replayable (default: the
	// hub's, 5 minutes).
	Retention time.Duration
	// Stream configures the mirrors of other replicas' runs (as the hub's
	// HubOptions.Stream).
	Stream subagentstream.Options
	// BufferBytes bounds the frames and records waiting for NATS (default
	// 64 MiB): beyond it a run's journal is abandoned (see Journal).
	BufferBytes int
	// ArtifactBytes bounds the artifact object store (default 256 MiB).
	ArtifactBytes int64
	// TTL is how long run records, audit records, artifacts, contexts and
	// frames are kept (default 24h).
	TTL time.Duration
	// FramesBytes bounds the frames stream (default 1 GiB; the oldest
	// frames are discarded first).
	FramesBytes int64
	// ConnectTimeout bounds the first connection (default 5s).
	ConnectTimeout time.Duration
	// Logger receives operational logs (default: discard). Credentials never
	// reach it.
	Logger *slog.Logger
	// Observer receives the cluster's health for the metrics (nil: none).
	Observer Observer
}

func (c *Config) defaults() {
	c.Lease = cmp.Or(c.Lease, DefaultLease)
	c.Retention = cmp.Or(c.Retention, DefaultRetention)
	c.BufferBytes = cmp.Or(c.BufferBytes, DefaultBufferBytes)
	c.ArtifactBytes = cmp.Or(c.ArtifactBytes, DefaultArtifactBytes)
	c.TTL = cmp.Or(c.TTL, DefaultTTL)
	c.FramesBytes = cmp.Or(c.FramesBytes, DefaultFramesBytes)
	c.ConnectTimeout = cmp.Or(c.ConnectTimeout, DefaultConnectTimeout)
	if c.Replica == "" {
		host, _ := os.Hostname()
		c.Replica = fmt.Sprintf("%s-%d", sanitizeReplica(cmp.Or(host, "host")), os.Getpid())
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
}

// Errors of New and of the cluster's operations.
var (
	// ErrUnreachable: the NATS server could not be reached.
	ErrUnreachable = errors.New("cluster: cannot reach NATS")
	// ErrNoJetStream: the NATS server has no JetStream.
	ErrNoJetStream = errors.New("cluster: NATS has no JetStream")
	// ErrDisconnected: the replica has lost NATS for now.
	ErrDisconnected = errors.New("cluster: NATS is unreachable for now")
	// ErrClosed: the cluster was closed.
	ErrClosed = errors.New("cluster: closed")
)

// Cluster is this replica's membership of a scaled-out host. New connects;
// the host wires its parts (Journal, Source, AuditStore, ArtifactStore,
// ContextStore) and calls Start with what the replica serves; Close stops
// everything and waits for it.
type Cluster struct {
	cfg Config
	log *slog.Logger
	obs Observer
	nc  *nats.Conn
	js  jetstream.JetStream
	// lnc is a connection of its own for the leases, so that renewals
	// never queue behind frames (lleases: the leases bucket over it).
	lnc     *nats.Conn
	ljs     jetstream.JetStream
	lleases jetstream.KeyValue

	frames   jetstream.Stream
	runs     jetstream.KeyValue
	active   jetstream.KeyValue
	leases   jetstream.KeyValue
	claims   jetstream.KeyValue
	auditKV  jetstream.KeyValue
	contexts jetstream.KeyValue
	objects  jetstream.ObjectStore
	cancels  jetstream.KeyValue

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	connected   atomic.Bool
	reconnectAt atomic.Int64 // unix nanos of the last (re)connection
	started     atomic.Bool
	closeOnce   sync.Once
	spawnMu     spawnGuard
	pending     atomic.Int64 // bytes of frames waiting to be published
	publishers  atomic.Int64 // runs' publisher goroutines running
	fenced      fencedRuns
	audit       *AuditStore
	mirrors     *mirrors
	local       *localRuns
	ctlSub      *nats.Subscription
	ctlSem      chan struct{}
	handlers    Handlers
	holds       holds
	claimWatch  claimWatch
	reconnected chan struct{} // signalled on each reconnection (watchClaims)

	// crashAt, in tests, stops a takeover at a step ("claimed", "frame"
	// after the closing frames, "stream", "orphan" after each ended
	// delegation, "orphans", "record", "done") when it returns true, as if
	// the replica died there.
	crashAt func(step string) bool
	// wrote, in tests, is called after each write that makes a run known
	// ("record", "lease", "active": Reserve's, or a publisher's for a run
	// without a reservation), as if the replica stalled there.
	wrote func(step string)
}

// New connects to NATS (bounded by Config.ConnectTimeout), makes sure the
// streams and buckets exist, and returns the cluster. The error says what
// failed, naming the URL (never credentials).
func New(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.URL == "" {
		return nil, errors.New("cluster: Config.URL is required")
	}
	cfg.defaults()
	c := &Cluster{cfg: cfg, log: cfg.Logger.With("replica", cfg.Replica), obs: cfg.Observer, ctlSem: make(chan struct{}, 64), reconnected: make(chan struct{}, 1)}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.local = newLocalRuns()
	c.mirrors = newMirrors(c)
	c.audit = newAuditStore(c)
	opts := []nats.Option{
		nats.Name("agentadaptor " + cfg.Replica),
		nats.Timeout(cfg.ConnectTimeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		// Our own bounded buffer (the publisher's) holds what waits for
		// NATS: publishing while disconnected fails at once.
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			c.connected.Store(false)
			if c.ctx.Err() != nil {
				return // closing
			}
			c.obs.NATSConnected(false)
			c.log.Warn("cluster: lost NATS; new runs are refused until it is back", "err", err)
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			c.reconnectAt.Store(time.Now().UnixNano())
			c.connected.Store(true)
			c.obs.NATSConnected(true)
			c.log.Info("cluster: NATS is back")
			select {
			case c.reconnected <- struct{}{}:
			default:
			}
			c.wakeJournals()
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			// E.g. a permissions violation: the account's permissions
			// lack a subject the cluster uses (README's configuration).
			c.log.Error("cluster: NATS reported an error", "err", err)
		}),
	}
	var auth nats.Option
	if cfg.CredsRef != "" {
		o, err := credsOption(cfg.CredsRef)
		if err != nil {
			return nil, err
		}
		auth = o
		opts = append(opts, o)
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %w", ErrUnreachable, redactURL(cfg.URL), err)
	}
	c.nc = nc
	lopts := []nats.Option{nats.Name("agentadaptor " + cfg.Replica + " leases"), nats.Timeout(cfg.ConnectTimeout),
		nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond), nats.ReconnectBufSize(-1)}
	if auth != nil {
		lopts = append(lopts, auth)
	}
	if c.lnc, err = nats.Connect(cfg.URL, lopts...); err != nil {
		nc.Close()
		return nil, fmt.Errorf("%w at %s: %w", ErrUnreachable, redactURL(cfg.URL), err)
	}
	c.connected.Store(true)
	c.reconnectAt.Store(time.Now().UnixNano())
	if c.js, err = jetstream.New(nc); err != nil {
		nc.Close()
		c.lnc.Close()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	pctx, pcancel := context.WithTimeout(ctx, cfg.ConnectTimeout+10*time.Second)
	defer pcancel()
	err = c.provision(pctx)
	if err == nil {
		if c.ljs, err = jetstream.New(c.lnc); err == nil {
			c.lleases, err = c.ljs.KeyValue(pctx, LeasesBucket)
		}
	}
	if err != nil {
		nc.Close()
		c.lnc.Close()
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("%w at %s: start nats-server with -js (and --store_dir for persistence)", ErrNoJetStream, redactURL(cfg.URL))
		}
		return nil, fmt.Errorf("cluster: preparing JetStream at %s: %w", redactURL(cfg.URL), err)
	}
	c.obs.NATSConnected(true)
	c.wg.Go(c.audit.run)
	return c, nil
}

// provision creates (or updates) the streams and buckets.
func (c *Cluster) provision(ctx context.Context) error {
	var err error
	ttl := c.cfg.TTL
	if c.frames, err = c.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: FramesStream, Subjects: []string{framesPrefix + "*"}, Storage: jetstream.FileStorage,
		MaxAge: ttl, MaxBytes: c.cfg.FramesBytes, Discard: jetstream.DiscardOld, Duplicates: 2 * time.Minute,
		Description: "agentadaptor: the AG-UI frames of every run, one subject per run",
	}); err != nil {
		return err
	}
	kv := func(dst *jetstream.KeyValue, name string, ttl time.Duration, desc string) error {
		if err != nil {
			return err
		}
		*dst, err = c.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name, TTL: ttl, Storage: jetstream.FileStorage, Description: desc})
		return err
	}
	_ = kv(&c.runs, RunsBucket, ttl, "agentadaptor: one record per run")
	_ = kv(&c.active, ActiveBucket, 0, "agentadaptor: the runs that have not ended")
	_ = kv(&c.leases, LeasesBucket, c.cfg.Lease, "agentadaptor: the leases of active runs")
	_ = kv(&c.claims, ClaimsBucket, ttl, "agentadaptor: takeovers of lost runs")
	_ = kv(&c.auditKV, AuditBucket, ttl, "agentadaptor: delegation audit records")
	_ = kv(&c.contexts, ContextsBucket, ttl, "agentadaptor: sticky remote contexts of chat threads")
	_ = kv(&c.cancels, CancelsBucket, ttl, "agentadaptor: which replica cancels each remote task")
	if err != nil {
		return err
	}
	c.objects, err = c.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: ArtifactsBucket, TTL: ttl,
		MaxBytes: c.cfg.ArtifactBytes, Storage: jetstream.FileStorage, Description: "agentadaptor: remote artifacts"})
	return err
}

// credsOption resolves a NATS credentials reference: the content of a
// .creds file (user JWT and nkey seed: a server in operator mode), or a
// user nkey seed alone (a server whose authorization lists the user's
// public nkey, as the README's nats-server configuration does).
func credsOption(ref string) (nats.Option, error) {
	content, err := credentials.ReadDocument(ref)
	if err != nil {
		return nil, fmt.Errorf("cluster: creds_ref: %w", err)
	}
	if jwt, err := nkeys.ParseDecoratedJWT(content); err == nil && !bytes.Equal(bytes.TrimSpace(content), []byte(jwt)) {
		kp, err := nkeys.ParseDecoratedNKey(content)
		if err != nil {
			return nil, fmt.Errorf("cluster: creds_ref %s holds a user JWT but no nkey seed (a NATS .creds file is expected)", ref)
		}
		seed, err := kp.Seed()
		if err != nil {
			return nil, fmt.Errorf("cluster: creds_ref %s: the nkey is not a seed", ref)
		}
		return nats.UserJWTAndSeed(jwt, string(seed)), nil
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(content))
	if err != nil {
		return nil, fmt.Errorf("cluster: creds_ref %s holds neither a .creds file nor a user nkey seed (SU...)", ref)
	}
	pub, err := kp.PublicKey()
	if err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return nil, fmt.Errorf("cluster: creds_ref %s: the nkey seed is not a user's (SU...)", ref)
	}
	return nats.Nkey(pub, kp.Sign), nil
}

// redactURL drops any userinfo from a (list of) NATS URL(s).
func redactURL(u string) string {
	parts := strings.Split(u, ",")
	for i, p := range parts {
		if at := strings.LastIndex(p, "@"); at >= 0 {
			if s := strings.Index(p, "://"); s >= 0 && s < at {
				parts[i] = p[:s+3] + "***@" + p[at+1:]
			}
		}
	}
	return strings.Join(parts, ",")
}

// Replica returns this replica's name.
func (c *Cluster) Replica() string { return c.cfg.Replica }

// Lease returns the run lease.
func (c *Cluster) Lease() time.Duration { return c.cfg.Lease }

// Healthy reports whether the replica can take new runs: NATS is connected
// and the publisher's buffer has room. Err says why not.
func (c *Cluster) Healthy() bool { return c.Err() == nil }

// Err returns why the replica cannot take new runs, nil when it can.
func (c *Cluster) Err() error {
	switch {
	case c.ctx.Err() != nil:
		return ErrClosed
	case !c.connected.Load() || !c.nc.IsConnected() || !c.lnc.IsConnected():
		return ErrDisconnected
	case c.pending.Load() >= int64(c.cfg.BufferBytes):
		return fmt.Errorf("%w: %d bytes wait to be published", ErrDisconnected, c.pending.Load())
	}
	return nil
}

// Handlers are what a replica serves for the others.
type Handlers struct {
	// Local serves a request forwarded by another replica (cancel, input
	// answers) on this replica's routes, acting for principal.
	Local func(principal string, w http.ResponseWriter, r *http.Request)
	// Hold counts a client following one of this replica's runs on
	// another replica as attached (the hub's Hold of the run's key, made
	// from the principal that started it and its runId); nil: not counted.
	Hold func(principal, runID string) (release func(), ok bool)
	// EndOrphan ends a lost run's running delegation from its audit record
	// (the delegator's EndOrphan); nil: remote tasks are not cancelled.
	EndOrphan func(ctx context.Context, rec audit.Record) error
}

// Start starts the replica's background work: the lease refresher, the
// scanner for lost runs, and the control subscription serving h.
func (c *Cluster) Start(h Handlers) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("cluster: already started")
	}
	c.handlers = h
	sub, err := c.nc.Subscribe(controlSubject(c.cfg.Replica), c.onControl)
	if err != nil {
		return fmt.Errorf("cluster: subscribing to the control subject: %w", err)
	}
	c.ctlSub = sub
	c.spawn(c.refreshLeases)
	c.spawn(c.scan)
	c.spawn(c.follow)
	c.spawn(c.watchClaims)
	return nil
}

// Close flushes what waits to be published (bounded by ctx), stops every
// goroutine of the cluster, waits for them and closes the connection. The
// leases of runs that have not ended are left to expire: a survivor ends
// those runs. Close is idempotent.
func (c *Cluster) Close(ctx context.Context) error {
	var err error
	c.closeOnce.Do(func() {
		if c.ctlSub != nil {
			_ = c.ctlSub.Unsubscribe()
		}
		err = c.flushJournals(ctx)
		c.audit.flush(ctx)
		c.shutdown()
		c.nc.Close()
		c.lnc.Close()
	})
	return err
}

// shutdown stops every goroutine of the cluster and waits for them.
func (c *Cluster) shutdown() {
	c.cancel()
	c.spawnMu.Lock()
	c.spawnMu.closed = true
	c.spawnMu.Unlock()
	c.audit.wake()
	c.mirrors.closeAll()
	c.wg.Wait()
}

// wakeJournals wakes every local run's publisher (NATS is back).
func (c *Cluster) wakeJournals() {
	for _, rj := range c.local.snapshot() {
		rj.kick()
	}
}

// kvCtx is a context for one KV operation.
func (c *Cluster) kvCtx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, 5*time.Second)
}

// sleep waits d or until the cluster closes; false when it closed.
func (c *Cluster) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}
