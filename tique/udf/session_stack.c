/* A private stack for each embedded kernel session, so that any thread can make the session's calls.
 *
 * MonetDB 11.41 keeps a record for each thread it has seen, with the stack pointer it had then, and refuses to
 * compile a statement ("Query too complex: running out of stack space", THRhighwater) when the current stack
 * pointer is more than about 1.9 MB away from it; a session also notes the stack pointer it was opened at. So a
 * session opened on one thread fails on another. Handing every call to one thread per session costs two thread
 * wake-ups per call (NewOrder took 13-14% longer that way, measured interleaved). Instead, every call of a
 * session runs on the session's own stack, entered with swapcontext from whichever thread calls, and the calling
 * thread's record points into that stack for the length of the call (then gets its own value back).
 *
 * The caller must not run two calls of one session at once (the connection's lock ensures it).
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

typedef intptr_t (*tq_call4)(void *, void *, void *, void *);
typedef void *(*tq_thread_data)(void);

/* The kernel's MT_thread_getdata (the calling thread's record, or NULL for a thread it has not seen) and the
 * offset of the stack pointer in that record; set by tq_session_stack_init after Python checked them. */
static tq_thread_data thread_data;
static size_t sp_offset;

typedef struct {
	ucontext_t caller, callee;
	char *base;    /* the mapping, guard page first */
	size_t size;   /* of the mapping */
	size_t guard;  /* one page, never writable: an overflow faults instead of overwriting memory */
	tq_call4 fn;
	void *a, *b, *c, *d;
	intptr_t result;
} tq_session_stack;

void
tq_session_stack_init(void *getdata, size_t offset)
{
	thread_data = (tq_thread_data) getdata;
	sp_offset = offset;
}

/* The stack pointer the kernel recorded for the calling thread, or 0 when it has no record. */
uintptr_t
tq_session_stack_recorded(void)
{
	char *record = thread_data ? thread_data() : NULL;
	return record ? *(uintptr_t *) (record + sp_offset) : 0;
}

static void
trampoline(unsigned int hi, unsigned int lo)
{
	/* makecontext passes int arguments only: the pointer arrives in two halves */
	tq_session_stack *s = (tq_session_stack *) (((uintptr_t) hi << 32) | (uintptr_t) lo);
	char *record = thread_data ? thread_data() : NULL;
	uintptr_t *sp = record ? (uintptr_t *) (record + sp_offset) : NULL;
	uintptr_t saved = sp ? *sp : 0;
	if (sp)
		*sp = (uintptr_t) __builtin_frame_address(0);
	s->result = s->fn(s->a, s->b, s->c, s->d);
	/* the call may have given this thread its first record, on this stack: leave that one alone */
	if (sp && thread_data() == record)
		*sp = saved;
	/* returning resumes s->caller (uc_link) */
}

tq_session_stack *
tq_session_stack_new(size_t size)
{
	size_t page = (size_t) sysconf(_SC_PAGESIZE);
	tq_session_stack *s = calloc(1, sizeof *s);
	if (s == NULL)
		return NULL;
	s->guard = page;
	s->size = ((size + page - 1) / page) * page + page;
	/* MAP_NORESERVE: only the pages a call touches take memory */
	s->base = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
		       -1, 0);
	if (s->base == MAP_FAILED) {
		free(s);
		return NULL;
	}
	if (mprotect(s->base, page, PROT_NONE) != 0) {
		munmap(s->base, s->size);
		free(s);
		return NULL;
	}
	return s;
}

/* fn(a, b, c, d) on the session's stack; returns its result (pointer-sized; an int result in its low bits). */
intptr_t
tq_session_stack_call(tq_session_stack *s, void *fn, void *a, void *b, void *c, void *d)
{
	uintptr_t self = (uintptr_t) s;
	s->fn = (tq_call4) fn;
	s->a = a;
	s->b = b;
	s->c = c;
	s->d = d;
	s->result = 0;
	if (getcontext(&s->callee) != 0)
		return 0;
	s->callee.uc_stack.ss_sp = s->base + s->guard;
	s->callee.uc_stack.ss_size = s->size - s->guard;
	s->callee.uc_link = &s->caller;
	makecontext(&s->callee, (void (*)(void)) trampoline, 2, (unsigned int) (self >> 32),
		    (unsigned int) (self & 0xffffffffu));
	if (swapcontext(&s->caller, &s->callee) != 0)
		return 0;
	return s->result;
}

void
tq_session_stack_free(tq_session_stack *s)
{
	if (s == NULL)
		return;
	munmap(s->base, s->size);
	free(s);
}
