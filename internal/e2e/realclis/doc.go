// Package realclis holds the offline end-to-end proof of the product's real
// mode, the Claude -> Codex example of
// examples/streaming-chat-copilotkit/README.md (part of the acceptance in
// docs/design.md#layering): a real Claude Code parent, driven by the host's
// AG-UI endpoint, delegates through the a2a-delegation MCP tool to a real
// Codex exposed over A2A by a separate `agentadaptor a2a serve --adapter
// codex` process, with both CLIs pointed at scriptable fake model servers on
// loopback (internal/testkit/fakemodel), so the test needs no network and no
// credentials. The same topology runs with the remote an ACP agent,
// codex-acp behind `agentadaptor a2a serve --adapter acp`, including Stop
// cascading to it.
//
// The package has tests only. They need the CLIs installed by the
// repository's deps script (node_modules/.bin/claude and codex, and
// codex-acp's native binary): without them the tests skip locally and fail
// when CI=true (internal/testkit/realcli).
// examples/streaming-chat-copilotkit/REALMODE.md explains how to run the
// same topology against the real model services.
package realclis
