package fil

import (
	"github.com/triton-go/triton/backend/fil/lightgbm"
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
