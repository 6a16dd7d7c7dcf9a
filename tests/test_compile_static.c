/* A private SAM3_STATIC copy of the library; built twice (TU_FN = sam3_test_static_a / _b) and
   linked together with the extern implementation to show the copies do not clash. */
#define SAM3_STATIC
#define SAM3_IMPLEMENTATION
#include "../sam3.h"

int TU_FN(void);
int TU_FN(void) { return sam3_version_string()[0] == SAM3_VERSION_STRING[0]; }
