/*
 * io_failover.c — a connector's failover list: the hosts a peer names in
 * its open's failover-server-list property (docs/protocol.md, "Open
 * properties"), which the connector tries in turn when its connection is
 * lost, as qdrouterd 1.19 does.
 *
 * The list is the connector's own host (from its configuration, always
 * first and never removed) followed by the backups peers sent. `cur` is
 * the one the connector uses now. When a connection is lost or an attempt
 * fails, the next attempt goes to the next entry, round robin. When a
 * peer's open carries the property, every backup but the one connected to
 * now is dropped and the peer's entries are added after it (an empty list
 * thus leaves the configured host and the current one); an open without
 * the property changes nothing (the peer's open is read by io_own_peer.c,
 * which hands its entries to jn_io_failover_replace_locked). Management
 * shows the list as the connector's failoverUrls, starting with the entry
 * used now.
 *
 * Threads: the list lives in the endpoint under jn_io_t.lock; the peer's
 * open is read on the loop that owns the connection, the next target on
 * the connector thread, the rendering on any thread.
 */
#include "io_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* At most this many backups are kept from one peer's list, and a field
 * longer than JN_IO_FAILOVER_FIELD_MAX octets makes its entry ignored: a
 * peer cannot make the connector hold an unbounded list. */
#define JN_IO_FAILOVER_MAX       32u
#define JN_IO_FAILOVER_FIELD_MAX (JN_IO_FAILOVER_HOST_MAX - 1u)

void jn_io_failover_url_free(jn_io_failover_url_t *u)
{
    free(u->scheme);
    free(u->host);
    free(u->port);
    memset(u, 0, sizeof *u);
}

void jn_io_failover_free(jn_io_failover_t *f)
{
    for (unsigned i = 0; i < f->n; i++)
        jn_io_failover_url_free(&f->urls[i]);
    free(f->urls);
    memset(f, 0, sizeof *f);
}

/* Replace f's backups: keep the one in use (cur), then add the n in add
 * (taken over: their strings become f's). Returns 0 or JN_ENOMEM (f then
 * unchanged, add's strings freed). jn_io_t.lock held. */
int jn_io_failover_replace_locked(jn_io_failover_t *f, jn_io_failover_url_t *add, unsigned n)
{
    bool keep = f->cur > 0;
    jn_io_failover_url_t *v = calloc((size_t)n + 1, sizeof *v);
    if (!v) {
        for (unsigned i = 0; i < n; i++)
            jn_io_failover_url_free(&add[i]);
        return JN_ENOMEM;
    }
    unsigned k = 0;
    if (keep) {
        v[k++] = f->urls[f->cur - 1];
        memset(&f->urls[f->cur - 1], 0, sizeof f->urls[0]);
    }
    for (unsigned i = 0; i < n; i++)
        v[k++] = add[i];
    jn_io_failover_free(f);
    f->urls = v;
    f->n = k;
    f->cur = keep ? 1 : 0;
    return 0;
}

void jn_io_failover_advance_locked(jn_io_endpoint_t *ep)
{
    jn_io_failover_t *f = &ep->failover;
    if (f->n)
        f->cur = (f->cur + 1) % (f->n + 1);
}

void jn_io_failover_target_locked(const jn_io_endpoint_t *ep, char *host, size_t hcap,
                                  char *port, size_t pcap)
{
    const jn_io_failover_t *f = &ep->failover;
    if (f->cur == 0 || f->cur > f->n) {
        snprintf(host, hcap, "%s", ep->cfg.host);
        snprintf(port, pcap, "%s", ep->cfg.port);
        return;
    }
    const jn_io_failover_url_t *u = &f->urls[f->cur - 1];
    const char *h = u->host;
    size_t len = strlen(h);
    if (len >= 2 && h[0] == '[' && h[len - 1] == ']') { /* an IPv6 literal in brackets */
        h++;
        len -= 2;
    }
    snprintf(host, hcap, "%.*s", (int)len, h);
    snprintf(port, pcap, "%s", u->port ? u->port : "amqp");
}

/* Append "[scheme://]host[:port]" to buf (cap octets, at *at). */
static void render_one(char *buf, size_t cap, size_t *at, const char *scheme, const char *host,
                       const char *port)
{
    if (*at >= cap)
        return;
    int n = snprintf(buf + *at, cap - *at, "%s%s%s%s%s", scheme ? scheme : "",
                     scheme ? "://" : "", host, port ? ":" : "", port ? port : "");
    if (n > 0)
        *at += (size_t)n;
}

int jn_io_connector_failover_urls(jn_io_t *io, const char *name, char *buf, size_t cap)
{
    int rc = JN_ENOENT;
    if (!cap)
        return JN_EINVAL;
    buf[0] = '\0';
    pthread_mutex_lock(&io->lock);
    for (jn_io_endpoint_t *ep = io->endpoints; ep && rc == JN_ENOENT; ep = ep->next) {
        if (ep->is_listener || atomic_load(&ep->removed) || !ep->cfg.name || !name ||
            strcmp(ep->cfg.name, name) != 0)
            continue;
        const jn_io_failover_t *f = &ep->failover;
        if (!f->n) {
            rc = 0; /* no backups: nothing to show (1.19) */
            break;
        }
        size_t at = 0;
        for (unsigned k = 0; k <= f->n; k++) {
            unsigned i = (f->cur + k) % (f->n + 1);
            if (k)
                render_one(buf, cap, &at, NULL, ", ", NULL);
            if (i == 0)
                render_one(buf, cap, &at, ep->cfg.ssl_profile ? "amqps" : "amqp",
                           ep->cfg.host[0] ? ep->cfg.host : "127.0.0.1", ep->cfg.port);
            else
                render_one(buf, cap, &at, f->urls[i - 1].scheme, f->urls[i - 1].host,
                           f->urls[i - 1].port);
        }
        rc = at < cap ? 0 : JN_EINVAL;
        if (rc != 0)
            buf[0] = '\0';
    }
    pthread_mutex_unlock(&io->lock);
    return rc;
}
