package clienterr_test

import (
	"errors"
	"fmt"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

func Example() {
	hints := map[clienterr.Kind]string{clienterr.KindNotFound: "check the task id"}
	err := fmt.Errorf("delegating: %w", &clienterr.Error{
		Protocol: "a2a", Kind: clienterr.KindNotFound, Op: "get task",
		Err: errors.New("task t-1 not found"), Hints: hints,
	})

	fmt.Println(errors.Is(err, clienterr.ErrNotFound))
	fmt.Println(clienterr.KindOf(err), clienterr.KindOf(err).Retryable())
	fmt.Println(err)
	// Output:
	// true
	// not found false
	// delegating: a2a: get task: not found: task t-1 not found — check the task id
}
