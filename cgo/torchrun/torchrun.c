// torchrun.c loads the PyTorch shim at run time and calls it through a
// table of function pointers resolved with dlsym (see torchrun.h), and
// runs forwards on worker threads (trun_worker).

#include "torchrun.h"

#include <dlfcn.h>
#include <pthread.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// The table's field types are the shim's own prototypes (torchshim.h), so a
// change there that the trampolines miss fails the build.
static struct {
	__typeof__(&tshim_free_msg) free_msg;
	__typeof__(&tshim_version) version;
	__typeof__(&tshim_load) load;
	__typeof__(&tshim_module_free) module_free;
	__typeof__(&tshim_num_args) num_args;
	__typeof__(&tshim_arg_name) arg_name;
	__typeof__(&tshim_arg_type) arg_type;
	__typeof__(&tshim_forward) forward;
	__typeof__(&tshim_outputs_describe) outputs_describe;
	__typeof__(&tshim_output_copy) output_copy;
	__typeof__(&tshim_outputs_free) outputs_free;
	__typeof__(&tshim_set_intra_threads) set_intra_threads;
	__typeof__(&tshim_set_interop_threads) set_interop_threads;
	__typeof__(&tshim_live) live;
	__typeof__(&tshim_get_settings) get_settings; // optional: NULL in a shim built before it
	__typeof__(&tshim_module_training) module_training; // optional, as get_settings
	__typeof__(&tshim_arg_copied) arg_copied;           // optional, as get_settings
	__typeof__(&tshim_arg_printed) arg_printed;         // optional, as get_settings
	__typeof__(&tshim_module_state_bytes) state_bytes;  // optional, as get_settings
} fns;

// errorf returns a malloc'd message "<path>: <what>: <detail>".
static char *errorf(const char *path, const char *what, const char *detail) {
	if (detail == NULL) {
		detail = "unknown error";
	}
	size_t n = strlen(path) + strlen(what) + strlen(detail) + 5;
	char *m = malloc(n);
	if (m != NULL) {
		snprintf(m, n, "%s: %s: %s", path, what, detail);
	}
	return m;
}

char *trun_open(const char *path) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		return errorf(path, "dlopen", dlerror());
	}
	struct {
		const char *name;
		void **slot;
	} syms[] = {
		{"tshim_free_msg", (void **)&fns.free_msg},
		{"tshim_version", (void **)&fns.version},
		{"tshim_load", (void **)&fns.load},
		{"tshim_module_free", (void **)&fns.module_free},
		{"tshim_num_args", (void **)&fns.num_args},
		{"tshim_arg_name", (void **)&fns.arg_name},
		{"tshim_arg_type", (void **)&fns.arg_type},
		{"tshim_forward", (void **)&fns.forward},
		{"tshim_outputs_describe", (void **)&fns.outputs_describe},
		{"tshim_output_copy", (void **)&fns.output_copy},
		{"tshim_outputs_free", (void **)&fns.outputs_free},
		{"tshim_set_intra_threads", (void **)&fns.set_intra_threads},
		{"tshim_set_interop_threads", (void **)&fns.set_interop_threads},
		{"tshim_live", (void **)&fns.live},
	};
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		dlerror();
		void *p = dlsym(h, syms[i].name);
		if (p == NULL) {
			char *m = errorf(path, syms[i].name, dlerror());
			dlclose(h);
			return m;
		}
		*syms[i].slot = p;
	}
	fns.get_settings = (__typeof__(&tshim_get_settings))dlsym(h, "tshim_get_settings");
	fns.module_training = (__typeof__(&tshim_module_training))dlsym(h, "tshim_module_training");
	fns.arg_copied = (__typeof__(&tshim_arg_copied))dlsym(h, "tshim_arg_copied");
	fns.arg_printed = (__typeof__(&tshim_arg_printed))dlsym(h, "tshim_arg_printed");
	fns.state_bytes = (__typeof__(&tshim_module_state_bytes))dlsym(h, "tshim_module_state_bytes");
	return NULL;
}

void trun_free_msg(char *msg) { fns.free_msg(msg); }

const char *trun_version(void) { return fns.version(); }

char *trun_load(const char *path, const tshim_options *opts, tshim_module **out) {
	return fns.load(path, opts, out);
}

void trun_module_free(tshim_module *m) { fns.module_free(m); }

int trun_module_training(const tshim_module *m) { return fns.module_training != NULL ? fns.module_training(m) : 0; }

int64_t trun_module_state_bytes(const tshim_module *m) { return fns.state_bytes != NULL ? fns.state_bytes(m) : -1; }

size_t trun_num_args(const tshim_module *m) { return fns.num_args(m); }

const char *trun_arg_name(const tshim_module *m, size_t i) { return fns.arg_name(m, i); }

const char *trun_arg_type(const tshim_module *m, size_t i) { return fns.arg_type(m, i); }

const char *trun_arg_printed(const tshim_module *m, size_t i) {
	return fns.arg_printed != NULL ? fns.arg_printed(m, i) : fns.arg_type(m, i);
}

int trun_arg_copied(const tshim_module *m, size_t i) { return fns.arg_copied != NULL ? fns.arg_copied(m, i) : 0; }

char *trun_forward(tshim_module *m, const tshim_value *in, size_t n, int dict, tshim_outputs **out, size_t *n_out) {
	return fns.forward(m, in, n, dict, out, n_out);
}

void trun_outputs_describe(const tshim_outputs *o, tshim_output_info *infos) { fns.outputs_describe(o, infos); }

void trun_output_copy(const tshim_outputs *o, size_t i, int64_t *dims, void *data, size_t *lens) {
	fns.output_copy(o, i, dims, data, lens);
}

void trun_outputs_free(tshim_outputs *o) { fns.outputs_free(o); }

char *trun_set_intra_threads(int n) { return fns.set_intra_threads(n); }

char *trun_set_interop_threads(int n) { return fns.set_interop_threads(n); }

size_t trun_live(void) { return fns.live(); }

int trun_has_settings(void) { return fns.get_settings != NULL; }

char *trun_get_settings(tshim_settings *out) { return fns.get_settings(out); }

// A job is one forward submitted to a worker. It lives on the stack of the
// thread that submitted it, which waits until woken is set.
typedef struct job {
	tshim_module *m;
	const tshim_value *in;
	size_t n;
	int dict;
	tshim_outputs **out;
	size_t *n_out;
	char *msg;
	int64_t queued, started, ended; // CLOCK_MONOTONIC ns
	int watched;                    // the watcher wakes the submitter (see trun_worker)
	int woken;                      // the forward is done and its submitter may return
	pthread_cond_t cond;            // signalled when woken is set
	struct job *next;               // in the queue, then in the list of ended forwards
} job;

// A worker runs one forward at a time (busy). The worker's thread runs the
// queue in order, each forward the moment the one before ends; a forward
// submitted inline while none runs and none is queued runs on the
// submitting thread instead, as a plain trun_forward would (waking the
// worker thread for it would cost two thread wake-ups).
//
// Waking a thread that sleeps costs the waker a system call and, on a
// virtual machine whose idle CPUs halt, an interrupt through the host:
// 25-30 us, between two forwards if the worker's thread paid it. So a
// second thread, the watcher, wakes the submitters of forwards that ran
// watch_min or longer last time: it sleeps until the running forward is
// expected to end (as long as the last one ran), then looks every
// watch_poll; the worker's thread puts the ended forward on a list and
// starts the next with no one to wake. A submitter so learns of its result
// up to about 100 us late; a shorter forward's submitter is woken by the
// worker's thread, as the watcher's wake-ups would cost more than they
// save.
struct trun_worker {
	pthread_t thread, watcher;
	pthread_mutex_t mu;
	pthread_cond_t cond;  // signalled when the thread has a job to run, or stop is set
	pthread_cond_t watch; // signalled when a watched forward starts while the watcher is idle, or stop is set
	job *head, *tail;     // the queue, FIFO
	job *running;         // the queued forward that runs; NULL if none, or an inline one
	job *ended;           // watched forwards ended whose submitters are not woken yet
	int64_t expect;       // how long the last forward ran, the time the next is expected to take
	int busy;             // a forward runs
	int idle;             // the watcher waits for watch
	int stop;
};

// workers counts the workers started and not stopped, for the tests.
static atomic_int workers;

int trun_workers(void) { return atomic_load(&workers); }

static int64_t monotonic(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

// The watcher watches forwards that ran watch_min or longer last time; it
// looks every watch_poll once one runs longer than expected.
static const int64_t watch_min = 100000, watch_poll = 50000; // ns

// wake lets j's submitter return, w->mu held.
static void wake(job *j) {
	j->woken = 1;
	pthread_cond_signal(&j->cond);
}

static void *work(void *arg) {
	trun_worker *w = arg;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while ((w->head == NULL || w->busy) && !w->stop) {
			pthread_cond_wait(&w->cond, &w->mu);
		}
		job *j = w->head;
		if (j == NULL) {
			break; // stopped, and nothing left to run
		}
		w->head = j->next;
		if (w->head == NULL) {
			w->tail = NULL;
		}
		w->busy = 1;
		w->running = j;
		j->watched = w->expect >= watch_min;
		if (j->watched && w->idle) {
			pthread_cond_signal(&w->watch);
		}
		j->started = monotonic();
		pthread_mutex_unlock(&w->mu);
		j->msg = fns.forward(j->m, j->in, j->n, j->dict, j->out, j->n_out);
		j->ended = monotonic();
		pthread_mutex_lock(&w->mu);
		w->expect = j->ended - j->started;
		w->busy = 0;
		w->running = NULL;
		if (j->watched) {
			j->next = w->ended;
			w->ended = j;
		} else {
			wake(j);
		}
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

// sleep_until waits for w->watch, w->mu held, until the CLOCK_MONOTONIC
// time at.
static void sleep_until(trun_worker *w, int64_t at) {
	struct timespec t = {.tv_sec = at / 1000000000, .tv_nsec = at % 1000000000};
	pthread_cond_timedwait(&w->watch, &w->mu, &t);
}

static void *watching(void *arg) {
	trun_worker *w = arg;
#ifdef __linux__
	// Its timed waits end when asked, not up to 50 us later.
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (w->ended != NULL) {
			job *j = w->ended;
			w->ended = j->next;
			wake(j);
		}
		job *r = w->running;
		if (r == NULL || !r->watched) {
			if (w->stop && !w->busy && w->head == NULL) {
				break;
			}
			w->idle = 1;
			pthread_cond_wait(&w->watch, &w->mu);
			w->idle = 0;
			continue;
		}
		int64_t end = r->started + w->expect, now = monotonic();
		sleep_until(w, now < end ? end : now + watch_poll);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

trun_worker *trun_worker_start(void) {
	trun_worker *w = calloc(1, sizeof *w);
	if (w == NULL) {
		return NULL;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cond, NULL);
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w->watch, &attr);
	pthread_condattr_destroy(&attr);
	if (pthread_create(&w->thread, NULL, work, w) != 0) {
		goto fail;
	}
	if (pthread_create(&w->watcher, NULL, watching, w) != 0) {
		pthread_mutex_lock(&w->mu);
		w->stop = 1;
		pthread_cond_signal(&w->cond);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->thread, NULL);
		goto fail;
	}
	atomic_fetch_add(&workers, 1);
	return w;
fail:
	pthread_cond_destroy(&w->watch);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->mu);
	free(w);
	return NULL;
}

void trun_worker_stop(trun_worker *w) {
	pthread_mutex_lock(&w->mu);
	w->stop = 1;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	pthread_mutex_lock(&w->mu);
	pthread_cond_signal(&w->watch); // the thread is gone: nothing more to watch
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->watcher, NULL);
	pthread_cond_destroy(&w->watch);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->mu);
	free(w);
	atomic_fetch_sub(&workers, 1);
}

char *trun_worker_forward(trun_worker *w, int inline_ok, tshim_module *m, const tshim_value *in, size_t n, int dict,
			  tshim_outputs **out, size_t *n_out, int64_t *waited_ns, int64_t *ran_ns) {
	pthread_mutex_lock(&w->mu);
	if (inline_ok && !w->busy && w->head == NULL) {
		w->busy = 1;
		pthread_mutex_unlock(&w->mu);
		int64_t start = monotonic();
		char *msg = fns.forward(m, in, n, dict, out, n_out);
		*ran_ns = monotonic() - start;
		pthread_mutex_lock(&w->mu);
		w->expect = *ran_ns;
		w->busy = 0;
		if (w->head != NULL) {
			pthread_cond_signal(&w->cond); // queued meanwhile: the thread runs it
		}
		pthread_mutex_unlock(&w->mu);
		*waited_ns = 0;
		return msg;
	}
	job j = {.m = m, .in = in, .n = n, .dict = dict, .out = out, .n_out = n_out};
	pthread_cond_init(&j.cond, NULL);
	j.queued = monotonic();
	if (w->tail != NULL) {
		w->tail->next = &j;
	} else {
		w->head = &j;
	}
	w->tail = &j;
	if (!w->busy) {
		pthread_cond_signal(&w->cond); // else the forward that runs signals when it ends
	}
	while (!j.woken) {
		pthread_cond_wait(&j.cond, &w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	pthread_cond_destroy(&j.cond);
	*waited_ns = j.started - j.queued;
	*ran_ns = j.ended - j.started;
	return j.msg;
}
