// Package xgbrun runs XGBoost tree models through XGBoost's C API, loaded at
// run time. It is the cgo layer under backend/fil/xgboost, as cgo/ortrun is
// under backend/onnxruntime.
//
// # The library, and why dlopen
//
// The package includes no XGBoost header and links no XGBoost library: its
// C (xgbrun.c) declares the dozen C API functions it calls
// (xgbrun_api.h, checked against XGBoost's own c_api.h by TestAPITypes when
// libxgboost-dev is installed), and [Open] loads the library with dlopen
// (RTLD_NOW|RTLD_LOCAL) and resolves them with dlsym. So `go build ./...`
// needs nothing of XGBoost, and a program that never calls Open never
// loads it. Debian 12's libxgboost0 (XGBoost 1.7.4) is the library the
// package is written and tested against; Open refuses one older than 1.7.
// Open also silences XGBoost's logging (global verbosity 0): its errors
// come back through XGBGetLastError as [*Error] values.
//
// # Formats, and what is checked before XGBoost reads a file
//
// XGBoost 1.7's loader reads the format from the data's first bytes, and
// trusts the data more than a server can: its UBJSON reader copies
// lengths it reads without comparing them with what is left (a truncated
// file reads past its buffer, or crashes), its legacy binary reader
// allocates from counts it reads and loads a file cut short in its
// attributes without complaint, its JSON and UBJSON readers recurse once
// per nesting level, and its tree loader indexes nodes and category sets
// by numbers from the file. [Check] (which [Load] calls) refuses data of
// another format than the one declared and walks the whole structure
// first, with bounds; after loading, Load checks the model XGBoost holds
// (it saves it back as UBJSON) for what prediction trusts: children and
// split features in range, no cycle, output groups in range. A file that
// is not a well-formed model of its declared format is an error wrapping
// [ErrFormat], never a crash. FuzzLoad searches for inputs that get past
// the checks and crash XGBoost.
//
// # Usage
//
//	if err := xgbrun.Open("libxgboost.so.0"); err != nil { … }
//	b, err := xgbrun.Load(data, xgbrun.UBJSON)
//	defer b.Close()
//	info := b.Info() // features, classes, objective, output widths
//	err = b.Predict(rows, n, xgbrun.Values, 0, out)
//	err = b.Contributions(rows, n, 0, shap)
//
// # Prediction
//
// Predict is XGBoost's in-place prediction (XGBoosterPredictFromDense over
// the caller's rows, as Python's Booster.inplace_predict), whose results
// are bit for bit those of Python's Booster.predict for gbtree models; for
// dart models, whose in-place prediction sums the trees in another order,
// it predicts from a DMatrix, as Booster.predict does. Contributions is
// Booster.predict(pred_contribs=True): exact TreeSHAP, from a DMatrix.
// NaN is the missing value. Inputs are read during the call only; results
// are copied out of XGBoost's per-thread buffers before the call returns.
//
// # Threads
//
// The booster's nthread is 0, which makes XGBoost take each call's thread
// count from OpenMP's setting on the calling thread; each call sets that
// setting to the count asked for, capped by the work (XGBoost's CPU
// predictor hands threads blocks of 64 rows, so a call of 64 rows or fewer
// runs on its caller's thread alone), and restores it after, so that other
// OpenMP users on the thread (libtorch) are not affected.
//
// # Concurrency
//
// Predict and Contributions are safe for concurrent use, without a lock
// around XGBoost: XGBoost 1.7 documents every prediction function, SHAP
// included, as thread safe for gbtree and dart boosters, as long as
// nothing changes the booster meanwhile (doc/prediction.rst, "Thread
// Safety"); the code agrees (in-place prediction allocates per call,
// DMatrix prediction keeps its buffers per thread and booster), the lazy
// configuration is finished at Load (which predicts one row), and nothing
// here changes a booster after Load.
// [Booster.Close] waits for the calls in progress. XGBoost keeps a
// prediction buffer per booster and thread that used it; Close frees only
// the calling thread's, so a process that loads and closes many models
// from many threads keeps some memory until those threads end.
package xgbrun
