/*
 * log_trace.c — the connections whose AMQP frames are traced, or not,
 * whatever the PROTOCOL module's level says: a management UPDATE of a
 * connection's enableProtocolTrace (junction/log.h, jn_log_conn_trace_set).
 *
 * A short list of connection ids and their choice under a mutex, and a generation number
 * that changes with it. An I/O loop reads the generation (one relaxed
 * load) on each pass over a connection and asks the list only when it
 * changed, so the list costs nothing while nobody uses it.
 */
#include <junction/log.h>

#include <pthread.h>

#define TRACED_MAX 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t traced[TRACED_MAX]; /* under lock */
static bool traced_on[TRACED_MAX];  /* under lock */
static size_t traced_count;         /* under lock */
atomic_uint jn_log_conn_trace_gen_; /* written under lock */

int jn_log_conn_trace_set(uint64_t conn_id, bool on)
{
    int rc = 0;
    pthread_mutex_lock(&lock);
    size_t i = 0;
    while (i < traced_count && traced[i] != conn_id)
        i++;
    if (i == traced_count && traced_count == TRACED_MAX) {
        rc = JN_EOVERFLOW;
    } else {
        if (i == traced_count)
            traced[traced_count++] = conn_id;
        traced_on[i] = on;
        atomic_fetch_add_explicit(&jn_log_conn_trace_gen_, 1, memory_order_release);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

void jn_log_conn_trace_forget(uint64_t conn_id)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < traced_count; i++)
        if (traced[i] == conn_id) {
            traced_count--;
            traced[i] = traced[traced_count];
            traced_on[i] = traced_on[traced_count];
            break;
        }
    pthread_mutex_unlock(&lock);
}

int jn_log_conn_traced(uint64_t conn_id)
{
    int found = -1;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < traced_count && found < 0; i++)
        if (traced[i] == conn_id)
            found = traced_on[i];
    pthread_mutex_unlock(&lock);
    return found;
}
