/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mem_info.c - aclrtGetMemInfo accounting on the software NPU.
 *
 * The harness runs this with a small HBM (ACLRS_SIM_HBM, default 1G), a 2 MiB
 * huge-page budget (ACLRS_SIM_HUGE2M) and no 1 GiB budget (ACLRS_SIM_HUGE1G=0).
 * Checked: totals match those settings; an allocation of S bytes lowers the
 * free figure by exactly its page-rounded footprint
 *     huge pages (HUGE_ONLY, or HUGE_FIRST with S > 1 MiB):
 *         round_up(round_up(S, 32) + 32, 2 MiB)
 *     normal pages (NORMAL_ONLY, or HUGE_FIRST with S <= 1 MiB):
 *         round_up(round_up(S, 32) + 32, 4 KiB)
 * and aclrtFree gives it all back; HUGE1G_ONLY fails without a 1 GiB budget;
 * DDR classes report 0/0; bad arguments are rejected; and allocations on
 * device 0 leave device 1's figures alone.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static size_t round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

/* Footprint of an aclrtMalloc of `size` bytes on pages of `page` bytes. */
static size_t footprint(size_t size, size_t page)
{
    return round_up(round_up(size, 32) + 32, page);
}

/* HUGE_FIRST above 1 MiB: every whole 2 MiB of the rounded size takes a 2 MiB page, the tail
 * takes 4 KiB pages. */
static size_t huge_part(size_t size)
{
    size_t r = round_up(size, 32) + 32;
    size_t whole = r / (2 * MIB) * (2 * MIB);
    /* A tail that needs a whole 2 MiB of 4 KiB pages takes a 2 MiB page instead. */
    return round_up(r - whole, 4 * KIB) == 2 * MIB ? whole + 2 * MIB : whole;
}

static size_t huge_first_footprint(size_t size)
{
    size_t r = round_up(size, 32) + 32;
    size_t huge = huge_part(size);
    return huge >= r ? huge : huge + round_up(r - huge, 4 * KIB);
}

/* Small requests (at most 64 KiB after rounding) are slab objects in 2 MiB chunks, which go back
 * when their last object is freed. A HUGE_ONLY chunk is one 2 MiB page; a chunk of 4 KiB pages
 * is backed in segments as its objects reach them, the first one 64 KiB. */
#define SLAB_CHUNK (2 * MIB)
#define SLAB_SEGMENT (64 * KIB)

/* Parses a size such as "1G", "512M", "4096", "2GiB" from the environment.
 * Returns 1 and stores it when the variable is set and well formed. */
static int env_size(const char *name, size_t *out)
{
    const char *s = getenv(name);
    char *end = NULL;
    unsigned long long v;
    unsigned shift = 0;

    if (s == NULL || *s == '\0') {
        return 0;
    }
    v = strtoull(s, &end, 10);
    if (end == s) {
        return 0;
    }
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (shift != 0 && *end == 'i') {
        end++;
    }
    if (*end == 'B' || *end == 'b') {
        end++;
    }
    if (*end != '\0') {
        return 0;
    }
    *out = (size_t)(v << shift);
    return 1;
}

static int mem_free(aclrtMemAttr attr, size_t *free_bytes)
{
    size_t total = 0;

    *free_bytes = 0;
    return aclrtGetMemInfo(attr, free_bytes, &total) == ACL_SUCCESS;
}

/*
 * Allocates `size` bytes with `policy`, checks that ACL_HBM_MEM free drops by
 * exactly `want` and the 2 MiB class ACL_HBM_MEM_HUGE by exactly `want_huge`;
 * frees and checks that both figures come back.
 */
static void alloc_and_measure(size_t size, aclrtMemMallocPolicy policy, size_t want, size_t want_huge)
{
    size_t before = 0, after = 0, restored = 0;
    size_t hbefore = 0, hafter = 0, hrestored = 0;
    void *p = NULL;

    printf("        aclrtMalloc(%zu bytes, policy %d): expect free -%zu, of it 2 MiB pages %zu\n", size,
           (int)policy, want, want_huge);
    if (!CHECK(mem_free(ACL_HBM_MEM, &before) && mem_free(ACL_HBM_MEM_HUGE, &hbefore))) {
        return;
    }
    if (!CHECK_OK(aclrtMalloc(&p, size, policy))) {
        return;
    }
    CHECK(p != NULL && ((uintptr_t)p % 64u) == 0);
    CHECK(mem_free(ACL_HBM_MEM, &after) && mem_free(ACL_HBM_MEM_HUGE, &hafter));
    printf("        free %zu -> %zu (-%zu), huge free %zu -> %zu\n", before, after,
           before - after, hbefore, hafter);
    CHECK(before - after == want);
    CHECK(hbefore - hafter == want_huge);
    CHECK_OK(aclrtFree(p));
    CHECK(mem_free(ACL_HBM_MEM, &restored) && mem_free(ACL_HBM_MEM_HUGE, &hrestored));
    CHECK(restored == before);
    CHECK(hrestored == hbefore);
}

int main(void)
{
    size_t hbm = 0, huge2m = 0, huge1g = 0;
    int have_hbm = env_size("ACLRS_SIM_HBM", &hbm);
    int have_huge2m = env_size("ACLRS_SIM_HUGE2M", &huge2m);
    int have_huge1g = env_size("ACLRS_SIM_HUGE1G", &huge1g);
    size_t free0 = 0, total0 = 0, f = 0, t = 0;
    int attr;

    printf("mem_info: aclrtGetMemInfo accounting\n");
    if (!CHECK_OK(aclInit(NULL)) || !CHECK_OK(aclrtSetDevice(0))) {
        return check_summary("mem_info");
    }

    check_section("totals");
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free0, &total0));
    printf("        ACL_HBM_MEM free %zu total %zu\n", free0, total0);
    CHECK(total0 > 0 && free0 > 0 && free0 <= total0);
    if (have_hbm) {
        CHECK(total0 == hbm);
    } else {
        printf("        (ACLRS_SIM_HBM not set: total not compared)\n");
    }
    CHECK_OK(aclrtGetMemInfo(ACL_MEM_NORMAL, &f, &t));
    CHECK(t == total0);
    CHECK(f <= t);
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM_HUGE, &f, &t));
    printf("        ACL_HBM_MEM_HUGE free %zu total %zu\n", f, t);
    CHECK(f <= t);
    if (have_huge2m) {
        CHECK(t == huge2m);
    }

    check_section("HUGE_FIRST above 1 MiB: 2 MiB pages, the tail in 4 KiB pages");
    alloc_and_measure(3 * MIB + 5, ACL_MEM_MALLOC_HUGE_FIRST, huge_first_footprint(3 * MIB + 5),
                      huge_part(3 * MIB + 5));
    CHECK(huge_first_footprint(3 * MIB + 5) == 3 * MIB + 4 * KIB);
    alloc_and_measure(2 * MIB, ACL_MEM_MALLOC_HUGE_FIRST, huge_first_footprint(2 * MIB), 2 * MIB);
    CHECK(huge_first_footprint(2 * MIB) == 2 * MIB + 4 * KIB);
    alloc_and_measure(4 * MIB - 64, ACL_MEM_MALLOC_HUGE_FIRST, 4 * MIB, 4 * MIB);
    CHECK(huge_first_footprint(4 * MIB - 64) == 4 * MIB);

    check_section("HUGE_ONLY takes 2 MiB pages");
    alloc_and_measure(5 * MIB, ACL_MEM_MALLOC_HUGE_ONLY, footprint(5 * MIB, 2 * MIB),
                      footprint(5 * MIB, 2 * MIB));
    alloc_and_measure(100, ACL_MEM_MALLOC_HUGE_ONLY, SLAB_CHUNK, SLAB_CHUNK);

    check_section("NORMAL_ONLY takes 4 KiB pages");
    alloc_and_measure(100000, ACL_MEM_MALLOC_NORMAL_ONLY, footprint(100000, 4 * KIB), 0);
    CHECK(footprint(100000, 4 * KIB) == 102400);
    alloc_and_measure(1, ACL_MEM_MALLOC_NORMAL_ONLY, SLAB_SEGMENT, 0);
    alloc_and_measure(3 * MIB + 5, ACL_MEM_MALLOC_NORMAL_ONLY, footprint(3 * MIB + 5, 4 * KIB), 0);

    check_section("HUGE_FIRST up to 1 MiB takes 4 KiB pages");
    alloc_and_measure(MIB, ACL_MEM_MALLOC_HUGE_FIRST, footprint(MIB, 4 * KIB), 0);
    CHECK(footprint(MIB, 4 * KIB) == MIB + 4 * KIB);
    alloc_and_measure(1000, ACL_MEM_MALLOC_HUGE_FIRST, SLAB_SEGMENT, 0);

    check_section("two live allocations are accounted separately");
    {
        void *a = NULL, *b = NULL;
        size_t start = 0, both = 0, only_b = 0, end = 0;
        const size_t fa = huge_first_footprint(3 * MIB + 5);
        const size_t fb = footprint(100000, 4 * KIB);

        CHECK(mem_free(ACL_HBM_MEM, &start));
        if (CHECK_OK(aclrtMalloc(&a, 3 * MIB + 5, ACL_MEM_MALLOC_HUGE_FIRST)) &&
            CHECK_OK(aclrtMalloc(&b, 100000, ACL_MEM_MALLOC_NORMAL_ONLY))) {
            CHECK(mem_free(ACL_HBM_MEM, &both));
            CHECK(start - both == fa + fb);
            CHECK_OK(aclrtFree(a));
            CHECK(mem_free(ACL_HBM_MEM, &only_b));
            CHECK(start - only_b == fb);
            CHECK_OK(aclrtFree(b));
            CHECK(mem_free(ACL_HBM_MEM, &end));
            CHECK(end == start);
        }
    }

    check_section("HUGE1G_ONLY without a 1 GiB budget");
    if (have_huge1g && huge1g == 0) {
        void *p = NULL;
        size_t before = 0, after = 0;

        CHECK(mem_free(ACL_HBM_MEM, &before));
        CHECK_FAIL(aclrtMalloc(&p, MIB, ACL_MEM_MALLOC_HUGE1G_ONLY), ACL_ERROR_RT_MEMORY_ALLOCATION);
        CHECK_FAIL(aclrtMalloc(&p, MIB, ACL_MEM_MALLOC_HUGE1G_ONLY_P2P),
                   ACL_ERROR_RT_MEMORY_ALLOCATION);
        CHECK(mem_free(ACL_HBM_MEM, &after));
        CHECK(after == before);
        CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM_HUGE1G, &f, &t));
        CHECK(t == 0 && f == 0);
    } else {
        printf("        (skipped: ACLRS_SIM_HUGE1G is not 0)\n");
    }

    check_section("DDR classes report 0 / 0");
    {
        static const aclrtMemAttr ddr[5] = {ACL_DDR_MEM, ACL_DDR_MEM_HUGE, ACL_DDR_MEM_NORMAL,
                                            ACL_DDR_MEM_P2P_HUGE, ACL_DDR_MEM_P2P_NORMAL};
        int i;

        for (i = 0; i < 5; i++) {
            f = 12345;
            t = 12345;
            printf("        attr %d\n", (int)ddr[i]);
            CHECK_OK(aclrtGetMemInfo(ddr[i], &f, &t));
            CHECK(f == 0 && t == 0);
        }
    }

    check_section("every other class 0..17 answers");
    for (attr = 0; attr <= 17; attr++) {
        f = 0;
        t = 0;
        printf("        attr %d\n", attr);
        CHECK_OK(aclrtGetMemInfo((aclrtMemAttr)attr, &f, &t));
        CHECK(f <= t);
    }

    check_section("bad arguments");
    CHECK_FAIL(aclrtGetMemInfo((aclrtMemAttr)18, &f, &t), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetMemInfo((aclrtMemAttr)0x7FFFFFFF, &f, &t), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetMemInfo(ACL_HBM_MEM, NULL, &t), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetMemInfo(ACL_HBM_MEM, &f, NULL), ACL_ERROR_INVALID_PARAM);

    check_section("device 1 is not affected by device 0");
    {
        size_t f1a = 0, t1a = 0, f1b = 0, t1b = 0, d0a = 0, d0b = 0;
        void *p = NULL;

        if (CHECK_OK(aclrtSetDevice(1))) {
            CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &f1a, &t1a));
            printf("        device 1: free %zu total %zu\n", f1a, t1a);
            if (have_hbm) {
                CHECK(t1a == hbm);
            }
            CHECK_OK(aclrtSetDevice(0));
            CHECK(mem_free(ACL_HBM_MEM, &d0a));
            if (CHECK_OK(aclrtMalloc(&p, 64 * MIB, ACL_MEM_MALLOC_HUGE_FIRST))) {
                CHECK(mem_free(ACL_HBM_MEM, &d0b));
                CHECK(d0a - d0b == huge_first_footprint(64 * MIB));
                CHECK_OK(aclrtSetDevice(1));
                CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &f1b, &t1b));
                CHECK(f1b == f1a && t1b == t1a);
                CHECK_OK(aclrtSetDevice(0));
                CHECK_OK(aclrtFree(p));
                CHECK_OK(aclrtResetDevice(1));
                CHECK_OK(aclrtResetDevice(0));
            }
            CHECK_OK(aclrtResetDevice(1));
            CHECK_OK(aclrtResetDevice(0));
        }
    }

    check_section("free memory restored at the end");
    CHECK(mem_free(ACL_HBM_MEM, &f));
    CHECK(f == free0);

    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("mem_info");
}
