// Package cliharness is the harness the end-to-end tests of the claude and
// codex adapters share, which drive the real CLI against a fake model server
// (internal/testkit/fakemodel): an SDK holding the adapter under test with the run
// options every run gets ([Rig]), the per-test deadline ([Context]), and the
// checks that do not depend on the CLI: a run that calls a tool of a
// run-scoped [fakemodel.MCPService] with its bearer token ([Rig.RunTool],
// [ToolRun.CheckTokenGone]), a cancellation mid-answer ([Rig.CancelMidStream])
// and a resumed session ([Rig.ResumeSession]). What differs between the CLIs
// (the adapter's configuration, the environment, how to find the child
// process, what a tool call looks like on the stream) stays in their tests.
package cliharness
