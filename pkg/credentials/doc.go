// Package credentials turns a host auth reference into a credential that
// only its origin ever sees. The remote-agent clients (pkg/clients/a2a and
// pkg/clients/agui), the registry and the host share it, so one host
// configuration authenticates the same way whatever the protocol; a Go
// program that builds its own client for a remote agent can use it too.
//
//	cred, err := credentials.Resolve("env:AGENT_TOKEN")
//	if err != nil {
//		return err // a *credentials.RefError: names the reference, never the token
//	}
//	hc, owned := credentials.NewHTTPClient(nil, credentials.Transport{
//		Origin: credentials.Origin("https://agent.example"), Cred: cred,
//	}, "configure the agent's final URL")
//	defer owned.CloseIdleConnections()
//	resp, err := hc.Get("https://agent.example/tasks") // "Authorization: Bearer <token>"
//
// It owns:
//
//   - Auth references: "env:NAME" (a non-empty environment variable) and
//     "file:/path" (a non-empty file, surrounding space trimmed), resolved by
//     [Resolve] into a [*Credential]. A failure is a [*RefError] (errors.Is
//     [ErrInvalidRef]) that names the reference and what to do, never the
//     secret. The secret itself never goes in a configuration ([IsRef]).
//   - Auth schemes ([Auth]: bearer token, API key header, OAuth2 client
//     credentials through golang.org/x/oauth2's clientcredentials), checked
//     by [Auth.Validate] and resolved by [ResolveAuth]; OAuth2 access tokens
//     are fetched on demand, reused until they expire and added to a
//     [Secrets] set as they are fetched; a refused token request is a
//     [*TokenError] (errors.Is [ErrCredentialsRefused]) that never shows the
//     endpoint's answer.
//   - The [Credential] itself: its secret never appears in String,
//     GoString, fmt verbs, JSON or slog output. Code reads it only through
//     the function [Secret], to check a token presented to it or to redact.
//   - Origins ([Origin], [OriginOf]): RFC 6454 "scheme://host:port" of
//     absolute http(s) URLs, the unit a credential is bound to.
//   - The origin-bound HTTP client ([NewHTTPClient], [Transport]): the
//     credential (Authorization: Bearer, or the API key header) only on
//     requests to the trusted origin, stripped from requests anywhere else,
//     and redirects that leave the first request's origin refused with a
//     [*RedirectError] (so neither the credential nor the payload follows
//     them).
//   - Redaction: [Secrets], the set of secret values a host scrubs from
//     everything it shows (events, tool results, audit records, logs), and
//     [Redact] / [RedactErr] for remote text that echoes one token, keeping
//     chosen sentinel causes reachable for errors.Is.
//
// It must not know any protocol: no A2A or AG-UI types, SDK imports, error
// kinds or classification (each client decides what a refused redirect or a
// 401 means). It must not read credentials from anywhere but the reference
// it is given (no keychains, no defaults, no literal tokens in references),
// must not log, and must not retry or add an overall timeout to the HTTP
// client of a remote agent (it would cut streams; only the OAuth2 token
// client, whose requests are unary, has one). It imports the standard
// library and golang.org/x/oauth2 only.
package credentials
