package agui

import (
	"reflect"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
)

// NewCustomEvent returns a CUSTOM event named name whose value is value,
// stamped at at (time.Now when zero). It never produces an event without a
// value: a nil value, or a nil map, slice or pointer, becomes an empty JSON
// object, because @ag-ui/core 1.0.0 rejects a CUSTOM event whose value is
// absent. An empty name becomes "agentadaptor.custom".
func NewCustomEvent(name string, value any, at time.Time) *events.CustomEvent {
	if at.IsZero() {
		at = time.Now()
	}
	if name == "" {
		name = EventCustomFallback
	}
	return custom(name, value, at.UnixMilli())
}

func custom(name string, value any, ts int64) *events.CustomEvent {
	if isNil(value) {
		value = map[string]any{}
	}
	return &events.CustomEvent{BaseEvent: base(events.EventTypeCustom, ts), Name: name, Value: value}
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Map, reflect.Slice, reflect.Pointer, reflect.Interface, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}
