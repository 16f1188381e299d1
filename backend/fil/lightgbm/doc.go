// Package lightgbm reads LightGBM text models (the model.txt that
// Booster.save_model and the lightgbm CLI write) and predicts with them in
// pure Go, as LightGBM itself does: it is the FIL backend's
// model_type "lightgbm" ([Forest] implements the fil.Forest interface of
// package backend/fil), and needs neither cgo nor LightGBM's library.
//
// # Entry points
//
// [Load] reads a file, [LoadFS] a file of an [io/fs.FS] (a model
// repository), [Parse] bytes already in memory. Each checks the whole file
// and returns a [*Forest] or a [*FormatError] that names the file and line
// and says what is wrong. The Forest's [Forest.Predict] computes rows into
// predictions and [Forest.SHAP] into SHAP values. A Forest is immutable and
// safe for concurrent use; Close is a no-op.
//
// # What LightGBM does, and so does this package
//
// Formats: the header, Tree= blocks and trailer of LightGBM 4 (version=v4)
// and LightGBM 3 (version=v3), which differ only after "end of trees";
// Unix or Windows line ends. version=v2 and unknown versions are refused
// (wrapping [errors.ErrUnsupported]).
//
// Trees: Tree::GetLeaf with decision_type's bits: bit 0 categorical (only
// in trees with num_cat > 0, as in LightGBM), bit 1 default left, bits 2–3
// the missing type. Numerical splits go left when value <= threshold; with
// missing type None a NaN reads as 0; Zero sends 0 (|x| ≤ 1e-35) and NaN
// the default way; NaN sends NaN the default way. Categorical splits test
// int(value) in the node's cat_threshold bitset (cat_boundaries): NaN,
// negative values (≤ -1: -0.5 truncates to category 0) and values beyond
// int32 go right, as do categories past the bitset. Inputs with
// |x| ≤ 1e-35 are read as 0, as LightGBM's parsers and C API do. Linear
// trees (linear_tree=true: is_linear, leaf_const, num_features,
// leaf_features, leaf_coeff) predict leaf_const + Σ coeff·x, or the leaf's
// leaf_value when one of its features is NaN.
//
// Objectives (ConvertOutput): identity for regression, regression_l1,
// huber, fair, quantile, mape, lambdarank, rank_xendcg and a model without
// objective (custom); sign(x)·x² for "regression sqrt" (reg_sqrt, also
// regression_l1, quantile and mape); eˣ for poisson, gamma and tweedie;
// 1/(1+e^(−σx)) for binary (σ from "sigmoid:σ") and cross_entropy (σ = 1);
// log(1+eˣ) for cross_entropy_lambda; softmax for multiclass; a sigmoid
// per class for multiclassova. average_output (boosting=rf) divides the
// summed scores by the number of iterations first. Objective aliases
// (mse, xentropy, softmax, ...) are read as LightGBM reads them; an unknown
// objective is refused, wrapping [errors.ErrUnsupported].
//
// Arithmetic: float64 throughout, the same operations in the same order as
// LightGBM, so that scores and SHAP values match LightGBM's bit for bit
// and transformed predictions to the last place of exp (the tests compare
// against LightGBM 4's own output for 18 models); Predict and SHAP round
// to float32 at the end.
//
// SHAP: LightGBM's TreeSHAP (Tree::TreeSHAP, pred_contrib), with
// leaf_count and internal_count as the covers. Like LightGBM it refuses
// linear trees (an error wrapping [errors.ErrUnsupported]) and does not
// average for average_output.
//
// # What it checks
//
// Loading never panics on bad input (FuzzLoad) and leaves nothing for
// prediction to trip over: a file that is not a LightGBM text model (an
// XGBoost JSON, UBJSON or binary model handed over by mistake is named as
// such), a truncated one (no "end of trees", a parameters section without
// its end), header counts that disagree (feature_names, feature_infos,
// tree_sizes, trees not a multiple of num_tree_per_iteration), array
// lengths that disagree with num_leaves and num_cat, unparsable numbers,
// feature and child indices out of range, categorical bitset ranges and
// indices, undefined missing types, and child links that do not form one
// binary tree rooted at node 0 (a node with two parents, the root as a
// child, a cycle, an unreachable node).
package lightgbm
