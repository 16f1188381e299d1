package modelconfig

// ControlDataType returns the datatype of a sequence_batching control
// input's tensor: TYPE_INT32, TYPE_FP32 or TYPE_BOOL for START, END and
// READY controls according to which false/true list they set, the
// configured data_type for CORRID. It returns TYPE_INVALID when the input
// has no control or its controls disagree.
func ControlDataType(ci *ModelSequenceBatching_ControlInput) DataType {
	dt := DataType_TYPE_INVALID
	for _, c := range ci.GetControl() {
		var t DataType
		switch {
		case c.GetKind() == ModelSequenceBatching_Control_CONTROL_SEQUENCE_CORRID:
			t = c.GetDataType()
		case len(c.GetInt32FalseTrue()) > 0:
			t = DataType_TYPE_INT32
		case len(c.GetFp32FalseTrue()) > 0:
			t = DataType_TYPE_FP32
		case len(c.GetBoolFalseTrue()) > 0:
			t = DataType_TYPE_BOOL
		}
		if t == DataType_TYPE_INVALID || (dt != DataType_TYPE_INVALID && t != dt) {
			return DataType_TYPE_INVALID
		}
		dt = t
	}
	return dt
}
