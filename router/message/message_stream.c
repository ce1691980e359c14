/*
 * message_stream.c — streaming a large message through the router with
 * bounded memory: how far every outgoing copy has got, and releasing the
 * buffers all of them have passed while the message is still arriving
 * (junction/message.h, "streaming").
 *
 * The picture, for one message:
 *
 *   head ... keep | released ... | B_k ... B_n (tail)
 *   [pinned      ]                 ^ slowest copy's buffer      ^ writer
 *
 * The pinned prefix (every buffer up to the one holding the parser's next
 * section, i.e. header, annotations and properties) is never released:
 * the router annotations, `to` and each copy's replaced range point into
 * it. After it, buffers that every copy has passed are unlinked from the
 * chain (keep->next jumps over them) and unreferenced.
 *
 * Who may release what, and why it is safe without a lock:
 *   - Each copy (jn_message_out_t on some sending thread) publishes, with a
 *     release store in its own slot, the content offset of the buffer its
 *     cursor holds. The cursor never moves backwards, so every buffer that
 *     ends at or before that offset is behind it for good.
 *   - Only the writer (the receiving thread) unlinks and releases, and only
 *     once the set of copies is final (the core says how many, after the
 *     last one was handed out: no copy can start later and need octet 0)
 *     and every one of them has registered. It never releases the tail
 *     buffer (it is still writing into it) nor anything a copy has not
 *     passed, so no reader ever follows a pointer into a released buffer.
 *   - A message with more copies than slots is not tracked (nothing is
 *     released; the receiver is not held back).
 *
 * The receiving side calls jn_message_stream_trim() as it reads: it
 * releases what it can and returns the backlog (octets received that the
 * slowest registered copy has not passed), which the I/O layer compares
 * with its high- and low-water marks to pause and resume reading.
 *
 * Holding (the second half of this file): once every copy has ended, the
 * whole content goes, even though deliveries still reference the message
 * until they are settled. One atomic counter, the gate, decides when:
 *
 *   gate = BIAS + 1                  at creation (1: the writer's token)
 *   jn_message_stream_set_copies(n)  gate += n - BIAS
 *   jn_message_stream_copy_end       gate -= 1
 *   jn_message_stream_writer_done    gate -= 1
 *
 * Before the set of copies is final the gate stays near BIAS, however many
 * copies ended early; after it, it reaches 0 exactly when the writer is
 * done and all n copies ended, in whatever order those came. The call that
 * makes it 0 (an acq_rel read-modify-write, so it sees every other party's
 * last access to the octets) releases the buffers. Every party holds a
 * reference on the message when it calls, so the release never races the
 * free. A delivery waiting for credit, or being re-routed after its
 * consumer went, keeps the set of copies open (the core calls
 * set_copies only once every copy is handed out), so its content stays.
 *
 * The writer charges the octets the message still holds to its link's
 * budget when it is done; the release (or the free, for a message that
 * never got there) gives them back. The budget's waker is called when it
 * falls below the low-water mark while the link waits: the lock it takes
 * then only orders the call with jn_rx_budget_set_waker(NULL) at link
 * teardown, and is taken once per stop, never per message.
 */
#include "message_private.h"

#include <pthread.h>
#include <stdlib.h>

static inline void gate_add(jn_message_t *m, long long delta);

void jn_message_stream_set_copies(jn_message_t *m, unsigned copies)
{
    atomic_store_explicit(&m->stream_copies, (int)copies, memory_order_release);
    gate_add(m, (long long)copies - JN_STREAM_GATE_BIAS);
}

int jn_message_stream_copy_begin(jn_message_t *m)
{
    unsigned slot = atomic_fetch_add_explicit(&m->stream_registered, 1, memory_order_acq_rel);
    return slot < JN_MESSAGE_STREAM_SLOTS ? (int)slot : -1;
}

void jn_message_stream_copy_progress(jn_message_t *m, int slot, const jn_message_out_t *o)
{
    if (slot >= 0)
        atomic_store_explicit(&m->stream_pos[slot], o->buffer ? o->buffer_start : 0,
                              memory_order_release);
}

void jn_message_stream_copy_end(jn_message_t *m, int slot)
{
    if (slot >= 0)
        atomic_store_explicit(&m->stream_pos[slot], SIZE_MAX, memory_order_release);
    gate_add(m, -1);
}

/* Find the last pinned buffer once it has a successor (its size is then
 * final). Writer thread. */
static bool find_keep(jn_message_t *m)
{
    if (m->stream_keep)
        return true;
    jn_buffer_t *b = atomic_load_explicit(&m->head, memory_order_acquire);
    size_t start = 0;
    while (b) {
        jn_buffer_t *next = jn_buffer_next(b);
        size_t end = start + jn_buffer_size(b);
        if (!next)
            return false; /* the pinned part reaches the tail: nothing to do */
        if (m->pos < end) {
            m->stream_keep = b;
            m->stream_keep_end = end;
            return true;
        }
        start = end;
        b = next;
    }
    return false;
}

/* Release the buffers after the pinned prefix that end at or before
 * boundary (content offset), never the tail. Writer thread. */
static void release_before(jn_message_t *m, size_t boundary)
{
    if (!find_keep(m))
        return;
    jn_buffer_t *keep = m->stream_keep;
    jn_buffer_t *first = jn_buffer_next(keep);
    jn_buffer_t *b = first;
    size_t start = m->stream_keep_end;
    while (b && b != m->tail) {
        size_t end = start + jn_buffer_size(b);
        if (end > boundary)
            break;
        start = end;
        b = jn_buffer_next(b);
    }
    if (b == first)
        return;
    /* Unlink first: no reader is at or before these buffers any more. */
    atomic_store_explicit(&keep->next, b, memory_order_release);
    m->stream_keep_end = start;
    while (first != b) {
        jn_buffer_t *next = jn_buffer_next(first);
        m->stream_released += jn_buffer_size(first);
        jn_buffer_unref(first);
        first = next;
    }
}

size_t jn_message_stream_trim(jn_message_t *m)
{
    int copies = atomic_load_explicit(&m->stream_copies, memory_order_acquire);
    if (copies < 0)
        return 0; /* not final yet: do not hold the receiver back */
    unsigned registered = atomic_load_explicit(&m->stream_registered, memory_order_acquire);
    if (registered > JN_MESSAGE_STREAM_SLOTS)
        return 0; /* untracked */
    size_t length = atomic_load_explicit(&m->length, memory_order_relaxed);
    size_t slowest = SIZE_MAX;
    for (unsigned i = 0; i < registered; i++) {
        size_t pos = atomic_load_explicit(&m->stream_pos[i], memory_order_acquire);
        if (pos < slowest)
            slowest = pos;
    }
    if (slowest > length)
        slowest = length; /* no copy left (or none at all): all passed */
    if (registered == (unsigned)copies)
        release_before(m, slowest);
    return length - slowest;
}

/* ---- holding ------------------------------------------------------------ */

struct jn_rx_budget {
    /* immutable */
    size_t high, low;
    /* atomics, any thread */
    atomic_size_t held;
    atomic_uint refcount;
    atomic_bool waiting; /* stopped: wake below low (exchanged by the waker) */
    /* lock: wake, ctx (see the top comment: never per message) */
    pthread_mutex_t lock;
    void (*wake)(void *ctx);
    void *ctx;
};

jn_rx_budget_t *jn_rx_budget_new(size_t high, size_t low)
{
    jn_rx_budget_t *b = calloc(1, sizeof *b); /* per link, not per message */
    if (!b)
        return NULL;
    if (pthread_mutex_init(&b->lock, NULL) != 0) {
        free(b);
        return NULL;
    }
    b->high = high;
    b->low = low < high ? low : high;
    atomic_init(&b->held, 0);
    atomic_init(&b->refcount, 1);
    atomic_init(&b->waiting, false);
    return b;
}

static jn_rx_budget_t *budget_ref(jn_rx_budget_t *b)
{
    atomic_fetch_add_explicit(&b->refcount, 1, memory_order_relaxed);
    return b;
}

void jn_rx_budget_unref(jn_rx_budget_t *b)
{
    if (!b)
        return;
    unsigned before = atomic_fetch_sub_explicit(&b->refcount, 1, memory_order_acq_rel);
    JN_CHECK(before > 0);
    if (before != 1)
        return;
    pthread_mutex_destroy(&b->lock);
    free(b);
}

void jn_rx_budget_set_waker(jn_rx_budget_t *b, void (*wake)(void *ctx), void *ctx)
{
    if (!b)
        return;
    pthread_mutex_lock(&b->lock);
    b->wake = wake;
    b->ctx = wake ? ctx : NULL;
    pthread_mutex_unlock(&b->lock);
}

/* Sequentially consistent with the waker's side (give_back): either the
 * stopping thread sees the held count below low, or the giver sees
 * `waiting` set, so a stop is never left without its wake. */
bool jn_rx_budget_stop(jn_rx_budget_t *b)
{
    if (!b || atomic_load_explicit(&b->held, memory_order_relaxed) <= b->high)
        return false;
    atomic_store(&b->waiting, true);
    if (atomic_load(&b->held) < b->low && atomic_exchange(&b->waiting, false))
        return false; /* fell meanwhile, and nobody took the wake: go on */
    return true;
}

bool jn_rx_budget_waiting(jn_rx_budget_t *b)
{
    return b && atomic_load(&b->waiting);
}

size_t jn_rx_budget_held(jn_rx_budget_t *b)
{
    return b ? atomic_load_explicit(&b->held, memory_order_relaxed) : 0;
}

static void give_back(jn_rx_budget_t *b, size_t n)
{
    size_t before = atomic_fetch_sub(&b->held, n);
    JN_CHECK(before >= n);
    if (before - n < b->low && atomic_load(&b->waiting) && atomic_exchange(&b->waiting, false)) {
        pthread_mutex_lock(&b->lock);
        if (b->wake)
            b->wake(b->ctx);
        pthread_mutex_unlock(&b->lock);
    }
}

/* Give the message's charge back and drop its budget reference. */
static void uncharge(jn_message_t *m)
{
    jn_rx_budget_t *b = m->budget;
    if (!b)
        return;
    m->budget = NULL;
    give_back(b, m->charged);
    m->charged = 0;
    jn_rx_budget_unref(b);
}

/* Every party is done with the octets: release them all. The caller holds
 * a reference on m; nobody reads the buffers any more (top comment). */
__attribute__((noinline)) static void release_content(jn_message_t *m)
{
    jn_buffer_t *b = atomic_exchange_explicit(&m->head, NULL, memory_order_acq_rel);
    m->tail = NULL;
    m->stream_keep = NULL;
    while (b) {
        jn_buffer_t *next = jn_buffer_next(b);
        jn_buffer_unref(b);
        b = next;
    }
    uncharge(m);
}

static inline void gate_add(jn_message_t *m, long long delta)
{
    long long before = atomic_fetch_add_explicit(&m->stream_gate, delta, memory_order_acq_rel);
    JN_CHECK(before + delta >= 0);
    if (before + delta == 0)
        release_content(m);
}

void jn_message_stream_writer_done(jn_message_t *m, jn_rx_budget_t *b)
{
    size_t length = atomic_load_explicit(&m->length, memory_order_relaxed);
    size_t held = length > m->stream_released ? length - m->stream_released : 0;
    if (b && held > 0) {
        m->budget = budget_ref(b);
        m->charged = held;
        atomic_fetch_add_explicit(&b->held, held, memory_order_relaxed);
    }
    gate_add(m, -1);
}

void jn_message_stream_fini(jn_message_t *m)
{
    uncharge(m);
}
