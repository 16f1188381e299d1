package inferencepb

// ParameterOf returns v, a value of Triton's parameter kinds (bool, int64,
// uint64, float64, string), as an InferParameter; nil for any other type.
func ParameterOf(v any) *InferParameter {
	var p InferParameter
	switch v := v.(type) {
	case bool:
		p.ParameterChoice = &InferParameter_BoolParam{BoolParam: v}
	case int64:
		p.ParameterChoice = &InferParameter_Int64Param{Int64Param: v}
	case uint64:
		p.ParameterChoice = &InferParameter_Uint64Param{Uint64Param: v}
	case float64:
		p.ParameterChoice = &InferParameter_DoubleParam{DoubleParam: v}
	case string:
		p.ParameterChoice = &InferParameter_StringParam{StringParam: v}
	default:
		return nil
	}
	return &p
}

// Value returns the parameter's value as a bool, int64, uint64, float64 or
// string, and false when none is set.
func (x *InferParameter) Value() (any, bool) {
	switch c := x.GetParameterChoice().(type) {
	case *InferParameter_BoolParam:
		return c.BoolParam, true
	case *InferParameter_Int64Param:
		return c.Int64Param, true
	case *InferParameter_Uint64Param:
		return c.Uint64Param, true
	case *InferParameter_DoubleParam:
		return c.DoubleParam, true
	case *InferParameter_StringParam:
		return c.StringParam, true
	}
	return nil, false
}
