// torchshim.cc implements the C ABI of torchshim.h over libtorch's C++ API
// (TorchScript on the CPU). Every entry point catches every exception and
// returns it as a message: nothing a model file or a model does may crash
// the Go process that loaded the shim. A c10::Error is reported without
// its C++ backtrace (what_without_backtrace), which names addresses rather
// than the problem; other exceptions, such as a TorchScript raise, with
// their what().

#include "torchshim.h"

#include <ATen/Parallel.h>
#include <torch/csrc/api/include/torch/version.h>
#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace {

std::atomic<size_t> live{0};

// intraThreads is the count of the last successful tshim_set_intra_threads
// (0: none); threadIntra the count applied to this thread.
std::atomic<int> intraThreads{0};
thread_local int threadIntra = 0;

// lastOptimize is getGraphExecutorOptimize() on the thread of the most
// recent forward, read as it returned (-1: no forward yet).
std::atomic<int> lastOptimize{-1};

// oom is the message when there is no memory for one; never freed.
char oom[] = "torchshim: out of memory";

// msg returns s in malloc'd memory, the shim's message convention.
char *msg(const std::string &s) {
	char *p = static_cast<char *>(std::malloc(s.size() + 1));
	if (p == nullptr) {
		return oom;
	}
	std::memcpy(p, s.data(), s.size());
	p[s.size()] = '\0';
	return p;
}

const char kExecFailure[] = "PyTorch execute failure: ";

// guarded runs f, which returns nullptr or a message, and turns whatever it
// throws into a message: prefix, then libtorch's text (without its C++
// backtrace), the exception's, or "unknown exception" and doing. No
// exception crosses the C ABI.
template <typename F> char *guarded(const std::string &prefix, const char *doing, F &&f) {
	try {
		return f();
	} catch (const c10::Error &e) {
		return msg(prefix + e.what_without_backtrace());
	} catch (const std::exception &e) {
		return msg(prefix + e.what());
	} catch (...) {
		return msg(prefix + "unknown exception" + doing);
	}
}

const char kBadOutput[] =
	"output must be of type Tensor, List[str] or Tuple containing one of these two types. It should not be a List / "
	"Dictionary of Tensors or a Scalar";

// scalarType maps a TSHIM_* data type to libtorch's; false for one it lacks.
bool scalarType(int dtype, c10::ScalarType *t) {
	switch (dtype) {
	case TSHIM_BOOL: *t = c10::kBool; return true;
	case TSHIM_UINT8: *t = c10::kByte; return true;
	case TSHIM_INT8: *t = c10::kChar; return true;
	case TSHIM_INT16: *t = c10::kShort; return true;
	case TSHIM_INT32: *t = c10::kInt; return true;
	case TSHIM_INT64: *t = c10::kLong; return true;
	case TSHIM_FP16: *t = c10::kHalf; return true;
	case TSHIM_FP32: *t = c10::kFloat; return true;
	case TSHIM_FP64: *t = c10::kDouble; return true;
	case TSHIM_BF16: *t = c10::kBFloat16; return true;
	default: return false;
	}
}

// dataType maps libtorch's type to TSHIM_*, 0 for one Triton lacks.
int dataType(c10::ScalarType t) {
	switch (t) {
	case c10::kBool: return TSHIM_BOOL;
	case c10::kByte: return TSHIM_UINT8;
	case c10::kChar: return TSHIM_INT8;
	case c10::kShort: return TSHIM_INT16;
	case c10::kInt: return TSHIM_INT32;
	case c10::kLong: return TSHIM_INT64;
	case c10::kHalf: return TSHIM_FP16;
	case c10::kFloat: return TSHIM_FP32;
	case c10::kDouble: return TSHIM_FP64;
	case c10::kBFloat16: return TSHIM_BF16;
	default: return 0;
	}
}

// typeName spells an argument type as torchshim.h documents.
std::string typeName(const c10::TypePtr &t) {
	if (t->kind() == c10::TypeKind::DictType) {
		return t->str(); // "Dict(str, Tensor)", as Triton's messages print it
	}
	return t->annotation_str();
}

// guards holds the autograd guards of a load or forward.
struct Guards {
	std::optional<c10::InferenceMode> inference;
	std::optional<torch::NoGradGuard> no_grad;
	explicit Guards(bool inference_mode) {
		if (inference_mode) {
			inference.emplace(true);
		} else {
			no_grad.emplace();
		}
	}
};

struct Output {
	int dtype = 0;
	at::Tensor tensor;                // contiguous, on the CPU
	std::vector<std::string> strings; // TSHIM_STRINGS
	size_t size = 0;                  // strings: total bytes
};

} // namespace

struct tshim_module {
	torch::jit::Module module;
	tshim_options opts{};
	std::vector<std::string> names;
	std::vector<std::string> types;
	std::vector<std::string> printed; // types as str() prints them (tshim_arg_printed)
	std::vector<bool> copied; // per argument: forward writes or keeps it, so it gets a copy (writtenOrKept)
	bool training = false;    // the module was saved in training mode
	int64_t state_bytes = -1; // tshim_module_state_bytes
};

struct tshim_outputs {
	std::vector<Output> outs;
};

namespace {

// addTensor appends tensor output t (index i of the result, for messages).
void addTensor(tshim_outputs *o, at::Tensor t, size_t i) {
	if (!t.defined()) {
		throw std::runtime_error("output at index " + std::to_string(i) + " is an undefined tensor");
	}
	if (t.is_nested()) {
		throw std::runtime_error("output at index " + std::to_string(i) + " is a nested tensor, which Triton has no shape for");
	}
	if (t.layout() != c10::kStrided) {
		t = t.to_dense();
	}
	if (!t.device().is_cpu()) {
		t = t.cpu();
	}
	int dt = dataType(t.scalar_type());
	if (dt == 0) {
		throw std::runtime_error("output at index " + std::to_string(i) + " has data type " +
			std::string(c10::toString(t.scalar_type())) + ", which Triton has no data type for");
	}
	Output out;
	out.dtype = dt;
	out.tensor = t.contiguous();
	o->outs.push_back(std::move(out));
}

// addStrings appends List[str] output l.
void addStrings(tshim_outputs *o, const c10::List<c10::IValue> &l) {
	Output out;
	out.dtype = TSHIM_STRINGS;
	out.strings.reserve(l.size());
	for (size_t k = 0; k < l.size(); k++) {
		out.strings.push_back(l.get(k).toStringRef());
		out.size += out.strings.back().size();
	}
	o->outs.push_back(std::move(out));
}

bool isStringList(const c10::IValue &v) {
	return v.isList() && v.toList().elementType()->kind() == c10::TypeKind::StringType;
}

// flatten turns forward's result into outputs, as Triton's backend takes
// them: a Tensor, a List[str], or a Tuple of those.
void flatten(const c10::IValue &r, tshim_outputs *o) {
	if (r.isTensor()) {
		addTensor(o, r.toTensor(), 0);
		return;
	}
	if (isStringList(r)) {
		addStrings(o, r.toList());
		return;
	}
	if (r.isList()) {
		throw std::runtime_error("output must be of type Tensor or List[str], received List[" +
			r.toList().elementType()->str() + "]");
	}
	if (!r.isTuple()) {
		throw std::runtime_error(kBadOutput);
	}
	const auto &elems = r.toTupleRef().elements();
	o->outs.reserve(elems.size());
	for (size_t i = 0; i < elems.size(); i++) {
		const c10::IValue &e = elems[i];
		if (e.isTensor()) {
			addTensor(o, e.toTensor(), i);
		} else if (isStringList(e)) {
			addStrings(o, e.toList());
		} else if (e.isList()) {
			throw std::runtime_error("output at index " + std::to_string(i) +
				" must be of type Tensor or List[str], received List[" + e.toList().elementType()->str() + "]");
		} else {
			throw std::runtime_error("output at index " + std::to_string(i) +
				" must be of type Tensor or List[str], received " + e.type()->str());
		}
	}
}

// allNodes appends the nodes of block b and of the blocks inside them.
void allNodes(torch::jit::Block *b, std::vector<torch::jit::Node *> *out) {
	for (torch::jit::Node *n : b->nodes()) {
		out->push_back(n);
		for (torch::jit::Block *sub : n->blocks()) {
			allNodes(sub, out);
		}
	}
}

// writtenOrKept reports, for each argument of forward (self excluded),
// whether forward may write into its memory (an in-place op on it, a view
// or an element of it) or keep it past the call (stored in the module's
// state: an attribute set to it, a container of the module's holding it).
// Such an argument gets a copy before each forward: the memory behind the
// others is the caller's, borrowed for the call, and reused once it
// returns. TorchScript's alias analysis answers conservatively: a false
// "yes" costs a copy, never a wrong answer.
std::vector<bool> writtenOrKept(torch::jit::Module &module) {
	std::shared_ptr<torch::jit::Graph> graph = module.get_method("forward").graph()->copy();
	torch::jit::Inline(*graph);
	// As a frozen module's: the module's attributes are its own, never the
	// caller's memory, so a write to one (a BatchNorm's counter) is not
	// one to an argument.
	torch::jit::AliasDb db(graph, /*isFrozen=*/true);
	std::vector<torch::jit::Node *> nodes;
	allNodes(graph->block(), &nodes);
	std::vector<bool> out;
	const auto inputs = graph->inputs();
	for (size_t i = 1; i < inputs.size(); i++) { // 0 is self
		torch::jit::Value *v = inputs[i];
		bool bad = false;
		for (torch::jit::Node *n : nodes) {
			if (bad) {
				break;
			}
			if (n->kind() == c10::prim::SetAttr && db.mayContainAlias(n->inputs()[1], v)) {
				bad = true; // self.x = v
				break;
			}
			bool holdsV = false; // an input of n may be or contain v
			for (torch::jit::Value *u : n->inputs()) {
				holdsV = holdsV || db.mayContainAlias(u, v);
			}
			if (!holdsV) {
				continue;
			}
			if (n->hasAttribute(c10::attr::Subgraph)) {
				bad = true; // a graph the analysis does not look into (torch.jit.fork's) takes v
				break;
			}
			for (torch::jit::Value *u : n->inputs()) {
				// v (or a view or element of it) written in place, or a
				// container written that holds v then (self.kept.append(v));
				// not self.buf.copy_(v), which only reads v
				if (db.writesToAlias(n, {u}) && db.mayContainAlias(u, v)) {
					bad = true;
					break;
				}
			}
		}
		out.push_back(bad);
	}
	return out;
}

// stateBytes sums the bytes of module's parameters and buffers, its
// submodules' included, counting each storage once: tied weights share
// one, and a storage is the memory held (a tensor may view part of it).
int64_t stateBytes(const torch::jit::Module &module) {
	std::unordered_set<const c10::StorageImpl *> seen;
	int64_t n = 0;
	auto add = [&](const at::Tensor &t) {
		if (!t.defined()) {
			return;
		}
		if (!t.has_storage()) {
			n += static_cast<int64_t>(t.numel()) * static_cast<int64_t>(t.element_size());
			return;
		}
		if (seen.insert(t.storage().unsafeGetStorageImpl()).second) {
			n += static_cast<int64_t>(t.storage().nbytes());
		}
	};
	for (const auto &p : module.named_parameters(/*recurse=*/true)) {
		add(p.value);
	}
	for (const auto &b : module.named_buffers(/*recurse=*/true)) {
		add(b.value);
	}
	return n;
}

// tensorInput wraps input v (of index i) without a copy.
at::Tensor tensorInput(const tshim_value &v, size_t i) {
	c10::ScalarType st;
	if (!scalarType(v.dtype, &st)) {
		throw std::runtime_error("input " + std::to_string(i) + ": data type " + std::to_string(v.dtype) +
			" has no libtorch type");
	}
	c10::IntArrayRef shape(v.shape, v.rank);
	if (v.size == 0 || v.data == nullptr) {
		return torch::zeros(shape, torch::TensorOptions().dtype(st));
	}
	return torch::from_blob(const_cast<void *>(v.data), shape, torch::TensorOptions().dtype(st));
}

c10::List<std::string> stringsInput(const tshim_value &v) {
	c10::List<std::string> l;
	size_t n = v.rank == 1 ? static_cast<size_t>(v.shape[0]) : 0;
	l.reserve(n);
	const char *p = static_cast<const char *>(v.data);
	for (size_t k = 0; k < n; k++) {
		l.push_back(std::string(p, v.lens[k]));
		p += v.lens[k];
	}
	return l;
}

// syncThreads applies the intra-op count set by tshim_set_intra_threads
// to the calling thread. at::set_num_threads sets OpenMP's count of the
// thread that calls it (and the count later threads start with); a thread
// that ran parallel work before keeps its own, so each thread that runs a
// forward takes the process's count once after every change.
void syncThreads() {
	int n = intraThreads.load(std::memory_order_relaxed);
	if (n > 0 && threadIntra != n) {
		at::set_num_threads(n);
		threadIntra = n;
	}
}

void applyOptions(const tshim_options &o) {
	syncThreads();
	torch::jit::setGraphExecutorOptimize(o.disable_optimized_execution == 0);
	if (o.jit_executor != TSHIM_UNSET) {
		torch::jit::getExecutorMode() = o.jit_executor == TSHIM_TRUE;
	}
	if (o.jit_profiling != TSHIM_UNSET) {
		torch::jit::getProfilingMode() = o.jit_profiling == TSHIM_TRUE;
	}
	if (o.tensor_fuser != TSHIM_UNSET) {
		torch::jit::setTensorExprFuserEnabled(o.tensor_fuser == TSHIM_TRUE);
	}
}

} // namespace

extern "C" {

void tshim_free_msg(char *m) {
	if (m != nullptr && m != oom) {
		std::free(m);
	}
}

const char *tshim_version(void) {
	return TORCH_VERSION;
}

char *tshim_load(const char *path, const tshim_options *opts, tshim_module **out) {
	*out = nullptr;
	return guarded("", " loading a TorchScript module", [&]() -> char * {
		auto m = std::make_unique<tshim_module>();
		m->opts = *opts;
		{
			Guards g(opts->inference_mode != 0);
			m->module = torch::jit::load(path, torch::kCPU); // as saved: Triton calls no eval()
		}
		m->training = m->module.is_training();
		try {
			m->state_bytes = stateBytes(m->module);
		} catch (...) {
			m->state_bytes = -1; // unknown; the module still serves
		}
		const auto &args = m->module.get_method("forward").function().getSchema().arguments();
		for (size_t i = 0; i < args.size(); i++) {
			if (i == 0 && args[i].type()->kind() == c10::TypeKind::ClassType) {
				continue; // self
			}
			m->names.push_back(args[i].name());
			m->types.push_back(typeName(args[i].type()));
			m->printed.push_back(args[i].type()->str());
		}
		try {
			m->copied = writtenOrKept(m->module);
		} catch (...) {
			m->copied.assign(m->names.size(), true); // no answer: copy every argument
		}
		m->copied.resize(m->names.size()); // the schema and the graph agree; never read past either
		for (size_t i = 0; i < m->names.size(); i++) {
			if (m->types[i] == "List[str]") {
				m->copied[i] = false; // made afresh for every forward anyway
			}
		}
		*out = m.release();
		live++;
		return nullptr;
	});
}

void tshim_module_free(tshim_module *m) {
	if (m == nullptr) {
		return;
	}
	delete m; // destructors are noexcept: nothing to catch
	live--;
}

int tshim_module_training(const tshim_module *m) {
	return m->training ? 1 : 0;
}

int64_t tshim_module_state_bytes(const tshim_module *m) {
	return m->state_bytes;
}

size_t tshim_num_args(const tshim_module *m) {
	return m->names.size();
}

const char *tshim_arg_name(const tshim_module *m, size_t i) {
	return i < m->names.size() ? m->names[i].c_str() : "";
}

const char *tshim_arg_type(const tshim_module *m, size_t i) {
	return i < m->types.size() ? m->types[i].c_str() : "";
}

const char *tshim_arg_printed(const tshim_module *m, size_t i) {
	return i < m->printed.size() ? m->printed[i].c_str() : "";
}

int tshim_arg_copied(const tshim_module *m, size_t i) {
	return i < m->copied.size() && m->copied[i] ? 1 : 0;
}

char *tshim_forward(tshim_module *m, const tshim_value *in, size_t n, int dict, tshim_outputs **out, size_t *n_out) {
	*out = nullptr;
	*n_out = 0;
	return guarded(kExecFailure, "", [&]() -> char * {
		Guards g(m->opts.inference_mode != 0);
		std::vector<c10::IValue> args;
		if (dict != 0) {
			const bool copy = !m->copied.empty() && m->copied[0];
			c10::Dict<std::string, at::Tensor> d;
			for (size_t i = 0; i < n; i++) {
				at::Tensor t = tensorInput(in[i], i);
				d.insert(std::string(in[i].key, in[i].key_len), copy ? t.clone() : t);
			}
			args.emplace_back(std::move(d));
		} else {
			args.reserve(n);
			for (size_t i = 0; i < n; i++) {
				if (in[i].dtype == TSHIM_STRINGS) {
					args.emplace_back(stringsInput(in[i]));
				} else if (i < m->copied.size() && m->copied[i]) {
					args.emplace_back(tensorInput(in[i], i).clone());
				} else {
					args.emplace_back(tensorInput(in[i], i));
				}
			}
		}
		applyOptions(m->opts);
		c10::IValue r = m->module.forward(std::move(args));
		lastOptimize.store(torch::jit::getGraphExecutorOptimize() ? 1 : 0);
		auto o = std::make_unique<tshim_outputs>();
		flatten(r, o.get());
		*n_out = o->outs.size();
		*out = o.release();
		live++;
		return nullptr;
	});
}

void tshim_outputs_describe(const tshim_outputs *o, tshim_output_info *infos) {
	for (size_t i = 0; i < o->outs.size(); i++) {
		const Output &out = o->outs[i];
		tshim_output_info &info = infos[i];
		info.dtype = out.dtype;
		if (out.dtype == TSHIM_STRINGS) {
			info.rank = 1;
			info.count = out.strings.size();
			info.size = out.size;
		} else {
			info.rank = static_cast<size_t>(out.tensor.dim());
			info.count = static_cast<size_t>(out.tensor.numel());
			info.size = out.tensor.nbytes();
		}
	}
}

void tshim_output_copy(const tshim_outputs *o, size_t i, int64_t *dims, void *data, size_t *lens) {
	const Output &out = o->outs[i];
	if (out.dtype == TSHIM_STRINGS) {
		if (dims != nullptr) {
			dims[0] = static_cast<int64_t>(out.strings.size());
		}
		char *p = static_cast<char *>(data);
		for (size_t k = 0; k < out.strings.size(); k++) {
			const std::string &s = out.strings[k];
			if (lens != nullptr) {
				lens[k] = s.size();
			}
			if (p != nullptr && !s.empty()) {
				std::memcpy(p, s.data(), s.size());
				p += s.size();
			}
		}
		return;
	}
	const at::Tensor &t = out.tensor;
	if (dims != nullptr) {
		for (int64_t d = 0; d < t.dim(); d++) {
			dims[d] = t.size(d);
		}
	}
	size_t size = t.nbytes();
	if (data != nullptr && size > 0) {
		std::memcpy(data, t.data_ptr(), size);
	}
}

void tshim_outputs_free(tshim_outputs *o) {
	if (o == nullptr) {
		return;
	}
	delete o;
	live--;
}

char *tshim_set_intra_threads(int n) {
	return guarded("", " setting the intra-op thread count", [&]() -> char * {
		at::set_num_threads(n);
		intraThreads.store(n, std::memory_order_relaxed);
		threadIntra = n;
		return nullptr;
	});
}

char *tshim_set_interop_threads(int n) {
	return guarded("", " setting the inter-op thread count", [&]() -> char * {
		at::set_num_interop_threads(n);
		return nullptr;
	});
}

char *tshim_get_settings(tshim_settings *out) {
	*out = tshim_settings{};
	return guarded("", " reading libtorch's settings", [&]() -> char * {
		syncThreads();
		int opt = lastOptimize.load();
		out->graph_executor_optimize = opt >= 0 ? opt : torch::jit::getGraphExecutorOptimize() ? 1 : 0;
		out->executor_mode = torch::jit::getExecutorMode().load() ? 1 : 0;
		out->profiling_mode = torch::jit::getProfilingMode().load() ? 1 : 0;
		out->tensor_fuser = torch::jit::tensorExprFuserEnabled() ? 1 : 0;
		out->intra_threads = at::get_num_threads();
		out->interop_threads = at::get_num_interop_threads();
		return nullptr;
	});
}

size_t tshim_live(void) {
	return live.load();
}

} // extern "C"
