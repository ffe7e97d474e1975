/*
 * tique's timestamp functions, running inside the MonetDB engine.
 *
 * One process-wide state (shared by every embedded or MAPI connection of the process) orders commits:
 *
 *   next_txid()            a fresh transaction id
 *   next_cts()             a fresh commit timestamp c; slot c becomes TAKEN
 *   publish(c, ms)         c has written its commit record (write-set + cts); slot c becomes PUBLISHED, then
 *                          the call waits until every smaller timestamp is published too. Certification of c
 *                          runs after this, so it sees the write-set of every earlier committer.
 *   decide(c)              c is about to write its outcome; from here on it can no longer be abandoned
 *   advance(c, ms)         c's outcome is written; slot c becomes DONE, the visible snapshot (sts) moves over
 *                          every contiguous DONE slot, and the call waits until sts >= c
 *   sts()                  the current snapshot timestamp: every commit <= sts is settled
 *
 * A client that dies between next_cts and decide would leave a hole that blocks every later commit. A waiter
 * therefore abandons a predecessor that has stayed TAKEN or PUBLISHED for longer than the lease: the slot
 * becomes ABANDONED under the mutex, and the late owner's own publish/decide then fails, so it aborts.
 * A slot in DECIDING is never abandoned here: its outcome may already be written. The driver settles it
 * (advance with a zero timeout) once it sees the outcome record, or aborts it through recovery.
 *
 * Functions return NULL on success and a MonetDB exception string otherwise; "40001!" marks errors after
 * which a retry is safe, "HYT00!" timeouts.
 *
 * Built without MonetDB headers (the embedded wheel ships none): the few structures are declared below with
 * the layout of the 11.41 (Jul2021) kernel. With -DTIQUE_MONETDB_HEADERS the real headers are used instead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define TIQUE_UDF_ABI 3

#ifdef TIQUE_MONETDB_HEADERS
#include "monetdb_config.h"
#include "mal.h"
#include "mal_exception.h"
#include "mel.h"
typedef lng tq_lng;
#define TQ_MAL MAL
#else
typedef int64_t tq_lng;
typedef char *(*MALfcn)();

typedef struct mel_arg {
	char type[15];
	unsigned char isbat : 1, vargs : 1, nr : 4;
} mel_arg;

typedef struct mel_func {
	char mod[14];
	char fcn[30];
	const char *cname;
	uint16_t command : 1, unsafe : 1, retc : 6, argc : 6, vargs : 1, vrets : 1;
	MALfcn imp;
	mel_arg *args;
} mel_func;

_Static_assert(sizeof(mel_arg) == 16, "mel_arg must be 16 bytes (MonetDB 11.41)");
_Static_assert(sizeof(mel_func) == 80, "mel_func must be 80 bytes (MonetDB 11.41)");
_Static_assert(__builtin_offsetof(mel_func, imp) == 64, "mel_func.imp at offset 64");
_Static_assert(__builtin_offsetof(mel_func, args) == 72, "mel_func.args at offset 72");

#define TQ_MAL 0 /* enum malexception: MAL */
extern char *createException(int type, const char *fcn, const char *format, ...)
	__attribute__((format(printf, 3, 4)));
extern int mal_module(const char *name, void *atoms, mel_func *funcs);
#endif

#define LNG_NIL INT64_MIN
#define INT_NIL INT32_MIN

/* Commits in flight at once (between next_cts and the moment sts passes them) must fit the ring. */
#define RING 65536

enum slot_state { FREE = 0, TAKEN, PUBLISHED, DECIDING, DONE, ABANDONED };

static const char *const state_names[] = {"free", "taken", "published", "deciding", "done", "abandoned"};

typedef struct {
	tq_lng cts;
	int state;
	int64_t since_ms; /* when the slot entered its state, for the lease */
} slot_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed;
static slot_t ring[RING];
static tq_lng last_txid = 0;   /* last id handed out */
static tq_lng last_cts = 0;    /* last commit timestamp handed out */
static tq_lng published = 0;   /* every cts <= published is published, settled or abandoned */
static tq_lng sts = 0;         /* every cts <= sts is settled or abandoned: the visible snapshot */
static int64_t lease_ms = 10000;
static tq_lng abandoned_total = 0;

static int64_t
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static slot_t *
slot_of(tq_lng c)
{
	return &ring[(uint64_t) c % RING];
}

/* state of c */
static int
state_of(tq_lng c)
{
	if (c <= 0 || c > last_cts)
		return FREE;
	slot_t *s = slot_of(c);
	if (c <= sts) /* settled; an abandoned slot keeps saying so until reused, for its late owner */
		return s->cts == c && s->state == ABANDONED ? ABANDONED : DONE;
	return s->state;
}

static void
set_state(tq_lng c, int state)
{
	slot_t *s = slot_of(c);
	s->cts = c;
	s->state = state;
	s->since_ms = now_ms();
}

/* move both watermarks over every slot that allows it; caller holds the lock */
static void
move_watermarks(void)
{
	bool moved = false;
	while (published < last_cts) {
		int st = state_of(published + 1);
		if (st == FREE || st == TAKEN)
			break;
		published++;
		moved = true;
	}
	while (sts < published) {
		int st = state_of(sts + 1);
		if (st != DONE && st != ABANDONED)
			break;
		sts++;
		moved = true;
	}
	if (moved)
		pthread_cond_broadcast(&changed);
}

/* abandon c's stale predecessors that hold up the watermark 'wm'; caller holds the lock */
static void
abandon_stale(tq_lng wm, tq_lng c)
{
	int64_t now = now_ms();
	for (tq_lng p = wm + 1; p < c; p++) {
		slot_t *s = slot_of(p);
		int st = state_of(p);
		if ((st == TAKEN || st == PUBLISHED) && now - s->since_ms >= lease_ms) {
			set_state(p, ABANDONED);
			abandoned_total++;
		}
	}
	move_watermarks();
}

/* wait until *wm >= target; returns 0, or ETIMEDOUT; caller holds the lock */
static int
wait_for(const tq_lng *wm, tq_lng target, tq_lng c, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	while (*wm < target) {
		abandon_stale(*wm, c);
		if (*wm >= target)
			break;
		int64_t now = now_ms();
		if (now >= deadline)
			return ETIMEDOUT;
		int64_t step = deadline - now;
		if (step > 50)
			step = 50; /* wake up now and then to check leases */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += step / 1000;
		ts.tv_nsec += (step % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&changed, &lock, &ts);
	}
	return 0;
}

static char *
blocker_error(const char *fcn, tq_lng c, tq_lng wm, int timeout_ms)
{
	tq_lng p = wm + 1;
	return createException(TQ_MAL, fcn,
			       "HYT00!tique: commit %lld waited %d ms for commit %lld (state %s); "
			       "its client may have died: recovery or the lease (%lld ms) will settle it",
			       (long long) c, timeout_ms, (long long) p, state_names[state_of(p)],
			       (long long) lease_ms);
}

static char *
check_cts(const char *fcn, tq_lng c)
{
	if (c == LNG_NIL || c <= 0 || c > last_cts)
		return createException(TQ_MAL, fcn, "42000!tique: %lld is not a commit timestamp handed out "
				       "(last is %lld)", (long long) c, (long long) last_cts);
	return NULL;
}

static char *
TQnext_txid(tq_lng *ret)
{
	pthread_mutex_lock(&lock);
	*ret = ++last_txid;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQnext_cts(tq_lng *ret)
{
	char *err = NULL;
	pthread_mutex_lock(&lock);
	if (last_cts - sts >= RING - 1) {
		err = createException(TQ_MAL, "tique.next_cts",
				      "40001!tique: %d commits in flight, the limit; retry", RING - 1);
	} else {
		*ret = ++last_cts;
		set_state(*ret, TAKEN);
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static char *
TQsts(tq_lng *ret)
{
	pthread_mutex_lock(&lock);
	*ret = sts;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQpublished(tq_lng *ret)
{
	pthread_mutex_lock(&lock);
	*ret = published;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQpublish(tq_lng *ret, const tq_lng *cts, const int *timeout_ms)
{
	const char *fcn = "tique.publish";
	tq_lng c = *cts;
	int timeout = *timeout_ms == INT_NIL ? 0 : *timeout_ms;
	char *err;
	pthread_mutex_lock(&lock);
	if ((err = check_cts(fcn, c)) == NULL) {
		int st = state_of(c);
		if (st == ABANDONED) {
			err = createException(TQ_MAL, fcn, "40001!tique: commit %lld was abandoned after its lease "
					      "(%lld ms) ran out; retry the transaction", (long long) c,
					      (long long) lease_ms);
		} else if (st != TAKEN) {
			err = createException(TQ_MAL, fcn, "42000!tique: commit %lld is %s, not taken",
					      (long long) c, state_names[st]);
		} else {
			set_state(c, PUBLISHED);
			move_watermarks();
			if (wait_for(&published, c - 1, c, timeout) != 0)
				err = blocker_error(fcn, c, published, timeout);
			else
				*ret = published;
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static char *
TQdecide(tq_lng *ret, const tq_lng *cts)
{
	const char *fcn = "tique.decide";
	tq_lng c = *cts;
	char *err;
	pthread_mutex_lock(&lock);
	if ((err = check_cts(fcn, c)) == NULL) {
		int st = state_of(c);
		if (st == TAKEN || st == PUBLISHED) {
			set_state(c, DECIDING);
			*ret = c;
		} else if (st == ABANDONED) {
			err = createException(TQ_MAL, fcn, "40001!tique: commit %lld was abandoned after its lease "
					      "(%lld ms) ran out; retry the transaction", (long long) c,
					      (long long) lease_ms);
		} else {
			err = createException(TQ_MAL, fcn, "42000!tique: commit %lld is %s, cannot decide",
					      (long long) c, state_names[st]);
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static char *
TQadvance(tq_lng *ret, const tq_lng *cts, const int *timeout_ms)
{
	const char *fcn = "tique.advance";
	tq_lng c = *cts;
	int timeout = *timeout_ms == INT_NIL ? 0 : *timeout_ms;
	char *err;
	pthread_mutex_lock(&lock);
	if ((err = check_cts(fcn, c)) == NULL) {
		int st = state_of(c);
		if (st != DONE && st != ABANDONED)
			set_state(c, DONE);
		move_watermarks();
		if (timeout > 0 && wait_for(&sts, c, c, timeout) != 0)
			err = blocker_error(fcn, c, sts, timeout);
		else
			*ret = sts;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static char *
TQabandon(tq_lng *ret, const tq_lng *cts)
{
	const char *fcn = "tique.abandon";
	tq_lng c = *cts;
	char *err;
	pthread_mutex_lock(&lock);
	if ((err = check_cts(fcn, c)) == NULL) {
		int st = state_of(c);
		*ret = 0;
		if (st != DONE && st != ABANDONED) {
			set_state(c, ABANDONED);
			abandoned_total++;
			move_watermarks();
			*ret = 1;
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* abandon c if it is stuck before deciding for longer than the lease (as a waiter would): 1 if abandoned */
static char *
TQexpire(tq_lng *ret, const tq_lng *cts)
{
	const char *fcn = "tique.expire";
	tq_lng c = *cts;
	char *err;
	pthread_mutex_lock(&lock);
	*ret = 0;
	if ((err = check_cts(fcn, c)) == NULL) {
		int st = state_of(c);
		if ((st == TAKEN || st == PUBLISHED) && now_ms() - slot_of(c)->since_ms >= lease_ms) {
			set_state(c, ABANDONED);
			abandoned_total++;
			move_watermarks();
			*ret = 1;
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static char *
TQstate(int *ret, const tq_lng *cts)
{
	pthread_mutex_lock(&lock);
	*ret = state_of(*cts);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQreset(tq_lng *ret, const tq_lng *txid, const tq_lng *cts)
{
	const char *fcn = "tique.reset";
	if (*txid == LNG_NIL || *cts == LNG_NIL || *txid < 0 || *cts < 0)
		return createException(TQ_MAL, fcn, "42000!tique: reset needs two non-negative counters");
	pthread_mutex_lock(&lock);
	for (tq_lng c = sts + 1; c <= last_cts; c++)
		slot_of(c)->state = FREE;
	last_txid = *txid;
	last_cts = published = sts = *cts;
	pthread_cond_broadcast(&changed);
	*ret = sts;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQset_lease(tq_lng *ret, const int *ms)
{
	if (*ms == INT_NIL || *ms <= 0)
		return createException(TQ_MAL, "tique.set_lease", "42000!tique: the lease must be positive");
	pthread_mutex_lock(&lock);
	*ret = lease_ms;
	lease_ms = *ms;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQlast_txid(tq_lng *ret)
{
	pthread_mutex_lock(&lock);
	*ret = last_txid;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQlast_cts(tq_lng *ret)
{
	pthread_mutex_lock(&lock);
	*ret = last_cts;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQabandoned(tq_lng *ret)
{
	pthread_mutex_lock(&lock);
	*ret = abandoned_total;
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* the lowest commit stuck in DECIDING for longer than the lease (its client may have died before advancing),
 * or 0: the driver settles it if its outcome is recorded */
static char *
TQstuck(tq_lng *ret)
{
	pthread_mutex_lock(&lock);
	int64_t now = now_ms();
	*ret = 0;
	for (tq_lng c = sts + 1; c <= last_cts; c++) {
		slot_t *s = slot_of(c);
		if (s->cts == c && s->state == DECIDING && now - s->since_ms >= lease_ms) {
			*ret = c;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

static char *
TQabi(int *ret)
{
	*ret = TIQUE_UDF_ABI;
	return NULL;
}

#define LNG {.type = "lng"}
#define INT {.type = "int"}
#define FN(name, impl, retc_, argc_, ...)                                                                    \
	{.mod = "tique", .fcn = name, .cname = #impl, .command = 1, .unsafe = 1, .retc = retc_, .argc = argc_, \
	 .imp = (MALfcn) impl, .args = (mel_arg[argc_]){__VA_ARGS__}}

static mel_func tique_functions[] = {
	FN("next_txid", TQnext_txid, 1, 1, LNG),
	FN("next_cts", TQnext_cts, 1, 1, LNG),
	FN("sts", TQsts, 1, 1, LNG),
	FN("published", TQpublished, 1, 1, LNG),
	FN("publish", TQpublish, 1, 3, LNG, LNG, INT),
	FN("decide", TQdecide, 1, 2, LNG, LNG),
	FN("advance", TQadvance, 1, 3, LNG, LNG, INT),
	FN("abandon", TQabandon, 1, 2, LNG, LNG),
	FN("state", TQstate, 1, 2, INT, LNG),
	FN("reset", TQreset, 1, 3, LNG, LNG, LNG),
	FN("set_lease", TQset_lease, 1, 2, LNG, INT),
	FN("last_txid", TQlast_txid, 1, 1, LNG),
	FN("last_cts", TQlast_cts, 1, 1, LNG),
	FN("abandoned", TQabandoned, 1, 1, LNG),
	FN("stuck", TQstuck, 1, 1, LNG),
	FN("expire", TQexpire, 1, 2, LNG, LNG),
	FN("abi", TQabi, 1, 1, INT),
	{.mod = ""},
};

static void __attribute__((constructor))
tique_udf_init(void)
{
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&changed, &attr);
	pthread_condattr_destroy(&attr);
	mal_module("tique", NULL, tique_functions);
}
