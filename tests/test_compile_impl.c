/* The implementation, in its own translation unit (see test_compile.c). */
#define SAM3_IMPLEMENTATION
#include "../sam3.h"
