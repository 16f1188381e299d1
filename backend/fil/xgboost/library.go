package xgboost

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/triton-go/triton/cgo/xgbrun"
)

// LibraryEnv is the environment variable naming the XGBoost shared
// library, consulted when no library path is given as an option.
const LibraryEnv = "XGBOOST_LIB"

// LibraryNames are the names OpenLibrary tries, in order, through the
// dynamic linker's search (its cache covers /usr/lib/x86_64-linux-gnu and
// the other system folders, $LD_LIBRARY_PATH is searched first) when
// neither an explicit path nor $XGBOOST_LIB names the library: the
// soname that Debian's libxgboost0 installs, then the link name of
// libxgboost-dev and of pip's wheels.
var LibraryNames = []string{"libxgboost.so.0", "libxgboost.so"}

// ErrNoLibrary is wrapped by the error of a load when the XGBoost library
// cannot be loaded.
var ErrNoLibrary = errors.New("the XGBoost library cannot be loaded")

// OpenLibrary loads the XGBoost C library (XGBoost 1.7 or later) into the
// process, unless one is loaded: path if not empty, else $XGBOOST_LIB if
// set, else the first of [LibraryNames] the dynamic linker finds. The
// library stays loaded for the life of the process, and a second library
// is refused (the error names both). A program that loads no XGBoost model
// never loads it, and runs without it.
//
// The error of a library that cannot be loaded wraps [ErrNoLibrary], gives
// the dynamic linker's reason for each name tried, and says what to
// install. OpenLibrary is safe for concurrent use.
func OpenLibrary(path string) error {
	var tried []string
	if path == "" {
		path = os.Getenv(LibraryEnv)
	}
	names := LibraryNames
	switch {
	case path != "":
		names = []string{path}
	case xgbrun.Version() != "":
		return nil // loaded, from one of LibraryNames or another path
	}
	for _, name := range names {
		err := xgbrun.Open(name)
		if err == nil {
			return nil
		}
		if errors.Is(err, xgbrun.ErrOtherLibrary) {
			return fmt.Errorf("xgboost: %w", err)
		}
		tried = append(tried, err.Error())
	}
	return fmt.Errorf("xgboost: %w (%s); install Debian's libxgboost0 (apt-get install libxgboost0; "+
		"libxgboost-dev also installs libxgboost.so), or set %s to the library's path",
		ErrNoLibrary, strings.Join(tried, "; "), LibraryEnv)
}
