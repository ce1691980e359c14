/*
 * junction/queue.h — an intrusive multi-producer, single-consumer lock-free
 * queue, with an empty→non-empty signal for waking a sleeping consumer.
 *
 * It carries the workers' actions to the core thread and the core's work to
 * each connection (docs/design.md, "Layers"). The caller embeds a jn_mpsc_node_t
 * in its own struct and recovers the struct from the node (offsetof); the
 * queue never allocates.
 *
 * Threads: jn_mpsc_push may be called by any number of threads at once. Every
 * other function except jn_mpsc_init belongs to the one consumer thread.
 * No function blocks or takes a lock.
 *
 * Wakeup protocol. The queue keeps a count of nodes pushed and not yet
 * popped ("pending"). A producer increments it BEFORE linking its node;
 * jn_mpsc_push returns true exactly when that increment found 0, and then
 * that producer (and no other) must wake the consumer. The consumer
 * decrements the count for the nodes it pops, and may go to sleep only
 * after it has seen jn_mpsc_empty() return true (pending == 0):
 *   - if pending was 0 when it looked, the next push finds 0 and wakes it;
 *   - if a push came first, pending was not 0, so the consumer did not sleep.
 * So no wakeup is lost, and there is exactly one per empty→non-empty
 * transition (never more wakeups than pushes). The wakeup itself must be
 * latching — an eventfd, a semaphore, a flag under a mutex with a condition
 * variable, an I/O loop's eventfd (router/io/io_loop.c) — so that a wake sent
 * between the consumer's check and its sleep is not dropped.
 *
 * A producer mid-push (counted, not yet linked) makes jn_mpsc_pop return
 * NULL while jn_mpsc_empty() is false: the node is not lost, it becomes
 * visible when that producer executes its next store. The consumer should
 * then retry (yielding the CPU); it must not sleep, since the producer that
 * counted that node will not send a wakeup if the count was already above
 * 0.
 */
#ifndef JUNCTION_QUEUE_H
#define JUNCTION_QUEUE_H 1

#include <junction/common.h>
#include <stdatomic.h>

/* A link embedded in the caller's struct. Owned by the queue from
 * jn_mpsc_push until jn_mpsc_pop/jn_mpsc_drain hands it back; the caller must
 * not touch it (or free its struct) in between. */
typedef struct jn_mpsc_node {
    _Atomic(struct jn_mpsc_node *) next;
} jn_mpsc_node_t;

/* The queue. Its fields are private to queue.c; the struct is visible only
 * so that it can be embedded (in a connection, in the core). It needs no
 * alignment beyond a pointer's: the padding keeps the producers' fields and
 * the consumer's fields at least a cache line apart.
 *   head, pending: atomic, written by producers (pending also by the consumer).
 *   tail: the consumer thread only.  stub.next: atomic (producers link to it). */
typedef struct jn_mpsc {
    _Atomic(jn_mpsc_node_t *) head; /* last node pushed */
    atomic_size_t pending;          /* pushed (or being pushed), not yet popped */
    char pad_[64];
    jn_mpsc_node_t *tail; /* next node to pop (or the stub) */
    jn_mpsc_node_t stub;  /* placeholder that keeps the list non-empty */
} jn_mpsc_t;

/* jn_mpsc_init: make q an empty queue. Call before any other thread can see
 * q (the thread that publishes q afterwards provides the ordering). */
void jn_mpsc_init(jn_mpsc_t *q);

/* jn_mpsc_push: append node (embedded in the caller's struct; its link
 * is overwritten) at the back of q. Returns true when q was empty (pending
 * went 0 → 1): the caller must then wake the consumer, once. Returns false
 * otherwise (the consumer is awake or already has a wakeup coming). Never
 * fails. Any thread. Hot path: one atomic add, one atomic exchange and one
 * release store. Everything the producer wrote to the node's struct before
 * the push is visible to the consumer after it pops the node. */
bool jn_mpsc_push(jn_mpsc_t *q, jn_mpsc_node_t *node);

/* jn_mpsc_pop: remove and return the node at the front of q, or NULL when q
 * is empty or when the next node's producer is mid-push (see the header
 * comment: check jn_mpsc_empty before sleeping). Consumer thread only. */
jn_mpsc_node_t *jn_mpsc_pop(jn_mpsc_t *q);

/* jn_mpsc_drain: pop up to max nodes into out[0..max), in push order per
 * producer, and return how many (0 when none is visible). Costs one atomic
 * update of the count for the whole batch, where pop costs one per node.
 * Consumer thread only. */
size_t jn_mpsc_drain(jn_mpsc_t *q, jn_mpsc_node_t **out, size_t max);

/* jn_mpsc_empty: true when every node pushed so far has been popped (no
 * producer is mid-push). When the consumer sees true it may sleep: the next
 * push returns true to its producer, which wakes it. Consumer thread only
 * (other threads get a momentary, racy answer). */
bool jn_mpsc_empty(jn_mpsc_t *q);

#endif /* JUNCTION_QUEUE_H */
