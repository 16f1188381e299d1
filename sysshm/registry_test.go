//go:build linux

package sysshm_test

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/triton-go/triton/sysshm"
)

func TestRegisterReadWrite(t *testing.T) {
	key, f := newObject(t, 4096)
	r := newRegistry(t)
	if err := r.Register("r", key, 0, 4096); err != nil {
		t.Fatal(err)
	}
	data := mustUse(t, r, "r", 0, 4096)
	if len(data) != 4096 || cap(data) != 4096 {
		t.Fatalf("len, cap = %d, %d, want 4096, 4096", len(data), cap(data))
	}

	t.Run("file to mapping", func(t *testing.T) {
		equal(t, "initial contents", data[:16], pattern(0, 16))
		if _, err := f.WriteAt([]byte("written by the client"), 100); err != nil {
			t.Fatal(err)
		}
		equal(t, "data[100:121]", data[100:121], []byte("written by the client"))
	})
	t.Run("mapping to file", func(t *testing.T) {
		copy(data[4000:], "written by the server")
		equal(t, "file[4000:4021]", readAt(t, f, 4000, 21), []byte("written by the server"))
	})
	t.Run("two uses share memory", func(t *testing.T) {
		other := mustUse(t, r, "r", 4000, 21)
		equal(t, "second view", other, []byte("written by the server"))
		other[0] = 'W'
		if data[4000] != 'W' {
			t.Errorf("write through one view not seen through the other")
		}
	})
	t.Run("append does not spill", func(t *testing.T) {
		v := mustUse(t, r, "r", 0, 8)
		if cap(v) != 8 {
			t.Fatalf("cap = %d, want 8", cap(v))
		}
		_ = append(v, 0xFF)
		if data[8] == 0xFF && pattern(8, 1)[0] != 0xFF {
			t.Errorf("append wrote past the view into the region")
		}
	})
}

func TestOffsets(t *testing.T) {
	page := os.Getpagesize()
	objSize := 6 * page
	key, f := newObject(t, objSize)
	for _, tc := range []struct {
		name             string
		offset, byteSize int // registered range
		useOff, useSize  int // Use range, relative to the region
	}{
		{"whole object", 0, objSize, 0, objSize},
		{"offset 1", 1, 100, 0, 100},
		{"offset 1 use inside", 1, 100, 37, 50},
		{"last byte of first page", page - 1, 2, 0, 2},
		{"page aligned", page, page, 0, page},
		{"page plus one", page + 1, page, page - 10, 10},
		{"unaligned spanning pages", 2*page + 123, 2*page + 7, page - 3, 9},
		{"ends at object end", objSize - 10, 10, 5, 5},
		{"single byte", 3*page + 77, 1, 0, 1},
		{"zero-size use", 10, 10, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegistry(t)
			if err := r.Register("r", key, uint64(tc.offset), uint64(tc.byteSize)); err != nil {
				t.Fatal(err)
			}
			data := mustUse(t, r, "r", uint64(tc.useOff), uint64(tc.useSize))
			abs := tc.offset + tc.useOff
			if len(data) != tc.useSize {
				t.Fatalf("len = %d, want %d", len(data), tc.useSize)
			}
			// The object may have been written by earlier cases: compare with the file.
			equal(t, "data", data, readAt(t, f, abs, tc.useSize))
			if tc.useSize == 0 {
				return
			}
			want := make([]byte, tc.useSize)
			for i := range want {
				want[i] = byte(len(tc.name) + i)
			}
			copy(data, want)
			equal(t, "file after write", readAt(t, f, abs, tc.useSize), want)
			back := slices.Clone(want)
			slices.Reverse(back)
			if _, err := f.WriteAt(back, int64(abs)); err != nil {
				t.Fatal(err)
			}
			equal(t, "data after file write", data, back)
		})
	}
}

func TestSameObjectTwoRegions(t *testing.T) {
	key, _ := newObject(t, 8192)
	r := newRegistry(t)
	if err := r.Register("a", key, 0, 8192); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("b", key, 4000, 200); err != nil {
		t.Fatal(err)
	}
	a := mustUse(t, r, "a", 4050, 1)
	b := mustUse(t, r, "b", 50, 1)
	a[0] = 42
	if b[0] != 42 {
		t.Errorf("regions over the same bytes of one object disagree: %d != 42", b[0])
	}
}

func TestStatus(t *testing.T) {
	key, _ := newObject(t, 4096)
	r := newRegistry(t)

	all, err := r.Status("")
	if err != nil || all == nil || len(all) != 0 {
		t.Fatalf("Status(\"\") on an empty registry = %#v, %v; want an empty non-nil slice", all, err)
	}
	for _, name := range []string{"c", "a", "b"} {
		if err := r.Register(name, key, uint64(name[0]), 10); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("all", func(t *testing.T) {
		got, err := r.Status("")
		if err != nil {
			t.Fatal(err)
		}
		want := []sysshm.Region{
			{Name: "a", Key: key, Offset: 'a', ByteSize: 10},
			{Name: "b", Key: key, Offset: 'b', ByteSize: 10},
			{Name: "c", Key: key, Offset: 'c', ByteSize: 10},
		}
		if !slices.Equal(got, want) {
			t.Errorf("Status(\"\") = %v, want %v", got, want)
		}
		got[0].Name = "mutated"
		if again, _ := r.Status("a"); again[0].Name != "a" {
			t.Errorf("Status result aliases the registry")
		}
	})
	t.Run("one", func(t *testing.T) {
		got, err := r.Status("b")
		if err != nil {
			t.Fatal(err)
		}
		if want := []sysshm.Region{{Name: "b", Key: key, Offset: 'b', ByteSize: 10}}; !slices.Equal(got, want) {
			t.Errorf("Status(\"b\") = %v, want %v", got, want)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		got, err := r.Status("zz")
		if got != nil {
			t.Errorf("Status(\"zz\") = %v, want nil", got)
		}
		wantErr(t, err, sysshm.ErrNotFound, "Unable to find shared memory region: 'zz'")
	})
}

func TestUnregister(t *testing.T) {
	key, f := newObject(t, 4096)
	r := newRegistry(t)
	if err := r.Register("r", key, 0, 4096); err != nil {
		t.Fatal(err)
	}
	if !mapped(t, path(key)) {
		t.Fatalf("%s not in /proc/self/maps after Register", path(key))
	}
	if err := r.Unregister("r"); err != nil {
		t.Fatal(err)
	}
	if mapped(t, path(key)) {
		t.Errorf("%s still mapped after Unregister", path(key))
	}
	if _, err := r.Status("r"); !errors.Is(err, sysshm.ErrNotFound) {
		t.Errorf("Status after Unregister: %v, want ErrNotFound", err)
	}
	_, _, err := r.Use("r", 0, 1)
	wantErr(t, err, sysshm.ErrNotFound, "Unable to find shared memory region: 'r'")
	wantErr(t, r.Unregister("r"), sysshm.ErrNotFound, "Unable to find shared memory region: 'r'")

	// The name is free again, and may now name other memory.
	if err := r.Register("r", key, 100, 10); err != nil {
		t.Fatal(err)
	}
	equal(t, "re-registered", mustUse(t, r, "r", 0, 10), readAt(t, f, 100, 10))
}

func TestUnregisterAll(t *testing.T) {
	key, _ := newObject(t, 4096)
	r := newRegistry(t)
	if err := r.UnregisterAll(); err != nil {
		t.Fatalf("UnregisterAll on an empty registry: %v", err)
	}
	for i := range 5 {
		if err := r.Register(fmt.Sprint("r", i), key, uint64(i), 10); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.UnregisterAll(); err != nil {
		t.Fatal(err)
	}
	if all, _ := r.Status(""); len(all) != 0 {
		t.Errorf("Status after UnregisterAll = %v, want none", all)
	}
	if mapped(t, path(key)) {
		t.Errorf("%s still mapped after UnregisterAll", path(key))
	}
	if err := r.Register("r0", key, 0, 10); err != nil {
		t.Errorf("Register after UnregisterAll: %v", err)
	}
}

// TestUseOutlivesUnregister: a view stays valid across Unregister,
// UnregisterAll and Close of its region until released, and the last
// release unmaps.
func TestUseOutlivesUnregister(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove func(*sysshm.Registry) error
	}{
		{"Unregister", func(r *sysshm.Registry) error { return r.Unregister("r") }},
		{"UnregisterAll", (*sysshm.Registry).UnregisterAll},
		{"Close", (*sysshm.Registry).Close},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, f := newObject(t, 8192)
			r := newRegistry(t)
			if err := r.Register("r", key, 10, 8000); err != nil {
				t.Fatal(err)
			}
			d1, rel1, err := r.Use("r", 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			d2, rel2, err := r.Use("r", 7000, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.remove(r); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Status("r"); !errors.Is(err, sysshm.ErrNotFound) {
				t.Errorf("Status after %s: %v, want ErrNotFound", tc.name, err)
			}
			if !mapped(t, path(key)) {
				t.Fatalf("unmapped while two uses are unreleased")
			}
			copy(d1, "still here")
			equal(t, "file", readAt(t, f, 10, 10), []byte("still here"))

			rel1()
			rel1() // extra calls do nothing: the other use keeps the mapping
			if !mapped(t, path(key)) {
				t.Fatalf("unmapped while one use is unreleased")
			}
			if _, err := f.WriteAt([]byte("client"), 7010); err != nil {
				t.Fatal(err)
			}
			equal(t, "d2", d2[:6], []byte("client"))
			rel2()
			if mapped(t, path(key)) {
				t.Errorf("still mapped after the last release")
			}
			rel2()
		})
	}
}

// TestReregisterWhileInUse: a name removed while in use can be registered
// again at once; the old and new mappings are independent.
func TestReregisterWhileInUse(t *testing.T) {
	key, _ := newObject(t, 4096)
	r := newRegistry(t)
	if err := r.Register("r", key, 0, 10); err != nil {
		t.Fatal(err)
	}
	old, release, err := r.Use("r", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Unregister("r"); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("r", key, 20, 10); err != nil {
		t.Fatalf("Register of a name whose old region is still in use: %v", err)
	}
	cur := mustUse(t, r, "r", 0, 10)
	equal(t, "new region", cur, pattern(20, 10))
	equal(t, "old region", old, pattern(0, 10))
	release()
}

func TestClose(t *testing.T) {
	key, _ := newObject(t, 4096)
	r := sysshm.NewRegistry()
	if err := r.Register("r", key, 0, 10); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if mapped(t, path(key)) {
		t.Errorf("still mapped after Close")
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	wantErr(t, r.Register("r", key, 0, 10), sysshm.ErrInvalid, "closed")
	_, _, err := r.Use("r", 0, 1)
	wantErr(t, err, sysshm.ErrNotFound, "'r'")
	if all, err := r.Status(""); err != nil || len(all) != 0 {
		t.Errorf("Status after Close = %v, %v", all, err)
	}
}

func TestRegisterErrors(t *testing.T) {
	needShm(t)
	key, _ := newObject(t, 4096)
	page := os.Getpagesize()

	// Things in /dev/shm that are not shared-memory objects.
	tmp := func(t *testing.T) string {
		t.Helper()
		return filepath.Join(dir, fmt.Sprintf("sysshm-test-%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), os.Getpid()))
	}
	symlinkTo := func(target string) func(t *testing.T) string {
		return func(t *testing.T) string {
			p := tmp(t)
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(p) })
			return "/" + filepath.Base(p)
		}
	}
	directory := func(t *testing.T) string {
		p := tmp(t)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(p) })
		return "/" + filepath.Base(p)
	}
	fifo := func(t *testing.T) string {
		p := tmp(t)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		t.Cleanup(func() { os.Remove(p) })
		return "/" + filepath.Base(p)
	}
	fixed := func(k string) func(*testing.T) string { return func(*testing.T) string { return k } }
	shmKey := fixed(key)

	for _, tc := range []struct {
		name             string
		region           string
		key              func(*testing.T) string
		offset, byteSize uint64
		sentinel         error // nil: an OS error, no sentinel
		msg              string
		notExist         bool // errors.Is(err, fs.ErrNotExist)
	}{
		{"empty name", "", shmKey, 0, 10, sysshm.ErrInvalid, "'region name' is necessary", false},
		{"key without slash", "r", fixed("name"), 0, 10, sysshm.ErrInvalid, `must start with "/"`, false},
		{"empty key", "r", fixed(""), 0, 10, sysshm.ErrInvalid, `must start with "/"`, false},
		{"slash only", "r", fixed("/"), 0, 10, sysshm.ErrInvalid, "names no object", false},
		{"two components", "r", fixed("/a/b"), 0, 10, sysshm.ErrInvalid, `exactly one "/"`, false},
		{"dot dot", "r", fixed("/../etc/passwd"), 0, 10, sysshm.ErrInvalid, `exactly one "/"`, false},
		{"dot dot only", "r", fixed("/.."), 0, 10, sysshm.ErrInvalid, `contains ".."`, false},
		{"dot dot inside", "r", fixed("/a..b"), 0, 10, sysshm.ErrInvalid, `contains ".."`, false},
		{"dot", "r", fixed("/."), 0, 10, sysshm.ErrInvalid, "names a directory", false},
		{"double slash", "r", fixed("//x"), 0, 10, sysshm.ErrInvalid, `exactly one "/"`, false},
		{"NUL", "r", fixed("/x\x00"), 0, 10, sysshm.ErrInvalid, "NUL", false},
		{"NUL then path", "r", fixed("/x\x00/../../etc/passwd"), 0, 10, sysshm.ErrInvalid, "NUL", false},
		{"too long", "r", fixed("/" + strings.Repeat("k", sysshm.MaxKeyLen)), 0, 10, sysshm.ErrInvalid, "longer than 255", false},
		{"reserved prefix", "r", fixed("/" + sysshm.ReservedPrefix + "1"), 0, 10, sysshm.ErrInvalid,
			"cannot register shared memory region 'r' with key '/triton_python_backend_shm_region_1' as the key contains the reserved prefix 'triton_python_backend_shm_region_'", false},
		{"symlink to /etc/passwd", "r", symlinkTo("/etc/passwd"), 0, 10, sysshm.ErrInvalid, "Unable to open shared memory region", false},
		{"symlink to a shm object", "r", symlinkTo(filepath.Join(dir, key[1:])), 0, 10, sysshm.ErrInvalid, "Unable to open shared memory region", false},
		{"dangling symlink", "r", symlinkTo("/nonexistent/sysshm"), 0, 10, sysshm.ErrInvalid, "Unable to open shared memory region", false},
		{"directory", "r", directory, 0, 10, sysshm.ErrInvalid, "Unable to open shared memory region", false},
		{"fifo", "r", fifo, 0, 10, sysshm.ErrInvalid, "not a regular file", false},
		{"missing object", "r", fixed("/sysshm-test-does-not-exist"), 0, 10, nil,
			"Unable to open shared memory region: '/sysshm-test-does-not-exist'", true},
		{"zero size", "r", shmKey, 0, 0, sysshm.ErrInvalid, "failed to register shared memory region 'r': invalid args", false},
		{"past the end", "r", shmKey, 0, 4097, sysshm.ErrInvalid, "failed to register shared memory region 'r': invalid args (offset 0 + byte size 4097 exceeds the 4096 bytes", false},
		{"offset past the end", "r", shmKey, 4096, 1, sysshm.ErrInvalid, "invalid args", false},
		{"offset far past the end", "r", shmKey, uint64(page) * 1000, 1, sysshm.ErrInvalid, "invalid args", false},
		{"overflow", "r", shmKey, math.MaxUint64 - 5, 10, sysshm.ErrInvalid, "overflows", false},
		{"overflow to small", "r", shmKey, math.MaxUint64, 2, sysshm.ErrInvalid, "overflows", false},
		{"huge size", "r", shmKey, 0, math.MaxUint64, sysshm.ErrInvalid, "invalid args", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegistry(t)
			err := r.Register(tc.region, tc.key(t), tc.offset, tc.byteSize)
			wantErr(t, err, tc.sentinel, tc.msg)
			if got := errors.Is(err, fs.ErrNotExist); got != tc.notExist {
				t.Errorf("errors.Is(err, fs.ErrNotExist) = %v, want %v", got, tc.notExist)
			}
			if all, _ := r.Status(""); len(all) != 0 {
				t.Errorf("failed Register left %v registered", all)
			}
		})
	}
	if mapped(t, "/etc/passwd") {
		t.Errorf("/etc/passwd got mapped")
	}
}

func TestRegisterDuplicate(t *testing.T) {
	key, _ := newObject(t, 4096)
	r := newRegistry(t)
	if err := r.Register("r", key, 0, 10); err != nil {
		t.Fatal(err)
	}
	err := r.Register("r", key, 100, 10)
	wantErr(t, err, sysshm.ErrAlreadyExists, "shared memory region 'r' already in manager")
	if err.Error() != "shared memory region 'r' already in manager" {
		t.Errorf("message = %q, want Triton's exactly", err)
	}
	if got, _ := r.Status("r"); got[0].Offset != 0 {
		t.Errorf("duplicate Register replaced the region: %v", got)
	}
}

func TestUseErrors(t *testing.T) {
	key, _ := newObject(t, 4096)
	r := newRegistry(t)
	if err := r.Register("r", key, 100, 1000); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name             string
		region           string
		offset, byteSize uint64
		sentinel         error
		msg              string
	}{
		{"unknown", "nope", 0, 1, sysshm.ErrNotFound, "Unable to find shared memory region: 'nope'"},
		{"empty name", "", 0, 1, sysshm.ErrNotFound, "Unable to find shared memory region: ''"},
		{"one past", "r", 0, 1001, sysshm.ErrInvalid,
			"Invalid offset + byte size for shared memory region: 'r' (offset 0, byte size 1001, region byte size 1000)"},
		{"offset plus size past", "r", 999, 2, sysshm.ErrInvalid,
			"Invalid offset + byte size for shared memory region: 'r' (offset 999, byte size 2, region byte size 1000)"},
		{"offset at end", "r", 1000, 0, sysshm.ErrInvalid,
			"Invalid offset for shared memory region: 'r' (offset 1000, byte size 0, region byte size 1000)"},
		{"offset past end", "r", 5000, 1, sysshm.ErrInvalid, "Invalid offset for shared memory region: 'r'"},
		{"overflow", "r", 10, math.MaxUint64 - 5, sysshm.ErrInvalid, "Integer overflow detected"},
		{"huge size", "r", 0, math.MaxUint64, sysshm.ErrInvalid, "Invalid offset + byte size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, release, err := r.Use(tc.region, tc.offset, tc.byteSize)
			if data != nil || release != nil {
				t.Errorf("Use returned data or release with an error")
			}
			wantErr(t, err, tc.sentinel, tc.msg)
		})
	}
	// Failed uses took no reference: Unregister unmaps at once.
	if err := r.Unregister("r"); err != nil {
		t.Fatal(err)
	}
	if mapped(t, path(key)) {
		t.Errorf("a failed Use kept the region mapped")
	}
}

// TestCopyFault: a client truncating its object must not crash the server
// when it copies through Copy.
func TestCopyFault(t *testing.T) {
	page := os.Getpagesize()
	key, f := newObject(t, 4*page)
	r := newRegistry(t)
	if err := r.Register("r", key, 0, uint64(4*page)); err != nil {
		t.Fatal(err)
	}
	data := mustUse(t, r, "r", 0, uint64(4*page))
	buf := make([]byte, len(data))
	if n, err := sysshm.Copy(buf, data); err != nil || n != len(data) {
		t.Fatalf("Copy = %d, %v", n, err)
	}
	equal(t, "copied", buf[:32], pattern(0, 32))

	if err := f.Truncate(int64(page)); err != nil {
		t.Fatal(err)
	}
	n, err := sysshm.Copy(buf, data[2*page:])
	wantErr(t, err, sysshm.ErrInvalid, "shared memory fault")
	if n != 0 {
		t.Errorf("n = %d after a fault", n)
	}
	if _, err := sysshm.Copy(data[3*page:], buf); err == nil {
		t.Errorf("Copy into truncated memory: no error")
	}
	// The first page is still there.
	if n, err := sysshm.Copy(buf[:10], data); err != nil || n != 10 {
		t.Errorf("Copy from the remaining page = %d, %v", n, err)
	}
}

// TestConcurrentUseUnregister hammers Use/release against Register,
// Unregister, UnregisterAll: run with -race. A view touched after its
// mapping was unmapped would crash the test binary.
func TestConcurrentUseUnregister(t *testing.T) {
	const (
		nUsers  = 8
		slot    = 64
		nNames  = 4
		rounds  = 2000
		objSize = nUsers * slot
	)
	key, _ := newObject(t, objSize)
	r := newRegistry(t)
	name := func(i int) string { return fmt.Sprint("r", i%nNames) }

	var stop atomic.Bool
	var registrar, users sync.WaitGroup
	var used, missed atomic.Int64
	registrar.Go(func() {
		for i := 0; !stop.Load(); i++ {
			switch err := r.Register(name(i), key, 0, objSize); {
			case err == nil, errors.Is(err, sysshm.ErrAlreadyExists):
			default:
				t.Errorf("Register: %v", err)
				return
			}
			switch {
			case i%50 == 49:
				if err := r.UnregisterAll(); err != nil {
					t.Errorf("UnregisterAll: %v", err)
				}
			case i%3 != 0:
				if err := r.Unregister(name(i + 1)); err != nil && !errors.Is(err, sysshm.ErrNotFound) {
					t.Errorf("Unregister: %v", err)
				}
			}
			_, _ = r.Status("")
		}
	})
	for u := range nUsers {
		users.Go(func() {
			// Every name maps the whole object, so all of this user's views
			// alias the same slot: the last value written is what each of
			// them must read, until released.
			var held [][]byte
			var last byte
			check := func(views [][]byte, round int) {
				for _, v := range views {
					for j := range v {
						if v[j] != last+byte(j) {
							t.Errorf("user %d round %d: byte %d = %d, want %d", u, round, j, v[j], last+byte(j))
							return
						}
					}
				}
			}
			for i := range rounds {
				data, release, err := r.Use(name(u+i), uint64(u*slot), slot)
				if err != nil {
					if !errors.Is(err, sysshm.ErrNotFound) {
						t.Errorf("Use: %v", err)
						return
					}
					missed.Add(1)
					continue
				}
				used.Add(1)
				last = byte(u + i)
				for j := range data {
					data[j] = last + byte(j)
				}
				runtime.Gosched() // let the registrar unregister under us
				check([][]byte{data}, i)
				if i%7 == 0 {
					// Keep some views across many unregisters, and touch
					// them all again now and then.
					held = append(held, data)
					defer release()
				} else {
					release()
				}
				if i%100 == 0 {
					check(held, i)
				}
			}
			check(held, rounds)
		})
	}
	users.Wait()
	stop.Store(true)
	registrar.Wait()
	t.Logf("%d uses, %d found no region", used.Load(), missed.Load())
	if used.Load() == 0 {
		t.Errorf("no Use succeeded; the test exercised nothing")
	}
	if err := r.UnregisterAll(); err != nil {
		t.Fatal(err)
	}
	if mapped(t, path(key)) {
		t.Errorf("mappings leaked after every use was released")
	}
}
