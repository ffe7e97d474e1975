/* The C module's snapshot pins after 70,000 transactions: a lookup that misses (begin_txn after its session's
 * commit ended the previous pin) and a begin. cc -O2 -pthread -o /tmp/pins benchmarks/udf_pins.c && /tmp/pins
 * Measured 2026-11-23 (2 cores, loaded): 184-227 us per missed lookup with PIN_GONE entries never cleared,
 * 0.03 us once pin_add rehashes the table when a quarter of it is PIN_GONE. */
#include <stdio.h>
#include <stdint.h>
#include <time.h>
#include "../tique/udf/tique_udf.c"
char *createException(int type, const char *fcn, const char *format, ...) { (void)type; (void)fcn; (void)format; return "err"; }
int mal_module(const char *name, void *atoms, mel_func *funcs) { (void)name; (void)atoms; (void)funcs; return 0; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(void) {
	int64_t prev = 0, id; int lease = 60000, ok;
	for (int i = 0; i < 70000; i++) { TQbegin(&id, &prev, &lease); prev = id; }
	int64_t missing = -5; int one = 1000;
	double t0 = now();
	for (int i = 0; i < 20000; i++) TQrenew(&ok, &missing, &one);
	double t1 = now();
	for (int i = 0; i < 20000; i++) { TQbegin(&id, &prev, &lease); prev = id; }
	double t2 = now();
	printf("missed lookup %.2f us, begin %.2f us\n", (t1 - t0) / 20000 * 1e6, (t2 - t1) / 20000 * 1e6);
	return 0;
}
