package inferencepb

import "testing"

func TestParameterRoundTrip(t *testing.T) {
	for _, v := range []any{true, int64(-3), uint64(1) << 63, 2.0, "s"} {
		got, ok := ParameterOf(v).Value()
		if !ok || got != v {
			t.Errorf("ParameterOf(%#v).Value() = %#v, %v", v, got, ok)
		}
	}
	if p := ParameterOf(int32(1)); p != nil {
		t.Errorf("ParameterOf(int32) = %v, want nil", p)
	}
	if v, ok := (&InferParameter{}).Value(); ok {
		t.Errorf("an empty parameter has value %#v", v)
	}
}
