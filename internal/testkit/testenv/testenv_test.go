package testenv_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
)

// recorder is a testing.TB that records the first way a helper stopped or
// told it something (unlike a real T, its Fatalf and Skipf return).
type recorder struct {
	testing.TB
	how, msg string
}

func (r *recorder) record(how, f string, a ...any) {
	if r.how == "" {
		r.how, r.msg = how, fmt.Sprintf(f, a...)
	}
}

func (r *recorder) Helper()                   {}
func (r *recorder) Skipf(f string, a ...any)  { r.record("skip", f, a...) }
func (r *recorder) Fatalf(f string, a ...any) { r.record("fatal", f, a...) }
func (r *recorder) Logf(f string, a ...any)   { r.record("log", f, a...) }

func TestRequireAndWant(t *testing.T) {
	missing := errors.New("node is not on PATH")
	tests := []struct {
		ci       string
		err      error
		require  string
		want     string
		wantBool bool
	}{
		{"", nil, "", "", true},
		{"true", nil, "", "", true},
		{"", missing, "skip", "log", false},
		{"true", missing, "fatal", "fatal", false},
		{"false", missing, "skip", "log", false},
	}
	for _, tc := range tests {
		t.Setenv("CI", tc.ci)
		r := &recorder{}
		testenv.Require(r, "node and @ag-ui/core", tc.err)
		if r.how != tc.require {
			t.Errorf("CI=%q err=%v: Require %q, want %q", tc.ci, tc.err, r.how, tc.require)
		}
		if tc.err != nil && (!strings.Contains(r.msg, "node and @ag-ui/core") || !strings.Contains(r.msg, "make deps") || !strings.Contains(r.msg, missing.Error())) {
			t.Errorf("Require message %q lacks what, why or how to install", r.msg)
		}
		r = &recorder{}
		if got := testenv.Want(r, "node and @ag-ui/core", tc.err); got != tc.wantBool || r.how != tc.want {
			t.Errorf("CI=%q err=%v: Want %v/%q, want %v/%q", tc.ci, tc.err, got, r.how, tc.wantBool, tc.want)
		}
	}
}

func TestNodePackagesNamesWhatIsMissing(t *testing.T) {
	_, err := testenv.NodePackages("@agentadaptor/no-such-package")
	if err == nil || !strings.Contains(err.Error(), "@agentadaptor/no-such-package") && !strings.Contains(err.Error(), "node") {
		t.Errorf("err = %v", err)
	}
}

func TestPoll(t *testing.T) {
	n := 0
	if !testenv.Poll(time.Minute, func() bool { n++; return n == 3 }) || n != 3 {
		t.Errorf("Poll stopped after %d calls", n)
	}
	if testenv.Poll(0, func() bool { return false }) {
		t.Error("Poll(0, never) = true")
	}
}
