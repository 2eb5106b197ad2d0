package a2a_test

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// startGRPC serves env's bridge over gRPC on a loopback listener whose
// address the card lists; it returns an a2a-go gRPC client of it.
func startGRPC(t *testing.T, scenario string, dial ...grpc.DialOption) (*bridgeEnv, *a2aclient.Client) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env := startBridge(t, scenario, a2abridge.Exposure{}, func(c *a2abridge.Config) { c.Card.GRPCAddr = ln.Addr().String() })
	g := grpc.NewServer()
	env.bridge.RegisterGRPC(g)
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Serve(ln) }()
	t.Cleanup(func() { g.Stop(); <-done })

	var iface *a2a.AgentInterface
	for _, in := range env.bridge.Card().SupportedInterfaces {
		if in.ProtocolBinding == a2a.TransportProtocolGRPC {
			iface = in
		}
	}
	if iface == nil || iface.URL != ln.Addr().String() || iface.ProtocolVersion != a2a.Version {
		t.Fatalf("the card lists gRPC as %+v, want %s", iface, ln.Addr())
	}
	dial = append(dial, grpc.WithTransportCredentials(insecure.NewCredentials()))
	c, err := a2aclient.NewFromEndpoints(context.Background(), []*a2a.AgentInterface{iface}, a2agrpc.WithGRPCTransport(dial...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return env, c
}

func TestGRPCBinding(t *testing.T) {
	_, c := startGRPC(t, askScenario)
	ctx := context.Background()
	task := firstTurn(t, c, "book a trip", a2a.TaskStateInputRequired)
	if list, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: task.ContextID}); err != nil || len(list.Tasks) != 1 {
		t.Errorf("ListTasks: %v %v", list, err)
	}
	evs := subscribeAndAnswer(t, c, task)
	if _, ok := evs[0].(*a2a.Task); !ok || lastState(evs) != a2a.TaskStateCompleted {
		t.Errorf("subscription over gRPC: states %v", statesOf(evs))
	}
	if txt := assistantText(evs); txt != "Booked it, thanks." {
		t.Errorf("text %q", txt)
	}
	if _, err := collect(c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID})); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Errorf("subscribing to the finished task: %v, want UnsupportedOperation", err)
	}
	other := firstTurn(t, c, "another trip", a2a.TaskStateInputRequired)
	if got, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: other.ID}); err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Errorf("CancelTask: %v %v", got, err)
	}
}

func TestGRPCRefusesUnsupportedVersions(t *testing.T) {
	version99 := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		md, _ := metadata.FromOutgoingContext(ctx)
		md = md.Copy()
		md.Set("a2a-version", "99.0")
		return invoker(metadata.NewOutgoingContext(ctx, md), method, req, reply, cc, opts...)
	}
	_, c := startGRPC(t, "- say: hi\n", grpc.WithUnaryInterceptor(version99))
	if _, err := c.SendMessage(context.Background(), textMessage("hi")); !errors.Is(err, a2a.ErrVersionNotSupported) {
		t.Errorf("A2A-Version 99.0 over gRPC: %v, want VersionNotSupported", err)
	}
}
