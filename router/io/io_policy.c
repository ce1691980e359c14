/*
 * io_policy.c — the I/O layer's side of the vhost policy (docs/design.md
 * "Policy"): it gathers the facts of a connection's Open and of each
 * attach (user, Open hostname, remote host, address, role, capabilities,
 * links open), asks the policy layer (junction/policy.h, which owns the
 * vhost table, its counts and the decisions), and acts: closes the
 * connection, refuses the link with the condition, applies the user
 * group's transport settings, checks an anonymous sender's messages'
 * targets, and logs each denial as 1.19 does. The table has its own lock,
 * taken once per incoming client Open and once per close, and for a
 * denial (to count it) — never per message allowed.
 */
#include "io_own.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <junction/iterator.h>
#include <junction/log.h>
#include <junction/message.h>

void jn_io_vhost_policy(jn_io_t *io, jn_policy_t *policy)
{
    io->policy = policy;
}

/* The remote host of conn: its address without the port ("1.2.3.4:5" ->
 * "1.2.3.4", "[::1]:5" -> "::1"). */
static void remote_host(const jn_io_conn_t *conn, char *out, size_t cap)
{
    const char *h = conn->host;
    const char *colon = strrchr(h, ':');
    size_t len = colon ? (size_t)(colon - h) : strlen(h);
    if (len >= 2 && h[0] == '[' && h[len - 1] == ']') {
        h++;
        len -= 2;
    }
    if (len >= cap)
        len = cap - 1;
    memcpy(out, h, len);
    out[len] = '\0';
}

/* conn governed by admission a (NULL: not). */
static void hold_admission(jn_io_conn_t *conn, jn_policy_admission_t *a)
{
    conn->vhost_adm = a;
    conn->vhost_rules = a ? &a->rules : NULL;
    conn->vhost_user = a ? a->user : NULL;
    conn->vhost_host = a ? a->rhost : NULL;
}

/* A connector's connection under its policyVhost: the vhost's
 * "$connector" group's link rules, not counted. False (logged) when the
 * vhost or its group is missing or memory is short. */
static bool admit_connector_IO(jn_io_conn_t *conn, const char *vhost)
{
    JN_ASSERT_IO(conn);
    jn_policy_admission_t *a = NULL;
    const char *why = jn_policy_admit_connector(conn->io->policy, vhost, &a);
    if (why) {
        JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_ERROR,
               JN_IO_CONN_FMT " DENY connector connection to %s, policyVhost '%s': %s", conn->id,
               conn->host, vhost, why);
        return false;
    }
    hold_admission(conn, a);
    return true;
}

bool jn_io_vhost_admit_IO(jn_io_conn_t *conn, const char *user, const char *hostname)
{
    JN_ASSERT_IO(conn);
    jn_io_t *io = conn->io;
    if (!io->policy)
        return true;
    if (!conn->incoming) {
        const char *pv = conn->endpoint->cfg.policy_vhost;
        jn_conn_role_t role = conn->endpoint->cfg.role;
        if (!pv || !pv[0] || (role != JN_ROLE_NORMAL && role != JN_ROLE_ROUTE_CONTAINER))
            return true;
        return admit_connector_IO(conn, pv);
    }
    if (conn->endpoint->cfg.role != JN_ROLE_NORMAL)
        return true;
    if (!user || !user[0])
        user = "anonymous"; /* as 1.19 checks an unauthenticated client */
    char rhost[300], shown[256];
    remote_host(conn, rhost, sizeof rhost);
    jn_policy_open_facts_t f = {.user = user, .hostname = hostname, .rhost = rhost};
    jn_policy_admission_t *a = NULL;
    const char *why = jn_policy_admit(io->policy, &f, &a, shown, sizeof shown);
    if (!why) {
        hold_admission(conn, a);
        return true;
    }
    pthread_mutex_lock(&io->lock);
    io->policy_denied++; /* the policy entity's connectionsDenied, as 1.19 */
    pthread_mutex_unlock(&io->lock);
    JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_INFO,
           "DENY AMQP Open for user '%s', rhost '%s', vhost '%s': %s (connection %s)", user, rhost,
           shown, why, conn->host);
    return false;
}

void jn_io_vhost_uncount_locked(jn_io_t *io, jn_io_conn_t *conn)
{
    if (conn->vhost_adm)
        jn_policy_release(io->policy, conn->vhost_adm);
    hold_admission(conn, NULL);
}

/* ---- link rules ---------------------------------------------------------- */

const char *jn_io_vhost_link_judge_IO(jn_io_conn_t *conn, const jn_io_vhost_attach_t *a,
                                      uint64_t *max_message_size)
{
    JN_ASSERT_IO(conn);
    const jn_policy_rules_t *r = conn->vhost_rules;
    if (!r)
        return NULL;
    const char *user = conn->vhost_user ? conn->vhost_user : "anonymous";
    jn_policy_link_facts_t f = {.sender = a->incoming,
                                .address = a->address,
                                .dynamic = a->dynamic,
                                .user = user,
                                .senders = conn->policy_senders,
                                .receivers = conn->policy_receivers,
                                .waypoint = a->waypoint,
                                .fallback = a->fallback};
    bool limit;
    const char *why = jn_policy_link_denial(r, &f, &limit);
    if (!why) {
        if (a->incoming)
            conn->policy_senders++;
        else
            conn->policy_receivers++;
        if (a->incoming && r->has_max_message_size)
            *max_message_size = r->max_message_size;
        return NULL;
    }
    /* the client's sender is the vhost's senderDenied, as 1.19 counts it */
    jn_policy_note_denial(conn->io->policy, r->vhost,
                          a->incoming ? JN_POLICY_DENIED_SENDER : JN_POLICY_DENIED_RECEIVER);
    JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_INFO,
           JN_IO_LINK_FMT
           " DENY AMQP Attach %s for user '%s', rhost '%s', vhost '%s', address '%s': %s",
           conn->id, a->link_id, a->incoming ? "sender" : "receiver", user,
           conn->vhost_host ? conn->vhost_host : conn->host, r->vhost, a->address ? a->address : "",
           why);
    return limit ? "amqp:resource-limit-exceeded" : "amqp:unauthorized-access";
}

/* The address it names, read as the core routes on it (scheme and host
 * removed), copied to buf: allowed as a target by r for user? False when it
 * does not fit buf or holds a NUL octet (no rule could name it). */
static bool relay_target_allowed(const jn_policy_rules_t *r, jn_iter_t *it, const char *user,
                                 char *buf, size_t cap)
{
    jn_iter_set_view(it, JN_VIEW_ADDRESS);
    size_t len = jn_iter_copy_string(it, buf, cap);
    if (len >= cap || memchr(buf, '\0', len))
        return false;
    return jn_policy_target_allowed(r, buf, user);
}

/* A message of link link_id on conn refused by r: counted in the vhost's
 * senderDenied, the first on the link logged (*logged: a flood writes one
 * line). why says which rule; addr is the address refused. */
static void transfer_denied_IO(jn_io_conn_t *conn, uint64_t link_id, bool *logged,
                               const jn_policy_rules_t *r, const char *user, const char *addr,
                               const char *why)
{
    JN_ASSERT_IO(conn);
    jn_policy_note_denial(conn->io->policy, r->vhost, JN_POLICY_DENIED_TRANSFER);
    if (!*logged) { /* a flood logs one line */
        *logged = true;
        JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_INFO,
               JN_IO_LINK_FMT " DENY AMQP Transfer for user '%s', rhost '%s', vhost '%s', "
                              "address '%s': %s (further denials on this link are not "
                              "logged)",
               conn->id, link_id, user, conn->vhost_host ? conn->vhost_host : conn->host, r->vhost,
               addr, why);
    }
}

bool jn_io_vhost_relay_judge_IO(jn_io_conn_t *conn, uint64_t link_id, bool *logged,
                                const jn_message_t *m)
{
    JN_ASSERT_IO(conn);
    const jn_policy_rules_t *r = conn->vhost_rules;
    if (!r) /* dropped as the transport closed: nothing more goes through */
        return false;
    const char *user = conn->vhost_user ? conn->vhost_user : "anonymous";
    char addr[1024];
    jn_iter_t it;
    int rc = jn_message_to(m, &it);
    bool ok = rc == JN_ENOENT || (rc == 0 && relay_target_allowed(r, &it, user, addr, sizeof addr));
    if (rc != 0)
        snprintf(addr, sizeof addr, "%s", rc == JN_ENOENT ? "" : "(unreadable)");
    /* the core routes on the to-override instead when the connection keeps
     * inbound router annotations: both must pass */
    const jn_ra_t *ra = conn->strip_inbound ? NULL : jn_message_annotations(m);
    if (ok && ra && ra->has_to) {
        it = ra->to;
        ok = relay_target_allowed(r, &it, user, addr, sizeof addr);
    }
    if (!ok)
        transfer_denied_IO(conn, link_id, logged, r, user, addr,
                           "target not allowed by the group's targets/targetPattern");
    return ok;
}

/* The octets of it (a JN_VIEW_ADDRESS view) name a management node: the
 * address is `$management` or ends in `/$management`. */
static bool view_names_management(jn_iter_t *it)
{
    static const char node[] = "$management";
    const size_t n = sizeof node - 1;
    char buf[1024];
    size_t len = jn_iter_copy_string(it, buf, sizeof buf);
    if (len >= sizeof buf || len < n || memcmp(buf + len - n, node, n) != 0)
        return false;
    return len == n || buf[len - n - 1] == '/';
}

bool jn_io_vhost_names_management(const char *address)
{
    if (!address)
        return false;
    jn_iter_t it;
    jn_iter_init_string(&it, address, JN_VIEW_ADDRESS);
    return view_names_management(&it);
}

/* A request of an anonymous sender's message m goes to a management node:
 * its properties.to or, when honoured, its to-override names one. */
static bool relay_to_management(const jn_io_conn_t *conn, const jn_message_t *m)
{
    jn_iter_t it;
    if (jn_message_to(m, &it) == 0) {
        jn_iter_set_view(&it, JN_VIEW_ADDRESS);
        if (view_names_management(&it))
            return true;
    }
    const jn_ra_t *ra = conn->strip_inbound ? NULL : jn_message_annotations(m);
    if (!ra || !ra->has_to)
        return false;
    it = ra->to;
    jn_iter_set_view(&it, JN_VIEW_ADDRESS);
    return view_names_management(&it);
}

/* reply (NUL-terminated, a JN_VIEW_ADDRESS copy) is the address of one of
 * conn's dynamic receivers: a reply address the router made for it. */
static bool own_dynamic_address(const jn_io_conn_t *conn, const char *reply)
{
    return jn_io_own_dynamic_address_IO(conn, reply); /* io_own_link.c */
}

bool jn_io_vhost_same_address(const char *a, const char *reply)
{
    if (!a)
        return false;
    char buf[1024];
    jn_iter_t it;
    jn_iter_init_string(&it, a, JN_VIEW_ADDRESS);
    size_t len = jn_iter_copy_string(&it, buf, sizeof buf);
    return len < sizeof buf && strcmp(buf, reply) == 0;
}

bool jn_io_vhost_reply_judge_IO(jn_io_conn_t *conn, uint64_t link_id, bool *logged,
                                bool to_management, const jn_message_t *m)
{
    JN_ASSERT_IO(conn);
    const jn_policy_rules_t *r = conn->vhost_rules;
    if (!r) /* dropped as the transport closed: nothing more goes through */
        return false;
    if (!to_management && !relay_to_management(conn, m))
        return true;
    jn_iter_t it;
    int rc = jn_message_reply_to(m, &it);
    if (rc == JN_ENOENT)
        return true; /* no answer is sent */
    const char *user = conn->vhost_user ? conn->vhost_user : "anonymous";
    char addr[1024];
    bool ok = false;
    if (rc == 0) {
        ok = relay_target_allowed(r, &it, user, addr, sizeof addr);
        size_t len = jn_iter_copy_string(&it, addr, sizeof addr); /* as it was judged */
        if (!ok && len < sizeof addr && !memchr(addr, '\0', len))
            ok = own_dynamic_address(conn, addr);
    } else {
        snprintf(addr, sizeof addr, "(unreadable)");
    }
    if (!ok)
        transfer_denied_IO(conn, link_id, logged, r, user, addr,
                           "reply-to of a management request not allowed by the group's "
                           "targets/targetPattern, nor a dynamic address of this connection");
    return ok;
}

void jn_io_vhost_uncount_link_IO(jn_io_conn_t *conn, bool incoming)
{
    JN_ASSERT_IO(conn);
    if (incoming)
        conn->policy_senders--;
    else
        conn->policy_receivers--;
}

void jn_io_vhost_session_denied_IO(jn_io_conn_t *conn, const char *condition,
                                   const char *description)
{
    JN_ASSERT_IO(conn);
    const jn_policy_rules_t *r = conn->vhost_rules;
    /* the own engine's words (router/amqp/frame.c) */
    if (!r || !r->max_sessions || r->outgoing || !condition ||
        strcmp(condition, "amqp:connection:framing-error") != 0 || !description ||
        !strstr(description, "above the channel-max"))
        return;
    jn_policy_note_denial(conn->io->policy, r->vhost, JN_POLICY_DENIED_SESSION);
    JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_INFO,
           JN_IO_CONN_FMT " DENY AMQP Begin Session for user '%s', rhost '%s', vhost '%s': "
                          "maxSessions %" PRIu32 " reached (the peer began a session past the "
                          "channel-max it was given)",
           conn->id, conn->vhost_user ? conn->vhost_user : "anonymous",
           conn->vhost_host ? conn->vhost_host : conn->host, r->vhost, r->max_sessions);
}

void jn_io_vhost_log_close_IO(jn_io_conn_t *conn, uint64_t n_connections)
{
    JN_ASSERT_IO(conn);
    if (!conn->vhost_rules || conn->vhost_rules->outgoing)
        return;
    unsigned sessions = jn_io_own_sessions_IO(conn); /* io_own_link.c */
    /* the denials are the vhost's so far, as 1.19 reports them (its
     * connections share their vhost's counts) */
    uint64_t sd, snd, rcv;
    jn_policy_vhost_denials(conn->io->policy, conn->vhost_rules->vhost, &sd, &snd, &rcv);
    JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_DEBUG,
           JN_IO_CONN_FMT " Connection '%s' closed with resources n_sessions=%u, n_senders=%" PRIu32
                          ", n_receivers=%" PRIu32 ", sessions_denied=%" PRIu64
                          ", senders_denied=%" PRIu64 ", receivers_denied=%" PRIu64
                          ". nConnections= %" PRIu64 ".",
           conn->id, conn->host, sessions, conn->policy_senders, conn->policy_receivers, sd, snd,
           rcv, n_connections);
}

bool jn_io_vhost_oversize_judge_IO(jn_io_conn_t *conn, uint64_t link_id, uint64_t max)
{
    JN_ASSERT_IO(conn);
    const jn_policy_rules_t *r = conn->vhost_rules;
    if (!r)
        return false;
    jn_policy_note_denial(conn->io->policy, r->vhost, JN_POLICY_DENIED_MAX_SIZE);
    JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_INFO,
           JN_IO_LINK_FMT " DENY AMQP Transfer for user '%s', rhost '%s', vhost '%s': message "
                          "exceeds maxMessageSize %" PRIu64 ": link detached, connection closed",
           conn->id, link_id, conn->vhost_user ? conn->vhost_user : "anonymous",
           conn->vhost_host ? conn->vhost_host : conn->host, r->vhost, max);
    return true;
}

void jn_io_vhost_rights_IO(const jn_io_conn_t *conn, bool *deny_dynamic_link_routes,
                           bool *deny_admin_status_update)
{
    JN_ASSERT_IO(conn);
    const jn_policy_rules_t *r = conn->vhost_rules;
    *deny_dynamic_link_routes = r && !r->allow_dynamic_link_routes;
    *deny_admin_status_update = r && !r->allow_admin_status_update;
}

void jn_io_vhost_limits_IO(const jn_io_conn_t *conn, uint32_t *max_frame, int32_t *channel_max)
{
    JN_ASSERT_IO(conn);
    const jn_policy_rules_t *r = conn->vhost_rules;
    *max_frame = 0;
    *channel_max = -1;
    if (!r || r->outgoing) /* a connector's group: 1.19 uses no transport setting */
        return;
    if (r->max_frame_size)
        *max_frame = r->max_frame_size < 512 ? 512 : r->max_frame_size;
    if (r->max_sessions)
        *channel_max = (int32_t)(r->max_sessions > 65536 ? 65535 : r->max_sessions - 1);
}

size_t jn_io_vhost_session_window(const jn_io_conn_t *conn)
{
    const jn_policy_rules_t *r = conn->vhost_rules;
    return r && !r->outgoing ? r->max_session_window : 0;
}

bool jn_io_vhost_user_id_proxy(const jn_io_conn_t *conn)
{
    return conn->vhost_rules && conn->vhost_rules->allow_user_id_proxy;
}
