/*
 * io_timer.c — the I/O layer's one-shot timers (jn_io_timer_t,
 * io_private.h).
 *
 * Armed timers (a connector's retry, a connection's poll of a paused or
 * stalled link, the engine's idle-timeout tick, a connection's write-stall
 * check, a listener's pause after EMFILE) sit in a list sorted by deadline
 * under io->lock; the earliest deadline is published in io->timer_next,
 * which bounds the sleep of loop 0, and loop 0 fires what is due. Arming an
 * earlier timer than the earliest one notifies it. Arming happens on
 * connection open and loss, about once per idle period per connection for
 * the engine's idle clock (io_own.c, own_tick: a timer armed early enough
 * is left to fire early), and for large messages; the lock is never taken
 * per message.
 */
#include "io_private.h"

#include <junction/time.h>

#include <stdint.h>

/* ---- timers ------------------------------------------------------------ */

/* Publish the earliest deadline for loop 0; notify it when it moved
 * earlier. io->lock held. */
static void timer_next_update_locked(jn_io_t *io)
{
    int64_t next = io->timers ? io->timers->deadline : INT64_MAX;
    int64_t was = atomic_exchange_explicit(&io->timer_next, next, memory_order_acq_rel);
    if (next < was && io->loops)
        jn_io_loop_notify(&io->loops[0]);
}

static void timer_unlink_locked(jn_io_t *io, jn_io_timer_t *timer)
{
    for (jn_io_timer_t **p = &io->timers; *p; p = &(*p)->next) {
        if (*p == timer) {
            *p = timer->next;
            break;
        }
    }
    timer->next = NULL;
    timer->armed = false;
}

/* jn_io_timer_arm_at: fire timer->fire once at deadline_ms (jn_time_mono_ms
 * clock); re-arming an armed timer moves it. Any thread. */
void jn_io_timer_arm_at(jn_io_t *io, jn_io_timer_t *timer, int64_t deadline_ms)
{
    pthread_mutex_lock(&io->lock);
    jn_io_timer_arm_at_locked(io, timer, deadline_ms);
    pthread_mutex_unlock(&io->lock);
}

/* jn_io_timer_arm_at_locked: jn_io_timer_arm_at with io->lock held. */
void jn_io_timer_arm_at_locked(jn_io_t *io, jn_io_timer_t *timer, int64_t deadline_ms)
{
    if (timer->armed)
        timer_unlink_locked(io, timer);
    timer->deadline = deadline_ms;
    jn_io_timer_t **p = &io->timers;
    while (*p && (*p)->deadline <= timer->deadline)
        p = &(*p)->next;
    timer->next = *p;
    *p = timer;
    timer->armed = true;
    timer_next_update_locked(io);
}

/* jn_io_timer_arm: fire timer->fire once, delay_ms from now. Any thread. */
void jn_io_timer_arm(jn_io_t *io, jn_io_timer_t *timer, unsigned delay_ms)
{
    jn_io_timer_arm_at(io, timer, (int64_t)jn_time_mono_ms() + delay_ms);
}

/* jn_io_timer_cancel: disarm. Returns true when it was armed (its fire will
 * not run). Any thread. */
bool jn_io_timer_cancel(jn_io_t *io, jn_io_timer_t *timer)
{
    pthread_mutex_lock(&io->lock);
    bool was = timer->armed;
    if (was) {
        timer_unlink_locked(io, timer);
        timer_next_update_locked(io);
    }
    pthread_mutex_unlock(&io->lock);
    return was;
}

/* jn_io_timers_run: fire every due timer, one at a time, without the lock
 * (a fire may re-arm its own timer). Loop 0's thread. */
void jn_io_timers_run(jn_io_t *io)
{
    pthread_mutex_lock(&io->lock);
    for (;;) {
        jn_io_timer_t *t = io->timers;
        if (!t || t->deadline > (int64_t)jn_time_mono_ms())
            break;
        io->timers = t->next;
        t->next = NULL;
        t->armed = false;
        pthread_mutex_unlock(&io->lock);
        t->fire(t);
        pthread_mutex_lock(&io->lock);
    }
    timer_next_update_locked(io);
    pthread_mutex_unlock(&io->lock);
}

/* jn_io_timer_cancel_locked: jn_io_timer_cancel with io->lock held. */
void jn_io_timer_cancel_locked(jn_io_t *io, jn_io_timer_t *timer)
{
    if (!timer->armed)
        return;
    timer_unlink_locked(io, timer);
    timer_next_update_locked(io);
}

/* jn_io_timers_cancel_all: see io_private.h. An armed connection timer
 * holds a reference on its connection (taken when armed, dropped by its
 * fire or by a cancel that found it armed): a stop that only unlinked them
 * kept those connections from ever being freed, and jn_io_free then forced
 * them out. The references are dropped after the lock is released, since
 * the last one frees the connection, which takes the lock. The
 * connection timers are chained through their own `next` meanwhile: only
 * the loops arm, fire or cancel them, and the loops have ended. */
void jn_io_timers_cancel_all(jn_io_t *io)
{
    jn_io_timer_t *held = NULL;
    pthread_mutex_lock(&io->lock);
    while (io->timers) {
        jn_io_timer_t *t = io->timers;
        timer_unlink_locked(io, t);
        if (t->conn) {
            t->next = held;
            held = t;
        }
    }
    timer_next_update_locked(io);
    pthread_mutex_unlock(&io->lock);
    while (held) {
        jn_io_timer_t *t = held;
        held = t->next;
        t->next = NULL;
        jn_io_conn_unref(t->conn); /* the armed timer's */
    }
}
