// See include/CMallocStats.h: thin wrappers, so that Swift sees neither <malloc.h> nor its
// by-value struct.
#include "CMallocStats.h"

// Defines __GLIBC__ on glibc (stddef.h, from the compiler, does not).
#include <stdlib.h>

#if defined(__GLIBC__)
#include <malloc.h>

void taskid_malloc_figures(size_t *used, size_t *free_held) {
#if __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33)
    struct mallinfo2 info = mallinfo2();
#else
    // Before glibc 2.33: the int fields of mallinfo, which wrap past 2 GiB.
    struct mallinfo info = mallinfo();
#endif
    *used = (size_t)info.uordblks + (size_t)info.hblkhd;
    *free_held = (size_t)info.fordblks;
}

int taskid_malloc_trim(void) { return malloc_trim(0); }
#else
void taskid_malloc_figures(size_t *used, size_t *free_held) {
    *used = 0;
    *free_held = 0;
}
int taskid_malloc_trim(void) { return 0; }
#endif
