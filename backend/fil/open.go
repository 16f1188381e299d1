package fil

import (
	"github.com/triton-go/triton/backend/fil/lightgbm"
	"github.com/triton-go/triton/backend/fil/xgboost"
)

// openForest loads the forest of a model file; file names it in errors.
// A variable so that tests can put a forest of their own in its place.
var openForest = func(p params, file string, data []byte) (Forest, error) {
	switch p.modelType {
	case "lightgbm":
		return lightgbm.Parse(file, data)
	}
	return openXGBoost(p, file, data)
}

// openXGBoost loads an XGBoost model of one of the three formats.
func openXGBoost(p params, file string, data []byte) (Forest, error) {
	format, err := xgboost.ParseFormat(p.modelType)
	if err != nil {
		return nil, err
	}
	return xgboost.LoadBytes(file, data, xgboost.Options{Format: format, AllowUnknownField: p.allowUnknown, Threads: p.threads})
}
