package delegator_test

import (
	"testing"

	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"

	"go.uber.org/goleak"

	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
)

func TestMain(m *testing.M) {
	scripted.MaybeRunAgent()
	goleak.VerifyTestMain(m, dt.LeakOptions()...)
}

// fakeWorkingThenRelease is a remote that works until the test releases it.
func fakeWorkingThenRelease() []any {
	return []any{fakea2a.Working("busy"), fakea2a.AwaitRelease(), fakea2a.Completed("ok")}
}
