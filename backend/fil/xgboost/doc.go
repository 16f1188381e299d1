// Package xgboost loads XGBoost models for the fil backend: the model types
// xgboost (XGBoost's legacy binary format, file xgboost.model),
// xgboost_json and xgboost_ubj of Triton's FIL backend. A [Forest] is the
// backend's fil.Forest for such a model; it runs on XGBoost's own C API
// (through cgo/xgbrun), so its predictions and SHAP values are XGBoost's,
// bit for bit as Python's Booster.predict gives them.
//
// # The library
//
// XGBoost's shared library is loaded when the first model loads
// ([OpenLibrary]): Options.LibraryPath, else $XGBOOST_LIB, else Debian's
// libxgboost.so.0 (package libxgboost0; libxgboost-dev adds
// libxgboost.so) through the dynamic linker's search. A program that
// loads no XGBoost model needs no XGBoost; one that does and lacks it gets
// an error wrapping [ErrNoLibrary] that says what to install.
//
// # Formats
//
// The caller declares the format (Options.Format, from FIL's model_type
// by [ParseFormat]); nothing is detected. A file of another format, a
// truncated one, or one whose structure would make XGBoost read out of
// bounds is refused before XGBoost reads it, with an error naming the file
// and the format (see package cgo/xgbrun). xgboost_allow_unknown_field is
// accepted and changes nothing: XGBoost 1.7.4 reads the fields it knows
// and ignores the rest, so JSON and UBJSON models with unknown fields
// load whatever its value.
//
// # Usage
//
//	f, err := xgboost.Load("1/xgboost.json", xgboost.Options{Format: xgboost.JSON, Threads: -1})
//	defer f.Close()
//	out := make([]float32, n*f.Outputs())
//	err = f.Predict(rows, n, out) // rows: n×f.Features() float32, NaN missing
//
// # Concurrency
//
// A Forest is safe for concurrent use, without locks around XGBoost, whose
// prediction functions are thread safe for tree models; several instances
// of a model share one. Threads bounds the threads of each call, not of the
// process: concurrent calls run side by side.
package xgboost
