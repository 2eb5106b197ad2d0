package relaybench

import (
	"reflect"
	"testing"
	"time"
)

func TestParseFanShapes(t *testing.T) {
	def := Stream{Chunks: 500, Interval: 20 * time.Millisecond, Size: 48}
	for _, tc := range []struct {
		in      string
		want    []FanShape
		streams []Stream // each shape's stream given def
	}{
		{"", nil, nil},
		{"10x10", []FanShape{{Runs: 10, Width: 10}}, []Stream{def}},
		{" 10x10 , 10x100:300@200ms ", []FanShape{{Runs: 10, Width: 10}, {Runs: 10, Width: 100, Chunks: 300, Interval: 200 * time.Millisecond}},
			[]Stream{def, {Chunks: 300, Interval: 200 * time.Millisecond, Size: 48}}},
	} {
		got, err := ParseFanShapes(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseFanShapes(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			continue
		}
		for i, sh := range got {
			if s := sh.stream(def); s != tc.streams[i] {
				t.Errorf("%q: shape %d streams %+v, want %+v", tc.in, i, s, tc.streams[i])
			}
		}
	}
	for _, bad := range []string{"10", "10x", "0x10", "10x10:", "10x10:300", "10x10:1@20ms", "10x10:300@0s", "10x10:300@soon", "axb"} {
		if got, err := ParseFanShapes(bad); err == nil {
			t.Errorf("ParseFanShapes(%q) = %v, want an error", bad, got)
		}
	}
	if _, err := ParseFanShapes(DefaultFanOut); err != nil {
		t.Errorf("DefaultFanOut: %v", err)
	}
}
