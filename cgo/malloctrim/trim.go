//go:build linux && cgo

package malloctrim

/*
#cgo CFLAGS: -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
#include "trim.h"
*/
import "C"

// Trim gives the C heap's free memory back to the system and reports
// whether any was given back.
func Trim() bool { return C.malloctrim_trim() != 0 }
