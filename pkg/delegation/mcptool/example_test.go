package mcptool_test

import (
	"fmt"

	"github.com/seed0634/agentadaptor/pkg/delegation/mcptool"
)

// Tool arguments are decoded strictly: the model names a registry key and
// an objective; anything that looks like an endpoint is refused.
func ExampleDecodeToolInput() {
	req, err := mcptool.DecodeToolInput([]byte(`{"agent":"research","objective":"Find the API.","constraints":{"timeout_seconds":60}}`), "")
	fmt.Println(req.Agent, req.Objective, req.Constraints.TimeoutSeconds, err == nil)
	_, derr := mcptool.DecodeToolInput([]byte(`{"agent":"research","objective":"x","endpoint_url":"http://evil.example"}`), "")
	fmt.Println(derr.Code)
	// Output:
	// research Find the API. 60 true
	// invalid_input
}
