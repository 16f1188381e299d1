// Package fil is the "fil" backend: tree models (XGBoost, LightGBM) with
// the configuration of Triton's FIL backend (spec/pytorch-fil.md §B), on
// the CPU.
//
// A model folder holds config.pbtxt and <version>/<file>, the file named
// by default_model_filename or, by default, after model_type: xgboost
// (XGBoost's legacy binary, the default type) xgboost.model, xgboost_json
// xgboost.json, xgboost_ubj xgboost.ubj, lightgbm model.txt. XGBoost
// models run through XGBoost's C API (package backend/fil/xgboost; the
// library is opened when the first such model loads, so a program that
// serves none needs no libxgboost); LightGBM text models through our own
// reader (package backend/fil/lightgbm). treelite_checkpoint is refused:
// Treelite is not here.
//
// # Parameters
//
// As FIL's current code reads them: is_classifier (required; the removed
// output_class is still honoured), predict_proba (default false),
// threshold (required for classifiers, as FIL's code requires, though its
// docs say 0.5), xgboost_allow_unknown_field, cpu_nthread (XGBoost's
// threads; -1, the default, all). Booleans are exactly "true" or "false"
// (anything else fails the load with FIL's "Expected 'true' or 'false'
// for parameter ..."), a number that does not read takes its default or
// fails with "Bad input for parameter ...", and a missing required one
// fails with "Required parameter ... not found in config". The GPU-only
// parameters layout (checked: depth_first, breadth_first, layered),
// chunk_size, transfer_threshold and use_experimental_optimizations (with
// FIL's deprecation warning) are accepted and change nothing on the CPU.
// The removed algo, threads_per_tree, output_class, storage_type and
// blocks_per_sm are logged with FIL's warnings.
//
// # Tensors
//
// One input, input__0, TYPE_FP32 with dims [ n_features ] (the model's
// feature count: another fails the load), batched (max_batch_size > 0).
// output__0 is TYPE_FP32 with dims [ 1 ]: a regressor's prediction, a
// classifier's class (a binary one's is 1 when P(class 1) > threshold; a
// multi-class one's is its most likely class); with predict_proba, a
// binary classifier's [ 1 ] is P(class 1) and [ 2 ] is [ 1-p, p ], a
// k-class one's [ k ] its class probabilities. Declaring treeshap_output
// (dims [ n_features+1 ], or [ k, n_features+1 ]) adds each row's SHAP
// values, the bias last. NaN in an input is a missing value, as in FIL
// and the training libraries; an infinity fails its request alone with
// InvalidArgument naming the row and feature.
//
// # Memory
//
// A model reports (backend.MemoryReporter) its file's size, which is
// about what its trees hold once loaded.
package fil
