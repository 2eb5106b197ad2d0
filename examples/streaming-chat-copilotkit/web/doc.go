// Package web embeds the built streaming-chat web UI (a Vite + React +
// CopilotKit single-page app) and serves it.
//
// The UI talks to the host's same-origin AG-UI routes: POST /agui for a chat
// turn, GET /agui/runs/{runId}/events with Last-Event-ID to resume after a
// reload, POST /agui/runs/{runId}/cancel for Stop, POST
// /agui/runs/{runId}/delegations/{delegationId}/input to answer a subagent
// that needs input, and the artifact route for artifact links. It renders
// each delegate_to_* tool call as a card with a nested, live subagent panel
// built from the stream's CUSTOM subagent.* events.
//
// dist/ is the committed output of `npm run build` in the parent directory
// (deterministic: fixed asset names, no source maps), so building the Go host
// needs no Node.js. Mount [Handler] at "/" after the API routes:
//
//	mux.Handle("/", web.Handler())
package web
