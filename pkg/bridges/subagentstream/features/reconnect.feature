Feature: SSE reconnect keeps the nested subagent consistent (docs/design.md#replay-and-reconnect)

  Scenario: UI reconnects while remote delegation is active
    Given a remote delegation is active and streaming
    When the browser disconnects and reconnects with Last-Event-ID
    Then the mux replays buffered events after the requested cursor
    And the delegator resubscribes or polls the remote A2A task if needed
    And the UI receives a consistent terminal state exactly once
