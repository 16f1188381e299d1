#ifndef TRITON_GO_MALLOCTRIM_H
#define TRITON_GO_MALLOCTRIM_H

/* malloctrim_trim gives the C heap's free memory back to the system
   (glibc's malloc_trim(0), over every malloc arena) and returns 1 if any
   was given back. */
int malloctrim_trim(void);

#endif
