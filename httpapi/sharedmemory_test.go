package httpapi_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/sysshm"
)

func TestSharedMemoryDisabled(t *testing.T) {
	f := newFixture(t)
	const disabled = "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable."
	wantError(t, f.post("/v2/systemsharedmemory/region/r/register", `{"key":"/k","byte_size":4}`), 501, disabled)
	wantError(t, f.post("/v2/systemsharedmemory/region/r/unregister", ""), 501, disabled)
	wantError(t, f.post("/v2/systemsharedmemory/unregister", ""), 501, disabled)
	wantError(t, f.post("/v2/cudasharedmemory/region/r/register", `{}`), 501, disabled)
	wantError(t, f.post("/v2/cudasharedmemory/unregister", ""), 501, disabled)
	wantBody(t, f.get("/v2/systemsharedmemory/status"), `[]`)
	wantBody(t, f.get("/v2/cudasharedmemory/status"), `[]`)
	wantError(t, f.get("/v2/systemsharedmemory/region/r/status"), 404, "Unable to find system shared memory region: 'r'")
	wantError(t, f.get("/v2/cudasharedmemory/region/r/status"), 404, "Unable to find cuda shared memory region: 'r'")
}

// shmObject creates a POSIX shared-memory object of size bytes, removed
// when the test ends, and returns its key and path.
func shmObject(t *testing.T, size int) (string, string) {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() {
		t.Skipf("no /dev/shm: %v", err)
	}
	fh, err := os.CreateTemp("/dev/shm", "httpapi-test-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(fh.Name()) })
	defer fh.Close()
	if err := fh.Truncate(int64(size)); err != nil {
		t.Fatal(err)
	}
	return "/" + filepath.Base(fh.Name()), fh.Name()
}

func newSHMFixture(t *testing.T) *fixture {
	t.Helper()
	reg := sysshm.NewRegistry()
	t.Cleanup(func() { reg.Close() })
	return newFixture(t, httpapi.WithSharedMemory(reg))
}

func TestSharedMemoryRegistration(t *testing.T) {
	f := newSHMFixture(t)
	key, _ := shmObject(t, 64)
	for _, tc := range []struct {
		path, body string
		status     int
		parts      []string
	}{
		{"/v2/systemsharedmemory/register", `{"key":"` + key + `","byte_size":64}`, 400, []string{"'region name' is necessary to register system shared memory region"}},
		{"/v2/systemsharedmemory/region/r/register", `{"byte_size":64}`, 400, []string{"Shared memory register request has no 'key' field"}},
		{"/v2/systemsharedmemory/region/r/register", `{"key":"` + key + `"}`, 400, []string{"Shared memory register request has no 'byte_size' field"}},
		{"/v2/systemsharedmemory/region/r/register", `{"key":1,"byte_size":64}`, 400, []string{"Unable to parse 'key'"}},
		{"/v2/systemsharedmemory/region/r/register", `{"key":"` + key + `","byte_size":-1}`, 400, []string{"Unable to parse 'byte_size'"}},
		{"/v2/systemsharedmemory/region/r/register", `{"key":"` + key + `","offset":"0","byte_size":4}`, 400, []string{"Unable to parse 'offset'"}},
		{"/v2/systemsharedmemory/region/r/register", `{"key":`, 400, []string{"failed to parse the request JSON buffer"}},
		{"/v2/systemsharedmemory/region/r/register", ``, 400, []string{"The document is empty."}},
		{"/v2/systemsharedmemory/region/r/register", `{"key":"../../etc/passwd","byte_size":4}`, 400, []string{"invalid key"}},
		{"/v2/systemsharedmemory/region/r/register", `{"key":"/a/../../etc/passwd","byte_size":4}`, 400, []string{"invalid key"}},
		{"/v2/systemsharedmemory/region/r/register", `{"key":"/triton_python_backend_shm_region_1","byte_size":4}`, 400, []string{"reserved prefix"}},
		{"/v2/systemsharedmemory/region/r/register", `{"key":"/httpapi-test-does-not-exist","byte_size":4}`, 500, []string{"Unable to open shared memory region: '/httpapi-test-does-not-exist'"}},
		{"/v2/systemsharedmemory/region/r/register", `{"key":"` + key + `","offset":32,"byte_size":64}`, 400, []string{"failed to register shared memory region 'r': invalid args"}},
		{"/v2/cudasharedmemory/register", `{}`, 400, []string{"'region name' is necessary to register cuda shared memory region"}},
		{"/v2/cudasharedmemory/region/c/register", `{"raw_handle":{"b64":""},"device_id":0,"byte_size":4}`, 400, []string{"failed to register CUDA shared memory region: 'c', GPUs not supported"}},
	} {
		wantError(t, f.post(tc.path, tc.body), tc.status, tc.parts...)
	}
	wantBody(t, f.get("/v2/systemsharedmemory/status"), `[]`)

	rec := f.post("/v2/systemsharedmemory/region/r/register", `{"key":"`+key+`","offset":8,"byte_size":56}`)
	wantBody(t, rec, "")
	wantError(t, f.post("/v2/systemsharedmemory/region/r/register", `{"key":"`+key+`","byte_size":4}`), 400, "shared memory region 'r' already in manager")
	wantBody(t, f.post("/v2/systemsharedmemory/region/s/register", `{"key":"`+key+`","byte_size":8}`), "")
	status := fmt.Sprintf(`[{"name":"r","key":"%s","offset":8,"byte_size":56},{"name":"s","key":"%s","offset":0,"byte_size":8}]`, key, key)
	wantBody(t, f.get("/v2/systemsharedmemory/status"), status)
	wantBody(t, f.get("/v2/systemsharedmemory/region/s/status"), fmt.Sprintf(`[{"name":"s","key":"%s","offset":0,"byte_size":8}]`, key))
	wantError(t, f.get("/v2/systemsharedmemory/region/x/status"), 404, "Unable to find system shared memory region: 'x'")
	wantBody(t, f.get("/v2/cudasharedmemory/status"), `[]`)
	wantError(t, f.get("/v2/cudasharedmemory/region/r/status"), 404, "The region named 'r' is registered as system shared memory, not CUDA shared memory")
	if !strings.Contains(f.get("/v2").Body.String(), `"system_shared_memory","cuda_shared_memory"`) {
		t.Errorf("server metadata does not list system_shared_memory: %s", f.get("/v2").Body.String())
	}

	wantBody(t, f.post("/v2/systemsharedmemory/region/s/unregister", ""), "")
	wantBody(t, f.post("/v2/systemsharedmemory/region/s/unregister", ""), "") // unknown: success, as Triton
	wantBody(t, f.post("/v2/cudasharedmemory/region/r/unregister", ""), "")   // not a CUDA region: left alone
	wantBody(t, f.get("/v2/systemsharedmemory/status"), fmt.Sprintf(`[{"name":"r","key":"%s","offset":8,"byte_size":56}]`, key))
	wantBody(t, f.post("/v2/systemsharedmemory/unregister", ""), "")
	wantBody(t, f.get("/v2/systemsharedmemory/status"), `[]`)
}

func TestSharedMemoryInfer(t *testing.T) {
	f := newSHMFixture(t)
	key, path := shmObject(t, 64)
	// The client writes the input at offset 0 of the object.
	if err := os.WriteFile(path, append(le[int32](10, -20, 30, 40), make([]byte, 48)...), 0o600); err != nil {
		t.Fatal(err)
	}
	wantBody(t, f.post("/v2/systemsharedmemory/region/io/register", `{"key":"`+key+`","byte_size":64}`), "")

	input := `{"name":"INPUT0","shape":[1,4],"datatype":"INT32","parameters":{"shared_memory_region":"io","shared_memory_byte_size":16}}`
	output := func(offset, size int) string {
		return fmt.Sprintf(`{"name":"OUTPUT0","parameters":{"shared_memory_region":"io","shared_memory_offset":%d,"shared_memory_byte_size":%d}}`, offset, size)
	}
	rec := f.post(inferPath("id_INT32"), `{"inputs":[`+input+`],"outputs":[`+output(32, 16)+`]}`)
	wantBody(t, rec, `{"model_name":"id_INT32","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1,4]}]}`)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got[32:48]) != string(le[int32](10, -20, 30, 40)) {
		t.Errorf("output in shared memory: %v", got[32:48])
	}
	// Input in shared memory, output as JSON.
	rec = f.post(inferPath("id_INT32"), `{"inputs":[`+input+`]}`)
	wantBody(t, rec, `{"model_name":"id_INT32","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1,4],"data":[10,-20,30,40]}]}`)

	for _, tc := range []struct {
		body   string
		status int
		parts  []string
	}{
		{`{"inputs":[` + input + `],"outputs":[` + output(32, 8) + `]}`, 400, []string{"shared memory size specified with the request for output 'OUTPUT0' (8 bytes) should be at least 16 bytes to hold the results"}},
		{`{"inputs":[` + strings.Replace(input, `"io"`, `"nope"`, 1) + `]}`, 404, []string{"Unable to find shared memory region: 'nope'"}},
		{`{"inputs":[` + input + `],"outputs":[` + strings.Replace(output(0, 16), `"io"`, `"nope"`, 1) + `]}`, 404, []string{"Unable to find shared memory region: 'nope'"}},
		{`{"inputs":[` + input + `],"outputs":[` + output(56, 16) + `]}`, 400, []string{"Invalid offset + byte size for shared memory region: 'io'"}},
		{`{"inputs":[` + input + `],"outputs":[` + output(64, 0) + `]}`, 400, []string{"Invalid offset for shared memory region: 'io'"}},
		{`{"inputs":[` + strings.Replace(input, `"shared_memory_byte_size":16`, `"shared_memory_byte_size":18446744073709551615`, 1) + `]}`, 400, []string{"exceeds the maximum allowed value"}},
		{`{"inputs":[` + strings.Replace(input, `"shared_memory_byte_size":16`, `"shared_memory_byte_size":16,"shared_memory_offset":18446744073709551615`, 1) + `]}`, 400, []string{"Invalid offset for shared memory region: 'io'"}},
		{`{"inputs":[` + strings.Replace(input, `"shared_memory_byte_size":16`, `"shared_memory_byte_size":12`, 1) + `]}`, 400, []string{"input byte size mismatch"}},
		{`{"inputs":[` + strings.Replace(input, `"io"`, `7`, 1) + `]}`, 400, []string{"Unable to parse 'shared_memory_region'"}},
		{`{"inputs":[` + strings.Replace(input, `"shared_memory_byte_size":16`, `"shared_memory_offset":-1`, 1) + `]}`, 400, []string{"Unable to parse 'shared_memory_offset'"}},
	} {
		wantError(t, f.post(inferPath("id_INT32"), tc.body), tc.status, tc.parts...)
	}

	// Unregistering while nothing is in flight, then using it: not found.
	wantBody(t, f.post("/v2/systemsharedmemory/region/io/unregister", ""), "")
	wantError(t, f.post(inferPath("id_INT32"), `{"inputs":[`+input+`]}`), 404, "Unable to find shared memory region: 'io'")
}

func TestSharedMemoryInputLimit(t *testing.T) {
	reg := sysshm.NewRegistry()
	t.Cleanup(func() { reg.Close() })
	f := newFixture(t, httpapi.WithSharedMemory(reg), httpapi.WithMaxRequestSize(1024))
	key, _ := shmObject(t, 4096)
	wantBody(t, f.post("/v2/systemsharedmemory/region/big/register", `{"key":"`+key+`","byte_size":4096}`), "")
	wantError(t, f.post(inferPath("id_INT32"), `{"inputs":[{"name":"INPUT0","shape":[1,1024],"datatype":"INT32","parameters":{"shared_memory_region":"big","shared_memory_byte_size":4096}}]}`),
		400, "Input 'INPUT0' has a byte_size (4096 bytes) that exceeds the maximum allowed value of 1024 bytes")
}
