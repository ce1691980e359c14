/*
 * queue.c — intrusive MPSC queue (junction/queue.h).
 *
 * The nodes form a singly linked list from `tail` (oldest, the consumer's
 * end) to `head` (newest, the producers' end). The list is never empty: a
 * stub node belongs to the queue and is re-linked at the back whenever the
 * consumer would otherwise have to hand out the last node, whose `next` a
 * producer may be about to write.
 *
 * Push is two steps: swap `head` to the new node (this orders producers),
 * then link the previous head to it. Between the two steps the list is
 * briefly cut: nodes behind the cut are not reachable from `tail` yet. The
 * consumer detects this (the node it holds has no `next` but is not `head`)
 * and reports "nothing visible" instead of waiting.
 *
 * The pending count (see queue.h for the wakeup protocol) is separate from
 * the list: it is incremented before the swap, so it is never below the
 * number of linked, unpopped nodes.
 *
 * Memory order: the release store that links a node pairs with the
 * consumer's acquire load of `next`, so the node's contents are visible to
 * the consumer. The exchange on `head` is acq_rel so the linking store
 * orders after whatever the previous producer did to its node.
 */
#include <junction/queue.h>

void jn_mpsc_init(jn_mpsc_t *q)
{
    atomic_init(&q->stub.next, NULL);
    atomic_init(&q->head, &q->stub);
    atomic_init(&q->pending, 0);
    q->tail = &q->stub;
}

/* Append node to the list (no counting). Any thread. */
static inline void link_back(jn_mpsc_t *q, jn_mpsc_node_t *node)
{
    atomic_store_explicit(&node->next, NULL, memory_order_relaxed);
    jn_mpsc_node_t *prev = atomic_exchange_explicit(&q->head, node, memory_order_acq_rel);
    /* The cut: from here until the next store, node is unreachable. */
    atomic_store_explicit(&prev->next, node, memory_order_release);
}

bool jn_mpsc_push(jn_mpsc_t *q, jn_mpsc_node_t *node)
{
    /* seq_cst: the core's "awake" handshake (core.c) pairs this with a
     * seq_cst load of another variable; on x86 it is the same lock xadd */
    size_t before = atomic_fetch_add_explicit(&q->pending, 1, memory_order_seq_cst);
    link_back(q, node);
    return before == 0;
}

/* Unlink the front node without touching the count. NULL when nothing is
 * visible. Consumer only. */
static jn_mpsc_node_t *unlink_front(jn_mpsc_t *q)
{
    jn_mpsc_node_t *tail = q->tail;
    jn_mpsc_node_t *next = atomic_load_explicit(&tail->next, memory_order_acquire);

    if (tail == &q->stub) {
        if (next == NULL)
            return NULL; /* empty, or the first node is behind a cut */
        q->tail = next;
        tail = next;
        next = atomic_load_explicit(&tail->next, memory_order_acquire);
    }
    if (next != NULL) {
        q->tail = next;
        return tail;
    }
    /* tail is the last linked node. If it is not the last pushed, a
     * producer is between its swap and its link: wait for it. */
    if (tail != atomic_load_explicit(&q->head, memory_order_acquire))
        return NULL;
    /* Put the stub behind tail, so that tail can be handed out. */
    link_back(q, &q->stub);
    next = atomic_load_explicit(&tail->next, memory_order_acquire);
    if (next != NULL) {
        q->tail = next; /* the stub, or a node pushed just before it */
        return tail;
    }
    return NULL; /* a producer swapped head in between and has not linked */
}

jn_mpsc_node_t *jn_mpsc_pop(jn_mpsc_t *q)
{
    jn_mpsc_node_t *node = unlink_front(q);
    if (node)
        atomic_fetch_sub_explicit(&q->pending, 1, memory_order_acq_rel);
    return node;
}

size_t jn_mpsc_drain(jn_mpsc_t *q, jn_mpsc_node_t **out, size_t max)
{
    size_t n = 0;
    while (n < max) {
        jn_mpsc_node_t *node = unlink_front(q);
        if (!node)
            break;
        out[n++] = node;
    }
    if (n > 0)
        atomic_fetch_sub_explicit(&q->pending, n, memory_order_acq_rel);
    return n;
}

bool jn_mpsc_empty(jn_mpsc_t *q)
{
    return atomic_load_explicit(&q->pending, memory_order_acquire) == 0;
}
