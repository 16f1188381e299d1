package lightgbm

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// transform is what an objective's ConvertOutput does to the raw scores.
type transform uint8

const (
	identity     transform = iota // regression (L2, L1, huber, fair, quantile, mape), ranking, no objective
	signedSquare                  // regression with "sqrt" (reg_sqrt): sign(x)·x²
	exponential                   // poisson, gamma, tweedie
	sigmoid                       // binary, cross_entropy, multiclassova (per class)
	softmax                       // multiclass
	softplus                      // cross_entropy_lambda: log(1+eˣ)
)

// objective is the objective= line of a model, reduced to what prediction
// needs. LightGBM rebuilds the objective from that line
// (ObjectiveFunction::CreateObjectiveFunction) and calls its
// ConvertOutput; this mirrors each class's string constructor and
// ConvertOutput (src/objective/*.hpp).
type objective struct {
	name     string    // the whole line, as LightGBM wrote it; "" when absent
	kind     transform // what Predict applies
	sigmoid  float64   // the slope, for kind == sigmoid
	numClass int       // num_class: of multiclass and multiclassova; 1 otherwise
}

// parseObjective reads the value of an objective= line. numClass is the
// header's num_class, which a multi-class objective must repeat.
func parseObjective(s string, numClass int) (objective, error) {
	// LightGBM applies its alias table to the whole string (which only
	// matters for a bare name), then splits it at spaces.
	fields := strings.Fields(objectiveAlias(s))
	if len(fields) == 0 {
		return objective{}, errors.New("objective= is empty")
	}
	obj := objective{name: s, numClass: 1}
	params := map[string]string{}
	sqrt := false
	for _, f := range fields[1:] {
		if f == "sqrt" {
			sqrt = true
		}
		if k, v, ok := strings.Cut(f, ":"); ok && !strings.Contains(v, ":") {
			params[k] = v
		}
	}
	slope := func() error {
		v, ok := params["sigmoid"]
		if !ok {
			return fmt.Errorf("objective %q has no sigmoid:<value>", s)
		}
		obj.sigmoid = legacyAtof(v)
		if !(obj.sigmoid > 0) {
			return fmt.Errorf("objective %q: sigmoid %s should be greater than zero", s, v)
		}
		return nil
	}
	classes := func() error {
		v, ok := params["num_class"]
		if !ok {
			return fmt.Errorf("objective %q has no num_class:<value>", s)
		}
		n, err := strconv.Atoi(v)
		if err != nil || n != numClass {
			return fmt.Errorf("objective %q: num_class %s does not match the header's num_class=%d", s, v, numClass)
		}
		obj.numClass = n
		return nil
	}
	switch fields[0] {
	case "regression", "regression_l1", "quantile", "mape":
		// These keep RegressionL2loss's "sqrt" flag.
		if sqrt {
			obj.kind = signedSquare
		}
	case "huber", "fair", "lambdarank", "rank_xendcg", "custom":
		// huber and fair clear "sqrt"; the rankers and a custom
		// objective (LightGBM: none) leave the score as it is.
	case "poisson", "gamma", "tweedie":
		obj.kind = exponential
	case "binary":
		obj.kind = sigmoid
		if err := slope(); err != nil {
			return obj, err
		}
	case "cross_entropy":
		obj.kind, obj.sigmoid = sigmoid, 1
	case "cross_entropy_lambda":
		obj.kind = softplus
	case "multiclass":
		obj.kind = softmax
		if err := classes(); err != nil {
			return obj, err
		}
	case "multiclassova":
		obj.kind = sigmoid
		if err := classes(); err != nil {
			return obj, err
		}
		if err := slope(); err != nil {
			return obj, err
		}
	default:
		return obj, errUnsupported("objective %q", fields[0])
	}
	if obj.numClass != numClass && fields[0] != "custom" {
		return obj, fmt.Errorf("objective %q predicts one value but the header says num_class=%d", s, numClass)
	}
	return obj, nil
}

// objectiveAlias is LightGBM's ParseObjectiveAlias (include/LightGBM/config.h).
func objectiveAlias(s string) string {
	switch s {
	case "regression", "regression_l2", "mean_squared_error", "mse", "l2", "l2_root", "root_mean_squared_error", "rmse":
		return "regression"
	case "regression_l1", "mean_absolute_error", "l1", "mae":
		return "regression_l1"
	case "multiclass", "softmax":
		return "multiclass"
	case "multiclassova", "multiclass_ova", "ova", "ovr":
		return "multiclassova"
	case "xentropy", "cross_entropy":
		return "cross_entropy"
	case "xentlambda", "cross_entropy_lambda":
		return "cross_entropy_lambda"
	case "mean_absolute_percentage_error", "mape":
		return "mape"
	case "rank_xendcg", "xendcg", "xe_ndcg", "xe_ndcg_mart", "xendcg_mart":
		return "rank_xendcg"
	case "none", "null", "custom", "na":
		return "custom"
	}
	return s
}

// convert applies the objective to one row's raw scores, in place, with
// LightGBM's arithmetic (the same operations in the same order).
func (o *objective) convert(score []float64) {
	switch o.kind {
	case signedSquare:
		x := score[0]
		score[0] = sign(x) * x * x
	case exponential:
		score[0] = math.Exp(score[0])
	case sigmoid:
		for i, x := range score[:o.numClass] {
			score[i] = 1 / (1 + math.Exp(-o.sigmoid*x))
		}
	case softmax:
		// Common::Softmax.
		wmax := score[0]
		for _, x := range score[1:] {
			wmax = math.Max(x, wmax)
		}
		var wsum float64
		for i, x := range score {
			score[i] = math.Exp(x - wmax)
			wsum += score[i]
		}
		for i := range score {
			score[i] /= wsum
		}
	case softplus:
		score[0] = math.Log1p(math.Exp(score[0]))
	}
}

// sign is Common::Sign: -1, 0 or 1 (0 for NaN).
func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// legacyAtof is LightGBM's Common::Atof, which reads the sigmoid:<value>
// of an objective line: the integer part plus the fraction's digits over
// a power of ten, which is not always the correctly rounded double that
// strconv.ParseFloat gives. Anything it does not take for a number is
// NaN.
func legacyAtof(s string) float64 {
	p := strings.TrimLeft(s, " ")
	sgn := 1.0
	if strings.HasPrefix(p, "-") {
		sgn, p = -1, p[1:]
	} else if strings.HasPrefix(p, "+") {
		p = p[1:]
	}
	if p == "" || !(p[0] >= '0' && p[0] <= '9' || p[0] == '.' || p[0] == 'e' || p[0] == 'E') {
		switch strings.ToLower(p) {
		case "inf", "infinity":
			return sgn * math.Inf(1)
		}
		return math.NaN()
	}
	i := 0
	value := 0.0
	for ; i < len(p) && p[i] >= '0' && p[i] <= '9'; i++ {
		value = float64(value*10) + float64(p[i]-'0')
	}
	if i < len(p) && p[i] == '.' {
		right, nn := 0.0, 0
		for i++; i < len(p) && p[i] >= '0' && p[i] <= '9'; i++ {
			right = float64(p[i]-'0') + float64(right*10)
			nn++
		}
		value += right / legacyPow(10, nn)
	}
	scale, frac := 1.0, false
	if i < len(p) && (p[i] == 'e' || p[i] == 'E') {
		i++
		if i < len(p) && p[i] == '-' {
			frac = true
			i++
		} else if i < len(p) && p[i] == '+' {
			i++
		}
		expon := uint32(0)
		for ; i < len(p) && p[i] >= '0' && p[i] <= '9'; i++ {
			expon = expon*10 + uint32(p[i]-'0')
		}
		expon = min(expon, 308)
		for ; expon >= 50; expon -= 50 {
			scale *= 1e50
		}
		for ; expon >= 8; expon -= 8 {
			scale *= 1e8
		}
		for ; expon > 0; expon-- {
			scale *= 10
		}
	}
	if frac {
		return sgn * (value / scale)
	}
	return sgn * (value * scale)
}

// legacyPow is LightGBM's Common::Pow, by which legacyAtof divides.
func legacyPow(base float64, power int) float64 {
	switch {
	case power < 0:
		return 1 / legacyPow(base, -power)
	case power == 0:
		return 1
	case power%2 == 0:
		return legacyPow(base*base, power/2)
	case power%3 == 0:
		return legacyPow(base*base*base, power/3)
	}
	return base * legacyPow(base, power-1)
}
