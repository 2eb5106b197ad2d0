package a2a

import (
	"context"

	"github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// grpcService is a2a-go's gRPC service with the status codes of the A2A
// 1.0 specification's error mapping (docs/design.md#event-mapping): a2a-go
// v2.4.0 answers VersionNotSupported, PushNotificationNotSupported and
// UnsupportedOperation with FAILED_PRECONDITION, the specification and the
// TCK expect UNIMPLEMENTED. The message and the ErrorInfo (reason, domain)
// stay as a2a-go wrote them; only the code changes.
type grpcService struct {
	*a2agrpc.Handler
}

// unimplementedReasons are the A2A errors whose gRPC status is UNIMPLEMENTED.
var unimplementedReasons = map[string]bool{
	"VERSION_NOT_SUPPORTED":           true,
	"PUSH_NOTIFICATION_NOT_SUPPORTED": true,
	"UNSUPPORTED_OPERATION":           true,
}

// grpcCode corrects the status code of err (see grpcService).
func grpcCode(err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.FailedPrecondition {
		return err
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && unimplementedReasons[info.Reason] {
			p := st.Proto()
			p.Code = int32(codes.Unimplemented)
			return status.FromProto(p).Err()
		}
	}
	return err
}

func (s grpcService) SendMessage(ctx context.Context, r *a2apb.SendMessageRequest) (*a2apb.SendMessageResponse, error) {
	res, err := s.Handler.SendMessage(ctx, r)
	return res, grpcCode(err)
}

func (s grpcService) SendStreamingMessage(r *a2apb.SendMessageRequest, st grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	return grpcCode(s.Handler.SendStreamingMessage(r, st))
}

func (s grpcService) GetTask(ctx context.Context, r *a2apb.GetTaskRequest) (*a2apb.Task, error) {
	res, err := s.Handler.GetTask(ctx, r)
	return res, grpcCode(err)
}

func (s grpcService) ListTasks(ctx context.Context, r *a2apb.ListTasksRequest) (*a2apb.ListTasksResponse, error) {
	res, err := s.Handler.ListTasks(ctx, r)
	return res, grpcCode(err)
}

func (s grpcService) CancelTask(ctx context.Context, r *a2apb.CancelTaskRequest) (*a2apb.Task, error) {
	res, err := s.Handler.CancelTask(ctx, r)
	return res, grpcCode(err)
}

func (s grpcService) SubscribeToTask(r *a2apb.SubscribeToTaskRequest, st grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	return grpcCode(s.Handler.SubscribeToTask(r, st))
}

func (s grpcService) CreateTaskPushNotificationConfig(ctx context.Context, r *a2apb.TaskPushNotificationConfig) (*a2apb.TaskPushNotificationConfig, error) {
	res, err := s.Handler.CreateTaskPushNotificationConfig(ctx, r)
	return res, grpcCode(err)
}

func (s grpcService) GetTaskPushNotificationConfig(ctx context.Context, r *a2apb.GetTaskPushNotificationConfigRequest) (*a2apb.TaskPushNotificationConfig, error) {
	res, err := s.Handler.GetTaskPushNotificationConfig(ctx, r)
	return res, grpcCode(err)
}

func (s grpcService) ListTaskPushNotificationConfigs(ctx context.Context, r *a2apb.ListTaskPushNotificationConfigsRequest) (*a2apb.ListTaskPushNotificationConfigsResponse, error) {
	res, err := s.Handler.ListTaskPushNotificationConfigs(ctx, r)
	return res, grpcCode(err)
}

func (s grpcService) GetExtendedAgentCard(ctx context.Context, r *a2apb.GetExtendedAgentCardRequest) (*a2apb.AgentCard, error) {
	res, err := s.Handler.GetExtendedAgentCard(ctx, r)
	return res, grpcCode(err)
}

func (s grpcService) DeleteTaskPushNotificationConfig(ctx context.Context, r *a2apb.DeleteTaskPushNotificationConfigRequest) (*emptypb.Empty, error) {
	res, err := s.Handler.DeleteTaskPushNotificationConfig(ctx, r)
	return res, grpcCode(err)
}
