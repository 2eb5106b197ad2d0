package a2a

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/seed0634/agentadaptor/pkg/credentials"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

const (
	// DefaultCardFetchTimeout bounds one Agent Card fetch.
	DefaultCardFetchTimeout = 10 * time.Second
	// DefaultCardTTL is how long a [CardResolver] reuses a fetched card.
	DefaultCardTTL = 5 * time.Minute
	// MaxCardBytes is the largest Agent Card document accepted.
	MaxCardBytes = 1 << 20
)

// CardResolverOptions configures a [CardResolver]. The zero value is usable.
type CardResolverOptions struct {
	// HTTPClient is used for card fetches. Nil means a private client
	// without keep-alives and without a credential. Its Timeout, if any,
	// applies in addition to FetchTimeout.
	HTTPClient *http.Client
	// Credential, if set, is sent as a bearer token to the card URL's own
	// origin only (redirects to other origins are refused).
	Credential *credentials.Credential
	// FetchTimeout bounds each fetch; 0 means DefaultCardFetchTimeout.
	FetchTimeout time.Duration
	// TTL is how long a fetched card is reused; 0 means DefaultCardTTL,
	// negative disables caching.
	TTL time.Duration
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// CardResolver fetches Agent Cards and caches them by URL with a TTL. It is
// safe for concurrent use; concurrent Resolve calls for the same URL share
// one fetch. Failed fetches are not cached.
type CardResolver struct {
	opts CardResolverOptions

	mu       sync.Mutex
	entries  map[string]cardEntry
	inflight map[string]*cardFetch
}

type cardEntry struct {
	card    *Card
	expires time.Time
}

type cardFetch struct {
	done chan struct{}
	card *Card
	err  error
}

// NewCardResolver returns a resolver with the given options.
func NewCardResolver(opts CardResolverOptions) *CardResolver {
	if opts.FetchTimeout <= 0 {
		opts.FetchTimeout = DefaultCardFetchTimeout
	}
	if opts.TTL == 0 {
		opts.TTL = DefaultCardTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &CardResolver{opts: opts, entries: map[string]cardEntry{}, inflight: map[string]*cardFetch{}}
}

// Resolve returns the card at cardURL, from the cache when fresh. Errors are
// [*clienterr.Error]: clienterr.KindUnavailable when the fetch failed (network, non-200),
// clienterr.KindUnauthorized on 401/403, clienterr.KindProtocol for a malformed card,
// clienterr.KindTimeout/clienterr.KindCanceled from ctx.
func (r *CardResolver) Resolve(ctx context.Context, cardURL string) (*Card, error) {
	for {
		r.mu.Lock()
		if e, ok := r.entries[cardURL]; ok && r.opts.Now().Before(e.expires) {
			r.mu.Unlock()
			return e.card, nil
		}
		if f, ok := r.inflight[cardURL]; ok {
			r.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return nil, classify(ctx, "fetch card", ctx.Err(), 0, false, "")
			}
			// The leader's own cancellation says nothing about ours: retry.
			if f.err != nil && (errors.Is(f.err, clienterr.ErrCanceled) || errors.Is(f.err, clienterr.ErrTimeout)) && ctx.Err() == nil {
				continue
			}
			return f.card, f.err
		}
		f := &cardFetch{done: make(chan struct{})}
		r.inflight[cardURL] = f
		r.mu.Unlock()

		f.card, f.err = r.fetch(ctx, cardURL)

		r.mu.Lock()
		delete(r.inflight, cardURL)
		if f.err == nil && r.opts.TTL > 0 {
			r.entries[cardURL] = cardEntry{card: f.card, expires: r.opts.Now().Add(r.opts.TTL)}
		}
		r.mu.Unlock()
		close(f.done)
		return f.card, f.err
	}
}

// Refresh fetches the card again, bypassing and then updating the cache.
func (r *CardResolver) Refresh(ctx context.Context, cardURL string) (*Card, error) {
	r.Invalidate(cardURL)
	return r.Resolve(ctx, cardURL)
}

// Invalidate drops cardURL from the cache.
func (r *CardResolver) Invalidate(cardURL string) {
	r.mu.Lock()
	delete(r.entries, cardURL)
	r.mu.Unlock()
}

func (r *CardResolver) fetch(ctx context.Context, cardURL string) (*Card, error) {
	hc := r.opts.HTTPClient
	var owned *http.Transport
	if hc == nil {
		owned = http.DefaultTransport.(*http.Transport).Clone()
		owned.DisableKeepAlives = true
		hc = &http.Client{Transport: owned}
	}
	client, _ := newHTTPClient(hc, credentials.Origin(cardURL), r.opts.Credential)
	if owned != nil {
		defer owned.CloseIdleConnections()
	}
	return fetchCard(ctx, client, cardURL, r.opts.FetchTimeout, credentials.Secret(r.opts.Credential), r.opts.Now)
}

// FetchCard fetches, validates and fingerprints the Agent Card at cardURL
// without caching and without a credential (use a [CardResolver] for
// either). See [CardResolver.Resolve] for the errors.
func FetchCard(ctx context.Context, cardURL string) (*Card, error) {
	return NewCardResolver(CardResolverOptions{TTL: -1}).Resolve(ctx, cardURL)
}

func fetchCard(ctx context.Context, client *http.Client, cardURL string, timeout time.Duration, secret string, now func() time.Time) (*Card, error) {
	const op = "fetch card"
	if credentials.Origin(cardURL) == "" {
		return nil, NewError(clienterr.KindRejected, op, fmt.Errorf("card URL %q is not an absolute http(s) URL", cardURL))
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx, rec := withCallRecord(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cardURL, nil)
	if err != nil {
		return nil, NewError(clienterr.KindRejected, op, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, classify(ctx, op, err, rec.Status(), false, secret)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		e := NewError(clienterr.KindUnavailable, op, fmt.Errorf("GET %s returned %s", redactURL(cardURL), resp.Status))
		e.Status = resp.StatusCode
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			e.Kind = clienterr.KindUnauthorized
		}
		return nil, e
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxCardBytes+1))
	if err != nil {
		return nil, classify(ctx, op, err, resp.StatusCode, false, secret)
	}
	if len(body) > MaxCardBytes {
		return nil, cardErr("", fmt.Sprintf("document larger than %d bytes", MaxCardBytes))
	}
	card, perr := ParseCard(body, cardURL)
	if perr != nil {
		return nil, perr
	}
	card.FetchedAt = now()
	return card, nil
}

// redactURL drops userinfo and query from a URL for messages.
func redactURL(raw string) string {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	if i := strings.Index(raw, "@"); i >= 0 {
		if j := strings.Index(raw, "://"); j >= 0 && j < i {
			raw = raw[:j+3] + raw[i+1:]
		}
	}
	return raw
}
