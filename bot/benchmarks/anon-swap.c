/*
 * anon-swap: anonymous memory through swap, as lorelab's reclaim benchmark of the anon LRU.
 *
 * Usage: anon-swap MB
 *
 * Maps MB MiB of private anonymous memory, writes every page once (each write fault allocates a
 * page; once the mapping outgrows memory, reclaim swaps the oldest ones out), then reads every
 * page back in the same order and checks what it wrote (the pages swapped out are faulted back
 * in, pushing others out). Run with MB above the machine's (or memcg's) memory, the two passes
 * measure swap-out and swap-in throughput; below it they measure only page faults. A page that
 * reads back wrong means the kernel lost or mixed up data: the program says which and exits 3.
 *
 * Prints `name: value` lines: mb, page_size, write_seconds, write_mb_per_s, verify_seconds,
 * verify_mb_per_s, seconds and mb_per_s (both passes: 2 * MB / seconds). MB means MiB.
 * Built static (gcc -O2 -static) so that it runs in a minimal guest.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Each page holds a word derived from its index, so that a page swapped in at the wrong place
 * or zero-filled by mistake does not read back as the right value. */
static uint64_t expected(uint64_t page)
{
	return (page + 1) * UINT64_C(0x9e3779b97f4a7c15);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	char *end;
	unsigned long long mb;
	size_t page_size, pages, i;
	char *memory;
	double start, written, verified;

	if (argc != 2) {
		fprintf(stderr, "usage: %s MB\n", argv[0]);
		return 2;
	}
	errno = 0;
	mb = strtoull(argv[1], &end, 10);
	if (errno || *end || mb == 0 || mb > SIZE_MAX / (1024 * 1024)) {
		fprintf(stderr, "anon-swap: MB must be a positive whole number, not '%s'\n", argv[1]);
		return 2;
	}
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	pages = (size_t)(mb * 1024 * 1024) / page_size;
	/* MAP_NORESERVE: a mapping larger than memory plus swap is the point, not an error. */
	memory = mmap(NULL, pages * page_size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (memory == MAP_FAILED) {
		fprintf(stderr, "anon-swap: cannot map %llu MB: %s\n", mb, strerror(errno));
		return 1;
	}

	start = now();
	for (i = 0; i < pages; i++)
		*(volatile uint64_t *)(memory + i * page_size) = expected(i);
	written = now();
	for (i = 0; i < pages; i++) {
		uint64_t value = *(volatile uint64_t *)(memory + i * page_size);

		if (value != expected(i)) {
			fprintf(stderr, "anon-swap: page %zu reads 0x%016" PRIx64 ", wrote 0x%016"
				PRIx64 ": memory was corrupted\n", i, value, expected(i));
			return 3;
		}
	}
	verified = now();

	printf("mb: %llu\n", mb);
	printf("page_size: %zu\n", page_size);
	printf("write_seconds: %.6f\n", written - start);
	printf("write_mb_per_s: %.1f\n", (double)mb / (written - start));
	printf("verify_seconds: %.6f\n", verified - written);
	printf("verify_mb_per_s: %.1f\n", (double)mb / (verified - written));
	printf("seconds: %.6f\n", verified - start);
	printf("mb_per_s: %.1f\n", 2.0 * (double)mb / (verified - start));
	return 0;
}
