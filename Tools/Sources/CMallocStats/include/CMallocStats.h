// What malloc holds, for taskid serve's INFO and --maxmemory: glibc's mallinfo2() and
// malloc_trim(), which Swift's Glibc module does not bring in (they are in <malloc.h>).
#ifndef CMALLOCSTATS_H
#define CMALLOCSTATS_H

#include <stddef.h>

/// Sets `used` to the bytes malloc has handed out and not taken back (small blocks in use plus
/// mmapped blocks), and `free_held` to the bytes it holds free without returning them to the
/// system; both 0 where the C library cannot tell. One walk of malloc's arenas. Any thread.
void taskid_malloc_figures(size_t *used, size_t *free_held);

/// Returns the free memory malloc holds to the system, where the C library can; returns 1 if
/// some was returned. Any thread (it locks each arena in turn).
int taskid_malloc_trim(void);

#endif
