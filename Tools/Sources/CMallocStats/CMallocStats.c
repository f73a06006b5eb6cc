// See include/CMallocStats.h: thin wrappers, so that Swift sees neither <malloc.h> nor its
// by-value struct.
#include "CMallocStats.h"

// Defines __GLIBC__ on glibc (stddef.h, from the compiler, does not).
#include <stdlib.h>

#if defined(__GLIBC__)
#include <malloc.h>

void taskid_malloc_figures(size_t *used, size_t *free_held) {
    struct mallinfo2 info = mallinfo2();
    *used = info.uordblks + info.hblkhd;
    *free_held = info.fordblks;
}

int taskid_malloc_trim(void) { return malloc_trim(0); }
#else
void taskid_malloc_figures(size_t *used, size_t *free_held) {
    *used = 0;
    *free_held = 0;
}
int taskid_malloc_trim(void) { return 0; }
#endif
