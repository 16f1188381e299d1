#include <malloc.h>

#include "trim.h"

int malloctrim_trim(void) { return malloc_trim(0); }
