package a2a_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
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
	if _, err := collect(c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID})); err == nil {
		t.Error("subscribing to the finished task succeeded") // its status: TestGRPCStatusCodes
	}
	other := firstTurn(t, c, "another trip", a2a.TaskStateInputRequired)
	if got, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: other.ID}); err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Errorf("CancelTask: %v %v", got, err)
	}
}

// statusRecorder records the gRPC status of every call a client makes, as
// the server sent it (a2a-go's client translates it into an a2a error).
type statusRecorder struct {
	mu   sync.Mutex
	last *status.Status
}

func (r *statusRecorder) record(err error) error {
	st, _ := status.FromError(err)
	r.mu.Lock()
	r.last = st
	r.mu.Unlock()
	return err
}

func (r *statusRecorder) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return r.record(invoker(ctx, method, req, reply, cc, opts...))
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			s, err := streamer(ctx, desc, cc, method, opts...)
			if err != nil {
				return nil, r.record(err)
			}
			return recordedStream{ClientStream: s, r: r}, nil
		}),
	}
}

type recordedStream struct {
	grpc.ClientStream
	r *statusRecorder
}

func (s recordedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil && err != io.EOF {
		s.r.record(err)
	}
	return err
}

// check reports the last status's code and ErrorInfo reason.
func (r *statusRecorder) check(t *testing.T, what string, code codes.Code, reason string) {
	t.Helper()
	r.mu.Lock()
	st := r.last
	r.last = nil
	r.mu.Unlock()
	if st == nil {
		t.Errorf("%s: no error status", what)
		return
	}
	got := ""
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			got = info.Reason
		}
	}
	if st.Code() != code || got != reason {
		t.Errorf("%s: %s %q (reason %s), want %s with reason %s", what, st.Code(), st.Message(), got, code, reason)
	}
}

// The gRPC status codes of the A2A 1.0 error mapping: UNIMPLEMENTED for an
// unsupported A2A-Version, push notifications and unsupported operations
// (a2a-go's own mapping says FAILED_PRECONDITION), driven by a2a-go's gRPC
// client.
func TestGRPCStatusCodes(t *testing.T) {
	var version99 atomic.Bool
	rec := &statusRecorder{}
	withVersion := grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if version99.Load() {
			md, _ := metadata.FromOutgoingContext(ctx)
			md = md.Copy()
			md.Set("a2a-version", "99.0")
			ctx = metadata.NewOutgoingContext(ctx, md)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	})
	_, c := startGRPC(t, "- say: hi\n", append(rec.dialOptions(), withVersion)...)
	ctx := context.Background()
	res, err := c.SendMessage(ctx, textMessage("hi"))
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)

	version99.Store(true)
	if _, err := c.SendMessage(ctx, textMessage("hi")); err == nil {
		t.Error("A2A-Version 99.0 was served")
	}
	rec.check(t, "A2A-Version 99.0", codes.Unimplemented, "VERSION_NOT_SUPPORTED")
	version99.Store(false)

	if _, err := c.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task.ID, URL: "https://example.test/hook"}); err == nil {
		t.Error("CreateTaskPushConfig succeeded")
	}
	rec.check(t, "CreateTaskPushConfig", codes.Unimplemented, "PUSH_NOTIFICATION_NOT_SUPPORTED")
	if _, err := c.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: task.ID}); err == nil {
		t.Error("ListTaskPushConfigs succeeded")
	}
	rec.check(t, "ListTaskPushConfigs", codes.Unimplemented, "PUSH_NOTIFICATION_NOT_SUPPORTED")
	if _, err := c.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: "x"}); err == nil {
		t.Error("GetTaskPushConfig succeeded")
	}
	rec.check(t, "GetTaskPushConfig", codes.Unimplemented, "PUSH_NOTIFICATION_NOT_SUPPORTED")
	if err := c.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: "x"}); err == nil {
		t.Error("DeleteTaskPushConfig succeeded")
	}
	rec.check(t, "DeleteTaskPushConfig", codes.Unimplemented, "PUSH_NOTIFICATION_NOT_SUPPORTED")

	// A finished task takes no subscription: UnsupportedOperation.
	if _, err := collect(c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID})); err == nil {
		t.Error("subscribed to a finished task")
	}
	rec.check(t, "SubscribeToTask of a finished task", codes.Unimplemented, "UNSUPPORTED_OPERATION")
	// Other codes are a2a-go's.
	if _, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "no-such-task"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("GetTask of an unknown task: %v", err)
	}
	rec.check(t, "GetTask of an unknown task", codes.NotFound, "TASK_NOT_FOUND")
}
