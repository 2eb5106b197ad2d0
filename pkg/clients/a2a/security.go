package a2a

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/seed0634/agentadaptor/pkg/credentials"
)

// SchemeError says that the configured [credentials.Auth] cannot be used with an agent
// as its card describes it: the card declares security schemes and none
// fits, or the card lacks what the configuration left out (an API key
// header, a token URL), or offers it where the host will not send a secret
// ([ErrForeignTokenURL]). It names scheme types only, never remote text.
type SchemeError struct {
	// Scheme is the configured scheme.
	Scheme credentials.Scheme
	// Declared are the card's scheme types (see [DeclaredSchemes]).
	Declared []string
	// Problem says what does not fit and what to configure.
	Problem string
	// Err is the sentinel of a problem callers may test for with
	// errors.Is ([ErrForeignTokenURL]), or nil.
	Err error
}

// Unwrap returns e.Err.
func (e *SchemeError) Unwrap() error { return e.Err }

// ErrForeignTokenURL is matched (errors.Is) by the [*SchemeError] of a card
// whose OAuth2 token URL is not on the card's own origin: the client
// secret would go to a host the card chose, so it is not used (configure
// auth.token_url to trust that endpoint).
var ErrForeignTokenURL = errors.New("a2a: the agent card's OAuth2 token URL is not on the card's origin")

func (e *SchemeError) Error() string {
	decl := "none"
	if len(e.Declared) > 0 {
		decl = strings.Join(e.Declared, ", ")
	}
	return fmt.Sprintf("a2a: auth scheme %s: %s (the agent card declares: %s)", e.Scheme, e.Problem, decl)
}

// DeclaredSchemes lists the types of the security schemes card declares,
// sorted and de-duplicated: "apiKey", "http bearer" (or "http <scheme>"),
// "oauth2 clientCredentials" (or another flow), "openIdConnect",
// "mutualTLS". Scheme names, header names and URLs (remote text) are left
// out.
func DeclaredSchemes(card *Card) []string {
	if card == nil || card.Agent == nil {
		return nil
	}
	var out []string
	for _, s := range card.Agent.SecuritySchemes {
		var d string
		switch v := s.(type) {
		case sdk.APIKeySecurityScheme:
			d = "apiKey"
		case sdk.HTTPAuthSecurityScheme:
			d = "http " + strings.ToLower(v.Scheme)
			if !authSchemeWord().MatchString(strings.ToLower(v.Scheme)) {
				d = "http"
			}
		case sdk.OAuth2SecurityScheme:
			d = "oauth2 " + flowName(v.Flows)
		case sdk.OpenIDConnectSecurityScheme:
			d = "openIdConnect"
		case sdk.MutualTLSSecurityScheme:
			d = "mutualTLS"
		default:
			continue
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

var authSchemeWord = lazyRegexp(`^[a-z0-9-]{1,32}$`)

func flowName(f sdk.OAuthFlows) string {
	switch f.(type) {
	case sdk.ClientCredentialsOAuthFlow:
		return string(sdk.ClientCredentialsOAuthFlowName)
	case sdk.AuthorizationCodeOAuthFlow:
		return string(sdk.AuthorizationCodeOAuthFlowName)
	case sdk.ImplicitOAuthFlow:
		return string(sdk.ImplicitOAuthFlowName)
	case sdk.PasswordOAuthFlow:
		return string(sdk.PasswordOAuthFlowName)
	case sdk.DeviceCodeOAuthFlow:
		return string(sdk.DeviceCodeOAuthFlowName)
	}
	return "flow"
}

// CompleteAuth checks a against the card's securitySchemes and fills what a
// leaves to the card: an api_key's header (the card's apiKey scheme in a
// header), an oauth2's token URL (the card's clientCredentials flow) and
// scopes (those the card's security requirements name for that scheme).
// A card that declares no schemes (or whose schemes could not be read)
// leaves a as configured. It returns a [*SchemeError] when the card rules
// a out or a is incomplete.
func CompleteAuth(a credentials.Auth, card *Card) (credentials.Auth, error) {
	declared := DeclaredSchemes(card)
	fail := func(format string, args ...any) (credentials.Auth, error) {
		return a, &SchemeError{Scheme: a.Scheme, Declared: declared, Problem: fmt.Sprintf(format, args...)}
	}
	var schemes sdk.NamedSecuritySchemes
	if card != nil && card.Agent != nil {
		schemes = card.Agent.SecuritySchemes
	}
	names := make([]sdk.SecuritySchemeName, 0, len(schemes))
	for n := range schemes {
		names = append(names, n)
	}
	slices.Sort(names) // deterministic choice among several fitting schemes
	if len(names) == 0 {
		if !a.Complete() {
			return fail("the card declares no security scheme to take the %s from; configure it", missingField(a))
		}
		return a, nil
	}
	switch a.Scheme {
	case credentials.SchemeBearer:
		for _, n := range names {
			switch v := schemes[n].(type) {
			case sdk.HTTPAuthSecurityScheme:
				if strings.EqualFold(v.Scheme, "bearer") {
					return a, nil
				}
			case sdk.OAuth2SecurityScheme, sdk.OpenIDConnectSecurityScheme:
				return a, nil // their access tokens are bearer tokens
			}
		}
		return fail("the card declares no bearer scheme (http bearer, oauth2, openIdConnect)")
	case credentials.SchemeAPIKey:
		found := false
		for _, n := range names {
			v, ok := schemes[n].(sdk.APIKeySecurityScheme)
			if !ok {
				continue
			}
			found = true
			if a.Header != "" {
				return a, nil
			}
			if v.Location == sdk.APIKeySecuritySchemeLocationHeader {
				a.Header = v.Name
				if err := a.Validate(); err != nil {
					return fail("the card's API key header is unusable (%v); configure auth.header", err)
				}
				return a, nil
			}
		}
		if found {
			return fail("the card's API key goes in a query parameter or cookie, which the host does not send; configure auth.header if the agent also accepts a header")
		}
		return fail("the card declares no apiKey scheme")
	case credentials.SchemeOAuth2:
		for _, n := range names {
			v, ok := schemes[n].(sdk.OAuth2SecurityScheme)
			if !ok {
				continue
			}
			flow, isCC := v.Flows.(sdk.ClientCredentialsOAuthFlow)
			if a.TokenURL == "" {
				if !isCC {
					continue
				}
				if err := credentials.CheckTokenURL(flow.TokenURL); err != nil {
					return fail("the card's clientCredentials token URL %v; configure auth.token_url", err)
				}
				// The client secret goes where the token URL says: a card
				// may only name an endpoint on its own origin. Another one
				// must be configured, not taken from remote text.
				if origin := card.Origin(); origin == "" || credentials.Origin(flow.TokenURL) != origin {
					return a, &SchemeError{Scheme: a.Scheme, Declared: declared, Err: ErrForeignTokenURL,
						Problem: "the card's clientCredentials token URL is not on the card's origin, so the client secret is not sent there; configure auth.token_url to trust that endpoint"}
				}
				a.TokenURL = flow.TokenURL
			}
			if a.Scopes == nil {
				a.Scopes = requiredScopes(card, n)
			}
			return a, nil
		}
		if a.TokenURL == "" {
			return fail("the card declares no oauth2 clientCredentials flow to take the token URL from; configure auth.token_url")
		}
		return fail("the card declares no oauth2 scheme")
	}
	return fail("unknown scheme")
}

func missingField(a credentials.Auth) string {
	if a.Scheme == credentials.SchemeAPIKey {
		return "API key header (auth.header)"
	}
	return "token URL (auth.token_url)"
}

// requiredScopes are the scopes the card's first security requirement
// that names scheme asks for.
func requiredScopes(card *Card, scheme sdk.SecuritySchemeName) []string {
	for _, req := range card.Agent.SecurityRequirements {
		if scopes, ok := req[scheme]; ok {
			var out []string
			for _, s := range scopes {
				if s != "" && !strings.ContainsAny(s, " \t\r\n") {
					out = append(out, s)
				}
			}
			return out
		}
	}
	return nil
}

// credentialFor returns the credential a client for card uses: the given
// Credential, the Auth completed by the card, or the AuthRef's bearer token.
func credentialFor(card *Card, opts Options) (*credentials.Credential, error) {
	if opts.Auth != nil {
		a, err := CompleteAuth(*opts.Auth, card)
		if err != nil {
			return nil, err
		}
		if opts.Credential != nil {
			return opts.Credential, nil
		}
		return credentials.ResolveAuth(a, credentials.ResolveOptions{HTTPClient: opts.HTTPClient, Secrets: opts.Secrets})
	}
	return credentialFrom(opts)
}

// fetchCredential is the credential sent with the card fetch: the given
// one, the AuthRef's, or an Auth that needs nothing from the card.
func fetchCredential(opts Options) (*credentials.Credential, error) {
	if opts.Auth == nil {
		return credentialFrom(opts)
	}
	if opts.Credential != nil {
		return opts.Credential, nil
	}
	if !opts.Auth.Complete() {
		return nil, opts.Auth.Validate()
	}
	return credentials.ResolveAuth(*opts.Auth, credentials.ResolveOptions{HTTPClient: opts.HTTPClient, Secrets: opts.Secrets})
}

// lazyRegexp compiles expr on first use: a process that never uses a
// pattern (the scripted agent re-executing this binary, a CLI command)
// does not pay for it at start.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
