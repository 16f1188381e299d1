package fil

import "errors"

func openXGBoost(p params, file string, data []byte) (Forest, error) {
	return nil, errors.ErrUnsupported
}
