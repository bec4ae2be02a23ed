/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/mappings.h - uses up the calling process's memory mappings (vm.max_map_count), for
 * the programs that test what the runtime does when the kernel has no mapping left to give.
 * The including program defines _GNU_SOURCE first (MAP_ANONYMOUS, MAP_NORESERVE).
 */
#ifndef ACLRS_TESTS_C_MAPPINGS_H
#define ACLRS_TESTS_C_MAPPINGS_H

#include <sys/mman.h>

/* Pages of the host reservation use_up_mappings() splits: up to twice as many mappings. */
#define USE_UP_PAGES 200000ul

/*
 * Reserves USE_UP_PAGES inaccessible pages and makes every second one readable until the
 * kernel refuses (each one is two more mappings), then takes the one mapping that may be left
 * (which may fail when there is none, as good). Returns the reservation, to give back with
 * release_mappings(), and sets *split to the pages made readable; MAP_FAILED when the
 * reservation itself fails.
 */
static inline char *use_up_mappings(long *split)
{
    char *area = mmap(NULL, USE_UP_PAGES * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    *split = 0;
    if (area == MAP_FAILED) {
        return area;
    }
    while ((unsigned long)*split * 2 < USE_UP_PAGES && mprotect(area + *split * 2 * 4096, 4096, PROT_READ) == 0) {
        (*split)++;
    }
    (void)mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return area;
}

/* Gives back what use_up_mappings() reserved; 0 on success. */
static inline int release_mappings(char *area)
{
    return munmap(area, USE_UP_PAGES * 4096);
}

#endif
