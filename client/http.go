package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/jsontext"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/sysshm"
)

// Interface guards.
var (
	_ Conn               = (*HTTP)(nil)
	_ Repository         = (*HTTP)(nil)
	_ SystemSharedMemory = (*HTTP)(nil)
)

// HTTP is a client of a server speaking Triton's HTTP/REST protocol
// (KServe v2 with Triton's extensions). Create it with [NewHTTP]; it is
// safe for concurrent use, and keeps a pool of keep-alive connections
// ([WithMaxIdleConnsPerHost]) that [HTTP.Close] closes.
type HTTP struct {
	base    string // scheme://host:port[/prefix], no trailing slash
	client  *http.Client
	tr      *http.Transport
	opts    options
	headers http.Header // WithHeader
	closed  atomic.Bool
}

// NewHTTP returns a client of the server at addr: "host:port" (as
// perf_analyzer's -u takes it), or a URL "http://host:port" or
// "https://host:port", optionally with a path prefix the server is
// mounted under. It does not connect: the first call does. Errors are
// InvalidArgument *triton.Error values for a malformed address or
// invalid options.
func NewHTTP(addr string, opts ...Option) (*HTTP, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if err := o.check(false); err != nil {
		return nil, localError(triton.InvalidArgument, about{}, err)
	}
	base, useTLS, err := baseURL(addr, o.tls != nil)
	if err != nil {
		return nil, localError(triton.InvalidArgument, about{}, err)
	}
	dialer := &net.Dialer{}
	if o.keepalive != nil {
		dialer.KeepAlive = o.keepalive.Time
	}
	tr := &http.Transport{
		DialContext:         dialer.DialContext,
		MaxIdleConns:        o.maxIdle,
		MaxIdleConnsPerHost: o.maxIdle,
		DisableKeepAlives:   o.maxIdle == 0,
		IdleConnTimeout:     90 * time.Second,
		// The client sets Accept-Encoding itself (WithCompression) and
		// decompresses what it asked for; net/http's transparent gzip
		// would make servers compress every large answer.
		DisableCompression: true,
		WriteBufferSize:    64 << 10,
		ReadBufferSize:     64 << 10,
	}
	if useTLS {
		tr.TLSClientConfig = o.tls
	}
	h := &HTTP{base: base, tr: tr, client: &http.Client{Transport: tr}, opts: o}
	if len(o.headers) > 0 {
		h.headers = http.Header{}
		for _, kv := range o.headers {
			h.headers.Add(kv[0], kv[1])
		}
	}
	return h, nil
}

// baseURL turns an address into the URL every path is appended to.
func baseURL(addr string, withTLS bool) (base string, useTLS bool, err error) {
	if !strings.Contains(addr, "://") {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return "", false, fmt.Errorf("address %q: want host:port or an http:// URL: %v", addr, err)
		}
		if withTLS {
			return "https://" + addr, true, nil
		}
		return "http://" + addr, false, nil
	}
	u, err := url.Parse(addr)
	if err != nil {
		return "", false, fmt.Errorf("address %q: %v", addr, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", false, fmt.Errorf("address %q: the scheme must be http or https", addr)
	case u.Host == "":
		return "", false, fmt.Errorf("address %q has no host", addr)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return "", false, fmt.Errorf("address %q: only scheme, host, port and path are allowed", addr)
	case withTLS && u.Scheme == "http":
		return "", false, fmt.Errorf("address %q: WithTLS needs an https:// URL (or host:port)", addr)
	}
	return u.Scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/"), u.Scheme == "https", nil
}

// Close closes the idle connections of the pool; calls made afterwards
// fail with Unavailable. Calls in flight finish, and their connections
// close when they do. Close is idempotent and returns nil.
func (h *HTTP) Close() error {
	h.closed.Store(true)
	h.tr.CloseIdleConnections()
	return nil
}

// release closes a response's body. A call that ends after Close would
// give its connection back to the pool, which Close has emptied already:
// it is closed instead, so that no connection (and none of net/http's
// goroutines) outlives Close.
func (h *HTTP) release(resp *http.Response) {
	_ = resp.Body.Close()
	if h.closed.Load() {
		h.tr.CloseIdleConnections()
	}
}

// modelPath is /v2/models/{m}[/versions/{v}] followed by suffix.
func modelPath(model string, version int64, suffix string) string {
	var b strings.Builder
	b.WriteString("/v2/models/")
	b.WriteString(url.PathEscape(model))
	if version > 0 {
		b.WriteString("/versions/")
		b.WriteString(strconv.FormatInt(version, 10))
	}
	b.WriteString(suffix)
	return b.String()
}

// roundTrip sends a request and returns the response, whatever its
// status. The caller closes the body.
func (h *HTTP) roundTrip(ctx context.Context, a about, method, path string, body io.Reader, size int64, hdr http.Header) (*http.Response, error) {
	if h.closed.Load() {
		return nil, localError(triton.Unavailable, a, errClosed)
	}
	r, err := http.NewRequestWithContext(ctx, method, h.base+path, body)
	if err != nil {
		return nil, localError(triton.InvalidArgument, a, err)
	}
	if body != nil {
		r.ContentLength = size
	}
	for k, vs := range hdr {
		r.Header[k] = vs
	}
	for k, vs := range h.headers {
		r.Header[k] = append(r.Header[k], vs...)
	}
	resp, err := h.client.Do(r)
	if err != nil {
		return nil, transportError(ctx, a, err)
	}
	return resp, nil
}

// call sends a request with a JSON (or no) body and returns the body of a
// 200 answer, or the error the server answered.
func (h *HTTP) call(ctx context.Context, a about, method, path string, body []byte) ([]byte, error) {
	var (
		rd  io.Reader
		hdr http.Header
	)
	if body != nil {
		rd = bytes.NewReader(body)
		hdr = http.Header{"Content-Type": {"application/json"}}
	}
	resp, err := h.roundTrip(ctx, a, method, path, rd, int64(len(body)), hdr)
	if err != nil {
		return nil, err
	}
	defer h.release(resp)
	if resp.StatusCode != http.StatusOK {
		return nil, h.statusError(ctx, a, resp)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, transportError(ctx, a, err)
	}
	return b, nil
}

// maxErrorBody bounds the error answer read.
const maxErrorBody = 1 << 20

// statusError reads an error answer: {"error":"<message>"} with a status.
func (h *HTTP) statusError(ctx context.Context, a about, resp *http.Response) error {
	body := io.Reader(resp.Body)
	switch resp.Header.Get("Content-Encoding") {
	case "gzip":
		if zr, err := gzip.NewReader(body); err == nil {
			body = zr
		}
	case "deflate":
		if zr, err := zlib.NewReader(body); err == nil {
			defer zr.Close()
			body = zr
		}
	}
	b, err := io.ReadAll(io.LimitReader(body, maxErrorBody))
	if err != nil && ctx.Err() != nil {
		return transportError(ctx, a, err)
	}
	msg := strings.TrimSpace(string(b))
	var e struct {
		Error *string `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != nil {
		msg = *e.Error
	} else if msg == "" {
		msg = resp.Status
	}
	return remoteError(codeOfHTTP(resp.StatusCode), a, msg)
}

// health asks a health endpoint: 200 is true, 400 (Triton's "false",
// with an empty body) and 404 (a model or version the server does not
// have) are false, another status is an error (503: a server shutting
// down).
func (h *HTTP) health(ctx context.Context, a about, path string) (bool, error) {
	resp, err := h.roundTrip(ctx, a, http.MethodGet, path, nil, 0, nil)
	if err != nil {
		return false, err
	}
	defer h.release(resp)
	switch resp.StatusCode {
	case http.StatusOK, http.StatusBadRequest, http.StatusNotFound:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return resp.StatusCode == http.StatusOK, nil
	}
	return false, h.statusError(ctx, a, resp)
}

// ServerLive reports GET /v2/health/live.
func (h *HTTP) ServerLive(ctx context.Context) (bool, error) {
	return h.health(ctx, about{}, "/v2/health/live")
}

// ServerReady reports GET /v2/health/ready.
func (h *HTTP) ServerReady(ctx context.Context) (bool, error) {
	return h.health(ctx, about{}, "/v2/health/ready")
}

// ModelReady reports GET /v2/models/{m}[/versions/{v}]/ready: false,
// without an error, for a model or version the server does not have too,
// as Triton's clients answer.
func (h *HTTP) ModelReady(ctx context.Context, model string, version int64) (bool, error) {
	return h.health(ctx, about{model: model, version: version}, modelPath(model, version, "/ready"))
}

// ServerMetadata returns GET /v2.
func (h *HTTP) ServerMetadata(ctx context.Context) (triton.ServerMetadata, error) {
	b, err := h.call(ctx, about{}, http.MethodGet, "/v2", nil)
	if err != nil {
		return triton.ServerMetadata{}, err
	}
	var md triton.ServerMetadata
	if err := json.Unmarshal(b, &struct {
		Name       *string   `json:"name"`
		Version    *string   `json:"version"`
		Extensions *[]string `json:"extensions"`
	}{&md.Name, &md.Version, &md.Extensions}); err != nil {
		return triton.ServerMetadata{}, badAnswer(about{}, "server metadata", err)
	}
	return md, nil
}

// badAnswer is an answer the client cannot read.
func badAnswer(a about, what string, err error) error {
	return localError(triton.Internal, a, fmt.Errorf("client: malformed %s from the server: %w", what, err))
}

// tensorMetadataJSON is an input or output of the model metadata.
type tensorMetadataJSON struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
}

func tensorMetadata(in []tensorMetadataJSON) []triton.TensorMetadata {
	out := make([]triton.TensorMetadata, len(in))
	for i, t := range in {
		out[i] = triton.TensorMetadata{Name: t.Name, DataType: t.Datatype, Shape: t.Shape}
	}
	return out
}

// ModelMetadata returns GET /v2/models/{m}[/versions/{v}].
func (h *HTTP) ModelMetadata(ctx context.Context, model string, version int64) (triton.ModelMetadata, error) {
	a := about{model: model, version: version}
	b, err := h.call(ctx, a, http.MethodGet, modelPath(model, version, ""), nil)
	if err != nil {
		return triton.ModelMetadata{}, err
	}
	var m struct {
		Name     string               `json:"name"`
		Versions []string             `json:"versions"`
		Platform string               `json:"platform"`
		Inputs   []tensorMetadataJSON `json:"inputs"`
		Outputs  []tensorMetadataJSON `json:"outputs"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return triton.ModelMetadata{}, badAnswer(a, "model metadata", err)
	}
	return triton.ModelMetadata{Name: m.Name, Versions: m.Versions, Platform: m.Platform,
		Inputs: tensorMetadata(m.Inputs), Outputs: tensorMetadata(m.Outputs)}, nil
}

// ModelConfig returns GET /v2/models/{m}[/versions/{v}]/config, read with
// protojson (unknown fields, which a newer server may send, are dropped).
func (h *HTTP) ModelConfig(ctx context.Context, model string, version int64) (*modelconfig.ModelConfig, error) {
	a := about{model: model, version: version}
	b, err := h.call(ctx, a, http.MethodGet, modelPath(model, version, "/config"), nil)
	if err != nil {
		return nil, err
	}
	cfg := &modelconfig.ModelConfig{}
	if len(bytes.TrimSpace(b)) == 0 {
		return cfg, nil // Triton answers an all-default config with an empty body
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, cfg); err != nil {
		return nil, badAnswer(a, "model configuration", err)
	}
	return cfg, nil
}

// durationJSON is the statistics extension's {"count":n,"ns":n}.
type durationJSON struct {
	Count uint64 `json:"count"`
	NS    uint64 `json:"ns"`
}

func (d durationJSON) stat() triton.StatDuration {
	return triton.StatDuration{Count: d.Count, Total: time.Duration(d.NS)}
}

// ModelStatistics returns GET /v2/models[/{m}[/versions/{v}]]/stats,
// converted to [triton.ModelStats]. The protocol carries the counts and
// durations, the batch and response statistics and the last inference
// (to the millisecond); the fields it does not carry (Failures, Pending,
// Queued, LoadTime, MetricTags, ResponseCache) are zero.
func (h *HTTP) ModelStatistics(ctx context.Context, model string, version int64) ([]triton.ModelStats, error) {
	a := about{model: model, version: version}
	path := "/v2/models/stats"
	if model != "" {
		path = modelPath(model, version, "/stats")
	}
	b, err := h.call(ctx, a, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	var st struct {
		ModelStats []struct {
			Name           string `json:"name"`
			Version        string `json:"version"`
			LastInference  uint64 `json:"last_inference"`
			InferenceCount uint64 `json:"inference_count"`
			ExecutionCount uint64 `json:"execution_count"`
			InferenceStats struct {
				Success       durationJSON `json:"success"`
				Fail          durationJSON `json:"fail"`
				Queue         durationJSON `json:"queue"`
				ComputeInput  durationJSON `json:"compute_input"`
				ComputeInfer  durationJSON `json:"compute_infer"`
				ComputeOutput durationJSON `json:"compute_output"`
				CacheHit      durationJSON `json:"cache_hit"`
				CacheMiss     durationJSON `json:"cache_miss"`
			} `json:"inference_stats"`
			BatchStats []struct {
				BatchSize     uint64       `json:"batch_size"`
				ComputeInput  durationJSON `json:"compute_input"`
				ComputeInfer  durationJSON `json:"compute_infer"`
				ComputeOutput durationJSON `json:"compute_output"`
			} `json:"batch_stats"`
			ResponseStats map[string]struct {
				ComputeInfer  durationJSON `json:"compute_infer"`
				ComputeOutput durationJSON `json:"compute_output"`
				Success       durationJSON `json:"success"`
				Fail          durationJSON `json:"fail"`
				EmptyResponse durationJSON `json:"empty_response"`
				Cancel        durationJSON `json:"cancel"`
			} `json:"response_stats"`
		} `json:"model_stats"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, badAnswer(a, "statistics", err)
	}
	out := make([]triton.ModelStats, 0, len(st.ModelStats))
	for _, m := range st.ModelStats {
		ver, _ := strconv.ParseInt(m.Version, 10, 64)
		is := m.InferenceStats
		s := triton.ModelStats{
			Name: m.Name, Version: ver, LastInference: lastInference(m.LastInference),
			InferenceCount: m.InferenceCount, ExecutionCount: m.ExecutionCount,
			Success: is.Success.stat(), Fail: is.Fail.stat(), Queue: is.Queue.stat(),
			ComputeInput: is.ComputeInput.stat(), ComputeInfer: is.ComputeInfer.stat(), ComputeOutput: is.ComputeOutput.stat(),
			CacheHit: is.CacheHit.stat(), CacheMiss: is.CacheMiss.stat(),
		}
		for _, bs := range m.BatchStats {
			s.Batches = append(s.Batches, triton.BatchStats{BatchSize: int64(bs.BatchSize),
				ComputeInput: bs.ComputeInput.stat(), ComputeInfer: bs.ComputeInfer.stat(), ComputeOutput: bs.ComputeOutput.stat()})
		}
		for k, rs := range m.ResponseStats {
			idx, err := strconv.Atoi(k)
			if err != nil {
				return nil, badAnswer(a, "statistics", fmt.Errorf("response_stats key %q is not an index", k))
			}
			s.Responses = append(s.Responses, triton.ResponseStats{Index: idx,
				Success: rs.Success.stat(), Fail: rs.Fail.stat(), EmptyResponse: rs.EmptyResponse.stat(), Cancel: rs.Cancel.stat(),
				ComputeInfer: rs.ComputeInfer.stat(), ComputeOutput: rs.ComputeOutput.stat()})
		}
		sortStats(&s)
		out = append(out, s)
	}
	return out, nil
}

// lastInference converts milliseconds since the epoch (0: none).
func lastInference(ms uint64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms))
}

// sortStats orders batch statistics by batch size and response
// statistics by index, as the server's own are.
func sortStats(s *triton.ModelStats) {
	slices.SortFunc(s.Batches, func(x, y triton.BatchStats) int { return cmp.Compare(x.BatchSize, y.BatchSize) })
	slices.SortFunc(s.Responses, func(x, y triton.ResponseStats) int { return cmp.Compare(x.Index, y.Index) })
}

// Load is POST /v2/repository/models/{m}/load: opts.Config as the
// "config" parameter, each of opts.Files as "file:<path>" in base64.
func (h *HTTP) Load(ctx context.Context, model string, opts *triton.LoadOptions) error {
	a := about{model: model}
	var body []byte
	if opts != nil && (opts.Config != "" || len(opts.Files) > 0) {
		body = append(body, `{"parameters":{`...)
		n := 0
		if opts.Config != "" {
			body = append(body, `"config":`...)
			body = jsontext.AppendString(body, opts.Config)
			n++
		}
		for _, path := range sortedKeys(opts.Files) {
			if n > 0 {
				body = append(body, ',')
			}
			body = jsontext.AppendString(body, "file:"+path)
			body = append(body, ':', '"')
			body = base64.StdEncoding.AppendEncode(body, opts.Files[path])
			body = append(body, '"')
			n++
		}
		body = append(body, "}}"...)
	}
	_, err := h.call(ctx, a, http.MethodPost, "/v2/repository/models/"+url.PathEscape(model)+"/load", body)
	return err
}

// Unload is POST /v2/repository/models/{m}/unload.
func (h *HTTP) Unload(ctx context.Context, model string, opts *triton.UnloadOptions) error {
	var body []byte
	if opts != nil && opts.Dependents {
		body = []byte(`{"parameters":{"unload_dependents":true}}`)
	}
	_, err := h.call(ctx, about{model: model}, http.MethodPost, "/v2/repository/models/"+url.PathEscape(model)+"/unload", body)
	return err
}

// Index is POST /v2/repository/index.
func (h *HTTP) Index(ctx context.Context) ([]triton.ModelState, error) {
	b, err := h.call(ctx, about{}, http.MethodPost, "/v2/repository/index", []byte("{}"))
	if err != nil {
		return nil, err
	}
	var rows []struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		State   string `json:"state"`
		Reason  string `json:"reason"`
	}
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, badAnswer(about{}, "repository index", err)
	}
	out := make([]triton.ModelState, len(rows))
	for i, r := range rows {
		ver, _ := strconv.ParseInt(r.Version, 10, 64)
		out[i] = triton.ModelState{Name: r.Name, Version: ver, State: r.State, Reason: r.Reason}
	}
	return out, nil
}

// RegisterSystemSharedMemory is POST
// /v2/systemsharedmemory/region/{name}/register.
func (h *HTTP) RegisterSystemSharedMemory(ctx context.Context, name, key string, offset, size uint64) error {
	b := append([]byte(`{"key":`), jsontext.AppendString(nil, key)...)
	b = append(b, `,"offset":`...)
	b = strconv.AppendUint(b, offset, 10)
	b = append(b, `,"byte_size":`...)
	b = strconv.AppendUint(b, size, 10)
	b = append(b, '}')
	_, err := h.call(ctx, about{}, http.MethodPost, "/v2/systemsharedmemory/region/"+url.PathEscape(name)+"/register", b)
	return err
}

// UnregisterSystemSharedMemory is POST
// /v2/systemsharedmemory[/region/{name}]/unregister.
func (h *HTTP) UnregisterSystemSharedMemory(ctx context.Context, name string) error {
	_, err := h.call(ctx, about{}, http.MethodPost, shmPath(name, "unregister"), nil)
	return err
}

// SystemSharedMemoryStatus is GET
// /v2/systemsharedmemory[/region/{name}]/status.
func (h *HTTP) SystemSharedMemoryStatus(ctx context.Context, name string) ([]sysshm.Region, error) {
	b, err := h.call(ctx, about{}, http.MethodGet, shmPath(name, "status"), nil)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		Name     string `json:"name"`
		Key      string `json:"key"`
		Offset   uint64 `json:"offset"`
		ByteSize uint64 `json:"byte_size"`
	}
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, badAnswer(about{}, "shared-memory status", err)
	}
	out := make([]sysshm.Region, len(rows))
	for i, r := range rows {
		out[i] = sysshm.Region{Name: r.Name, Key: r.Key, Offset: r.Offset, ByteSize: r.ByteSize}
	}
	slices.SortFunc(out, func(x, y sysshm.Region) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}

func shmPath(name, action string) string {
	if name == "" {
		return "/v2/systemsharedmemory/" + action
	}
	return "/v2/systemsharedmemory/region/" + url.PathEscape(name) + "/" + action
}

// InferStream runs req as [HTTP.Infer] does and yields its one response,
// with Final set: Triton's HTTP protocol answers a request once. A
// decoupled model fails with Unsupported (the server refuses it on the
// infer endpoint; the generate_stream endpoint is another protocol): use
// [NewGRPC] or [Local] to stream its responses.
func (h *HTTP) InferStream(ctx context.Context, req *triton.InferRequest) iter.Seq2[*triton.InferResponse, error] {
	return func(yield func(*triton.InferResponse, error) bool) {
		resp, err := h.Infer(ctx, req)
		if err != nil {
			if e, ok := err.(*triton.Error); ok && e.Code == triton.Unsupported && strings.Contains(e.Err.Error(), "decoupled") {
				e.Err = fmt.Errorf("%w (HTTP cannot stream a decoupled model's responses: use the gRPC client)", e.Err)
			}
			yield(nil, err)
			return
		}
		resp.Final = true
		yield(resp, nil)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
