// Package shellagent owns the fake agent CLI of the tests: an
// agentadaptor.Adapter ([Adapter]) whose child process is a /bin/sh script
// printing StreamPayload JSON lines, and the builders of such scripts
// ([Print], [Text], [Script], [Gate]). With it the SDK's and the bridges'
// tests drive a real child process (supervision, streaming, backpressure,
// cancellation, process groups) without a real CLI or model.
//
//	a := &shellagent.Adapter{Scripts: map[string]string{
//		"hello": shellagent.Text("m1", "Hello!"),
//		"slow":  shellagent.Script(shellagent.Text("m1", "working"), "exec sleep 30"),
//	}}
//	sdk, _ := agentadaptor.New(agentadaptor.WithAdapters(a))
//	h, _ := sdk.Start(ctx, "hello", agentadaptor.WithStreaming())
//
// A script can stop at a [Gate] until its test releases it, so the test
// decides how the run's payloads interleave with other events:
//
//	gate := shellagent.Gate(filepath.Join(t.TempDir(), "go"))
//	script := shellagent.Script(shellagent.Print(toolStart), gate.Wait(), shellagent.Print(toolResult))
//	... // the run has printed toolStart and waits
//	gate.Release(t)
//
// It is test support: only tests import it, never the product. It imports
// the root package and the standard library only, so the tests of any
// package above the core (bridges, clients, host tools) can use it, and the
// root package's external tests (package agentadaptor_test) too. It does not
// parse any real CLI's output and must not grow behaviour of one: adapters
// test against their own recorded fixtures (pkg/adapters/adaptertest).
package shellagent
