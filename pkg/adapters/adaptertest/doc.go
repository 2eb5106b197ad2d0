// Package adaptertest is the conformance suite every adapter's tests run
// (like net/http/httptest or testing/fstest for their interfaces). [Run]
// checks that an adapter, driven through the real SDK, delivers exactly one
// terminal payload after run.started with strictly increasing sequence
// numbers; that cancellation ends the run as cancelled and leaves no process
// behind; that MCP servers (including runtime-injected ones) reach the
// adapter's materialized profile without any secret on the command line or in
// a file; and that the per-run temp dir is removed.
//
// It also holds the helpers the adapters' own tests share: replaying a
// testdata fixture through a parser ([Replay], [Names], [ParserBenchmark]),
// the test binary standing in for a CLI ([TestBinary], [WithTestBinary]), a
// whole run through the SDK ([RunToEnd], [HasDiagnostic]) and
// [CheckConfigError].
//
//	func TestConformance(t *testing.T) {
//		a, err := mycli.New(mycli.Config{Binary: fakeCLI})
//		...
//		adaptertest.Run(t, adaptertest.Harness{
//			Adapter: a,
//			Plain:   []agentadaptor.RunOption{agentadaptor.WithAdapterOption("fixture", "plain")},
//			Slow:    []agentadaptor.RunOption{agentadaptor.WithAdapterOption("fixture", "slow")},
//		})
//	}
//
// It owns the conformance suite and those helpers. It is test support: only
// tests import it, never the product. It must not import anything but the
// core SDK and the standard library, nor know any concrete adapter.
package adaptertest
