/* libsam3: sam3.h compiled once, for programs that link a library instead of including the
   implementation (`make lib`: build/libsam3.a and build/libsam3.so; `make install`), and for
   languages that load a shared library (examples/python/sam3h). The Makefile builds it with
   -fvisibility=hidden -DSAM3_SHARED, so the shared library exports the public sam3_* functions
   and nothing else. */
#define SAM3_IMPLEMENTATION
#include "../sam3.h"
