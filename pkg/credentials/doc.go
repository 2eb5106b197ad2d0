// Package credentials turns a host auth reference into a credential that only
// its origin ever sees. It is the shared credential core of the remote-agent
// clients (pkg/clients/a2a and pkg/clients/agui), which re-export its types
// so that one host config works the same way for both protocols.
//
// It owns:
//
//   - Auth references: "env:NAME" (a non-empty environment variable) and
//     "file:/path" (a non-empty file, surrounding space trimmed), resolved by
//     [Scope.Resolve] into a [*Credential]. A failure is an [*Error] that
//     names the reference and what to do, never the credential; the [Scope]
//     gives it the client package's prefix and errors.Is sentinel.
//   - Auth schemes ([Auth]: bearer token, API key header, OAuth2 client
//     credentials through golang.org/x/oauth2's clientcredentials), resolved
//     by [Scope.ResolveAuth]; access tokens are fetched on demand, reused
//     until they expire and added to a [Secrets] set as they are fetched;
//     a refused token request is a [*TokenError] (errors.Is
//     [ErrCredentialsRefused]) that never shows the endpoint's answer.
//   - The [Credential] itself: its token never appears in String, GoString,
//     fmt verbs, JSON or slog output. Only code inside this module can read
//     it, through the function [Secret] (a method would be callable through
//     the client packages' exported aliases).
//   - Origins ([Origin], [OriginOf]): RFC 6454 "scheme://host:port" of
//     absolute http(s) URLs, the unit a credential is bound to.
//   - The origin-bound HTTP client ([NewHTTPClient], [Transport],
//     [CheckRedirect]): the credential (Authorization: Bearer, or the API
//     key header) only on requests to the trusted origin, stripped from
//     requests anywhere else, and
//     redirects that leave the first request's origin refused (so neither the
//     credential nor the payload follows them).
//   - Redaction ([Redact], [RedactErr]) of remote text that echoes the
//     token, keeping chosen sentinel causes reachable for errors.Is.
//
// It must not know any protocol: no A2A or AG-UI types, SDK imports, error
// kinds or classification (each client keeps its own [*Error]-like type and
// decides what a refused redirect or a 401 means). It must not read
// credentials from anywhere but the reference it is given (no keychains,
// no defaults, no literal tokens in references), must not log, and must not
// retry or add an overall timeout to the HTTP client of a remote agent (it
// would cut streams; only the OAuth2 token client, whose requests are
// unary, has one).
package credentials
