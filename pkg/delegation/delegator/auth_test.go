package delegator_test

import (
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"

	"github.com/seed0634/agentadaptor/pkg/credentials"
)

// withAuth replaces the test spec's bearer auth_ref with auth.
func withAuth(a credentials.Auth) func(*registry.RemoteAgentSpec) {
	return func(s *registry.RemoteAgentSpec) { s.AuthRef, s.Auth = "", &a }
}

var secretRef = "env:" + dt.SecretEnv

// TestDelegateWithAPIKeyAndOAuth2: the registry entry's auth (an API key
// whose header the card names; OAuth2 client credentials whose token URL
// and scopes the card names) reaches the remote; no secret is shown, the
// OAuth2 access token included.
func TestDelegateWithAPIKeyAndOAuth2(t *testing.T) {
	dt.CheckLeaks(t)
	steps := fakea2a.Script(fakea2a.Steps(fakea2a.Working("On it."), fakea2a.TextChunks("Answer."), fakea2a.Completed(""))...)
	keyed := fakea2a.New(t, fakea2a.Options{Name: "keyed", Streaming: true, RequireAPIKey: dt.SecretToken, APIKeyHeader: "X-Agent-Key", Behavior: steps,
		SecuritySchemes: a2a.NamedSecuritySchemes{"key": a2a.APIKeySecurityScheme{Location: a2a.APIKeySecuritySchemeLocationHeader, Name: "X-Agent-Key"}}})
	oauth := fakea2a.New(t, fakea2a.Options{Name: "oauth", Streaming: true, OAuth2: &fakea2a.OAuth2Client{ID: "agentadaptor", Secret: dt.SecretToken}, Behavior: steps,
		SecuritySchemes:      a2a.NamedSecuritySchemes{"cc": a2a.OAuth2SecurityScheme{Flows: a2a.ClientCredentialsOAuthFlow{}}},
		SecurityRequirements: a2a.SecurityRequirementsOptions{{"cc": {"agents.invoke"}}}})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{
		dt.SpecFor("keyed", keyed, withAuth(credentials.Auth{Scheme: credentials.SchemeAPIKey, TokenRef: secretRef})),
		dt.SpecFor("oauth", oauth, withAuth(credentials.Auth{Scheme: credentials.SchemeOAuth2, ClientID: "agentadaptor", ClientSecretRef: secretRef})),
	})
	rec := e.Record(t, "run-auth")
	for _, agent := range []string{"keyed", "oauth"} {
		res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-auth", Agent: agent, Objective: "x"})
		if res.Status != delegation.StatusCompleted || res.Summary != "Answer." {
			t.Fatalf("%s: %+v err %+v", agent, res, res.Error)
		}
		dt.NoSecret(t, agent+" result", res)
	}
	if toks := oauth.RequestsFor("Token"); len(toks) != 1 || toks[0].Scope != "agents.invoke" {
		t.Errorf("token requests %+v", toks)
	}
	if !e.D.Registry().Secrets().Contains("fake-access-token-1") {
		t.Error("the OAuth2 access token is not scrubbed from what the host shows")
	}
	for _, r := range keyed.Requests() {
		if r.AuthStatus != 0 || r.Authorization {
			t.Errorf("keyed request %+v", r)
		}
	}
	evs := rec.WaitTerminals(t, 2)
	dt.CheckLifecycle(t, evs)
	dt.NoSecret(t, "events", evs)
	dt.NoSecret(t, "logs", e.Logs.String())
	dt.NoSecret(t, "audit", e.D.Audit().ListRun("run-auth"))
}

// TestDelegateAuthRequired: a remote task that enters auth-required fails
// with auth_required naming the host's scheme and the card's schemes, and
// its task is cancelled (docs/design.md#failure-codes).
func TestDelegateAuthRequired(t *testing.T) {
	dt.CheckLeaks(t)
	srv := fakea2a.New(t, fakea2a.Options{Name: "keyed", Streaming: true, RequireAPIKey: dt.SecretToken,
		SecuritySchemes: a2a.NamedSecuritySchemes{
			"key":   a2a.APIKeySecurityScheme{Location: a2a.APIKeySecuritySchemeLocationHeader, Name: "X-API-Key"},
			"oauth": a2a.OAuth2SecurityScheme{Flows: a2a.AuthorizationCodeOAuthFlow{AuthorizationURL: "https://auth.example/authorize", TokenURL: "https://auth.example/token"}},
		},
		Behavior: fakea2a.Script(fakea2a.Working("Checking."), fakea2a.Status(a2a.TaskStateAuthRequired, "Sign in to the CRM first."), fakea2a.Hang())})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("keyed", srv, withAuth(credentials.Auth{Scheme: credentials.SchemeAPIKey, TokenRef: secretRef}))})
	rec := e.Record(t, "run-ar")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-ar", Agent: "keyed", Objective: "x"})
	if res.Status != delegation.StatusFailed || res.Error == nil || res.Error.Code != delegation.CodeAuthRequired || res.Error.Retryable || res.Error.RemoteStatus != "auth-required" {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	t.Logf("auth_required message: %s", res.Error.Message)
	for _, want := range []string{"scheme api_key", "apiKey", "oauth2 authorizationCode", "Sign in to the CRM first."} {
		if !strings.Contains(res.Error.Message, want) {
			t.Errorf("message %q lacks %q", res.Error.Message, want)
		}
	}
	if strings.Contains(res.Error.Message, "auth.example") || strings.Contains(res.Error.Message, "X-API-Key") {
		t.Errorf("remote card text in the message: %q", res.Error.Message)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	if f := dt.OfKind(evs, delegation.DelegationFailed); len(f) != 1 || f[0].Error.Code != delegation.CodeAuthRequired {
		t.Errorf("events %s", dt.KindsOf(evs))
	}
	dt.WaitUntil(t, "the remote cancel", func() bool { return len(srv.RequestsFor("CancelTask")) > 0 })
	if c := srv.RequestsFor("CancelTask")[0]; c.Metadata["reason"] != "auth_required" {
		t.Errorf("cancel %+v", c)
	}
	dt.NoSecret(t, "result", res)
}

// TestDelegateAuthMisconfigured: a card that rules the configured scheme
// out fails agent_unavailable, a token endpoint that refuses the client
// auth_required, without showing remote text or secrets.
func TestDelegateAuthMisconfigured(t *testing.T) {
	dt.CheckLeaks(t)
	oauthCard := fakea2a.New(t, fakea2a.Options{Name: "oauth", Streaming: true, OAuth2: &fakea2a.OAuth2Client{ID: "other-client", Secret: "another-secret-123"},
		SecuritySchemes: a2a.NamedSecuritySchemes{"cc": a2a.OAuth2SecurityScheme{Flows: a2a.ClientCredentialsOAuthFlow{}}},
		Behavior:        fakea2a.Script(fakea2a.Completed("never"))})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{
		dt.SpecFor("wrong-scheme", oauthCard, withAuth(credentials.Auth{Scheme: credentials.SchemeAPIKey, TokenRef: secretRef})),
		dt.SpecFor("refused", oauthCard, withAuth(credentials.Auth{Scheme: credentials.SchemeOAuth2, ClientID: "agentadaptor", ClientSecretRef: secretRef})),
	})
	for agent, want := range map[string]struct {
		code delegation.FailureCode
		text string
	}{"wrong-scheme": {delegation.CodeAgentUnavailable, "misconfigured"}, "refused": {delegation.CodeAuthRequired, "refused the host's credentials"}} {
		res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-mis", Agent: agent, Objective: "x"})
		if res.Error == nil || res.Error.Code != want.code || !strings.Contains(res.Error.Message, want.text) {
			t.Errorf("%s: %+v", agent, res.Error)
		}
		dt.NoSecret(t, agent, res)
	}
	if len(oauthCard.RequestsFor("SendStreamingMessage")) != 0 {
		t.Error("a task was sent without usable credentials")
	}
	dt.NoSecret(t, "logs", e.Logs.String())
}
