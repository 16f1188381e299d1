// torchrun.h declares the C side of package torchrun: trun_open, which
// loads the shim (libtriton_pytorch.so, see ../torchshim/torchshim.h) and
// resolves its functions with dlsym into a table, and one trampoline per
// shim function that calls through the table. Go calls only these; it never
// links against the shim or libtorch.

#ifndef TORCHRUN_H
#define TORCHRUN_H

#include "torchshim.h"

// trun_open loads the shim at path (dlopen RTLD_NOW|RTLD_LOCAL) and fills
// the table. It returns NULL or a malloc'd message naming path and
// dlerror()'s text; the caller frees it with free. Go calls it at most once
// successfully (Open keeps the result); the handle is never closed.
char *trun_open(const char *path);

// The trampolines: each calls the shim function of the same name with
// trun_ replaced by tshim_. trun_open must have succeeded.
void trun_free_msg(char *msg);
const char *trun_version(void);
char *trun_load(const char *path, const tshim_options *opts, tshim_module **out);
void trun_module_free(tshim_module *m);
size_t trun_num_args(const tshim_module *m);
const char *trun_arg_name(const tshim_module *m, size_t i);
const char *trun_arg_type(const tshim_module *m, size_t i);
char *trun_forward(tshim_module *m, const tshim_value *in, size_t n, int dict, tshim_outputs **out, size_t *n_out);
void trun_outputs_describe(const tshim_outputs *o, tshim_output_info *infos);
void trun_output_copy(const tshim_outputs *o, size_t i, int64_t *dims, void *data, size_t *lens);
void trun_outputs_free(tshim_outputs *o);
char *trun_set_intra_threads(int n);
char *trun_set_interop_threads(int n);
size_t trun_live(void);

// trun_has_settings reports whether the shim has tshim_get_settings (a
// shim built before it lacks it); trun_get_settings may be called only
// when it has.
int trun_has_settings(void);
char *trun_get_settings(tshim_settings *out);

// trun_module_training calls tshim_module_training; 0 when the shim lacks
// it (built before it).
int trun_module_training(const tshim_module *m);

// trun_module_state_bytes calls tshim_module_state_bytes; -1 when the shim
// lacks it (built before it).
int64_t trun_module_state_bytes(const tshim_module *m);

// trun_arg_printed calls tshim_arg_printed; trun_arg_type's spelling when
// the shim lacks it.
const char *trun_arg_printed(const tshim_module *m, size_t i);

// trun_arg_copied calls tshim_arg_copied; 0 when the shim lacks it.
int trun_arg_copied(const tshim_module *m, size_t i);

// trun_worker runs forwards one at a time, on a thread of its own, in the
// order trun_worker_forward submits them: a forward submitted while
// another runs starts the moment that one ends, on the thread already
// running, with no thread woken between the two; a second thread wakes
// the submitters of long forwards, so that the first does not pay for it.
typedef struct trun_worker trun_worker;

// trun_worker_start starts a worker; NULL when a thread cannot be made.
trun_worker *trun_worker_start(void);

// trun_worker_stop ends the worker's threads once the forwards submitted
// are done, waits for them and frees w.
void trun_worker_stop(trun_worker *w);

// trun_worker_forward runs trun_forward(m, in, n, dict, out, n_out) on w's
// thread and returns its result when it is done; *waited_ns is how long
// the forward waited for the ones submitted before it, *ran_ns how long it
// ran. With inline_ok, a forward submitted while none runs or waits runs
// on the calling thread.
char *trun_worker_forward(trun_worker *w, int inline_ok, tshim_module *m, const tshim_value *in, size_t n, int dict,
			  tshim_outputs **out, size_t *n_out, int64_t *waited_ns, int64_t *ran_ns);

// trun_workers is the number of workers started and not stopped.
int trun_workers(void);

#endif // TORCHRUN_H
