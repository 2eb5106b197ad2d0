Feature: A2A delegation appears as a local visual subagent
  A local agent calls the MCP tool delegate_to_agent; the host runs the task
  on a host-curated remote A2A agent, streams its progress as subagent.*
  events next to the parent's own stream, and returns only a concise
  structured tool result to the parent. Every scenario runs the real path:
  the agentadaptor SDK, the scripted parent agent as a child process, this
  package's MCP server injected as a runtime service, and a fake A2A agent
  over HTTP on loopback. "The SSE stream" is the parent's StreamPayloads
  merged with the run's delegation bus events, which is what the SSE mux
  renders.

  Scenario: Remote A2A agent streams text and an artifact
    Given a parent SDK run is started with streaming enabled
    And the A2A delegation tool is available through MCP
    And the remote "research" agent supports streaming and artifacts
    When the parent agent calls delegate_to_agent with agent "research"
    Then the SSE stream emits a parent tool_call.start for delegate_to_agent
    And the SSE stream emits subagent.started for agent "research"
    And the SSE stream emits subagent.text.delta events before the tool result
    And the SSE stream emits subagent.artifact for the remote artifact
    And the SSE stream emits subagent.finished with the remote task ID
    And the parent agent receives a structured MCP tool result
    And the parent agent can continue and emit final assistant text

  Scenario: Non-streaming remote agent degrades gracefully
    Given the remote "legacy" agent does not advertise streaming
    When the parent agent delegates a task to "legacy"
    Then the SSE stream emits subagent.started
    And the SSE stream emits status updates from polling or task state
    And the SSE stream shows the polled text without invented deltas
    And the final tool result contains the remote task result

  Scenario: User stops the parent run while a remote task is active
    Given the parent run has an active delegation with remote task ID "task-1"
    When the user cancels the parent run
    Then the delegator calls A2A cancel task for "task-1"
    And the SSE stream emits subagent.cancelled or subagent.status cancel_pending
    And the parent run terminates without leaking the remote task watcher

  Scenario: Remote task fails
    Given the remote A2A agent accepts a delegated task
    When the remote task reaches a failed terminal status
    Then the SSE stream emits subagent.failed with the remote status
    And the MCP tool returns a structured error result
    And the parent agent can decide whether to retry or continue

  Scenario: Remote task requires additional input
    Given the remote A2A task enters input-required state
    And host policy allows surfacing remote input requests
    When the delegator receives the input-required event
    Then the SSE stream emits subagent.input_required
    And the MCP tool blocks until the input is resolved or times out

  Scenario: Two remote delegations stream concurrently
    Given the parent run starts two delegate_to_agent tool calls
    When both remote agents stream events concurrently
    Then every subagent event includes a distinct delegation ID
    And events are grouped under the correct parent tool call when known
    And terminal events are emitted for both delegations

  Scenario: Model requests an unregistered remote agent
    Given the remote registry only contains "research"
    When the model calls delegate_to_agent with agent "unknown"
    Then the tool returns agent_not_found
    And no outbound network request is made
    And no secret is exposed in the tool result or stream
