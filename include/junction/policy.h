/*
 * junction/policy.h — the vhost policy (docs/design.md "Policy"), a layer
 * of pure decisions: functions of the facts their callers pass in (the
 * user, the Open's hostname, the remote host, a link's address and role,
 * the links a connection has open), with no sockets, no connections and
 * no core structures, so they are unit tested alone
 * (tests/unit/test_policy_*.c). It owns one thing: the vhost table with
 * its connection counts and figures (jn_policy_t), under a mutex of its
 * own. The I/O layer gathers the facts at a client's Open and at each
 * attach, asks, and acts (closes the connection, refuses the link with
 * the condition); management and router/main.c add and remove vhosts.
 *
 * Threads: the table's functions may be called from any thread (they take
 * the table's lock, never while calling out); the rule functions
 * (jn_policy_link_denial, jn_policy_target_allowed) and the pattern
 * checks are pure and need no lock. Nothing here keeps a borrowed
 * argument past the call.
 */
#ifndef JUNCTION_POLICY_H
#define JUNCTION_POLICY_H 1

#include <junction/common.h>

#include <stddef.h>
#include <stdint.h>

/* jn_policy_pattern_list_check: is list (a user group's sourcePattern or
 * targetPattern: items separated by commas or spaces, each a pattern of
 * tokens between '.' or '/') well formed? The one rule is 1.19's on the
 * user's name: each "${user}" in an item must be a whole token (nothing
 * else between its separators) and the item's first or last token. On a
 * bad item returns JN_EINVAL and writes into why (cap octets, always
 * NUL-terminated when cap > 0) the item and what is wrong with it, e.g.
 * "'abc/${user}.xyz': ${user} must be the first or the last token";
 * else returns 0 and leaves why alone. list is borrowed (NULL is an
 * empty list). */
int jn_policy_pattern_list_check(const char *list, char *why, size_t cap);

/* jn_policy_host_patterns_conflict: do vhost hostname patterns a and b
 * (tokens between '.' or '/'; '*' one token, '#' any number, as
 * policy.enableVhostNamePatterns reads them) match exactly the same
 * names while being written differently ("#.#.0.0" and "#.0.0",
 * "#.*.x" and "*.#.x", "a.b" and "a/b")? Then a router could not say
 * which vhost a name belongs to. The same text is no conflict here (the
 * callers refuse a second vhost of a hostname by name). Borrowed
 * arguments; a pattern of more than JN_POLICY_PATTERN_MAX octets is
 * never found in conflict. */
#define JN_POLICY_PATTERN_MAX 1024
bool jn_policy_host_patterns_conflict(const char *a, const char *b);

/* ---- the vhost table --------------------------------------------------- */

/* No limit of its own (a group's per-user/per-host limit: the vhost's). */
#define JN_POLICY_NO_LIMIT UINT32_MAX

/* One user group of a vhost (1.19's vhostUserGroupSettings): strings are
 * borrowed for the call that takes them. users and remote_hosts are
 * comma-separated lists, "*" matching any; a remote host is an address as
 * the peer's socket gives it. max_per_user/max_per_host:
 * JN_POLICY_NO_LIMIT takes the vhost's. max_connections: the group's
 * connections open at once in the vhost (JN_POLICY_NO_LIMIT: no limit of
 * the group's own). */
typedef struct jn_policy_group {
    const char *name;
    const char *users;
    const char *remote_hosts;
    uint32_t max_per_user, max_per_host;
    uint32_t max_connections;
    /* link rules, checked at attach: sources/targets are comma- or
     * space-separated addresses ("*" any, "abc*" a prefix, "${user}" the
     * user's name), source_pattern/target_pattern address patterns ('.'
     * or '/' between tokens, '*' one token, '#' any number); an empty list
     * and pattern allow no address. */
    const char *sources, *targets, *source_pattern, *target_pattern;
    bool allow_anonymous_sender, allow_dynamic_source, allow_user_id_proxy;
    /* the connection's transport settings, 0: the listener's: largest
     * frame (octets), sessions (channel-max + 1), a session's incoming
     * window (octets) */
    uint32_t max_frame_size, max_sessions, max_session_window;
    /* maxMessageSize (octets; 0: no limit) when has_max_message_size,
     * else the vhost's */
    bool has_max_message_size;
    uint64_t max_message_size;
    /* links the client may have open at once: its senders (our receiving
     * links) and its receivers (our sending links); 0 allows none */
    uint32_t max_senders, max_receivers;
    /* capabilities and management rights (1.19's defaults: all true):
     * qd.waypoint* / qd.fallback on a terminus, connection-scoped link
     * routes (router.connection.linkRoute CREATE), closing another
     * connection (connection UPDATE adminStatus) */
    bool allow_waypoint_links, allow_fallback_links, allow_dynamic_link_routes,
        allow_admin_status_update;
} jn_policy_group_t;

/* One vhost (1.19's vhost entity): hostname, its connection limits and its
 * groups (group_count of them at groups). Borrowed for the call. */
typedef struct jn_policy_vhost {
    const char *hostname;
    const char *aliases; /* comma-separated other hostnames of it (NULL: none) */
    uint32_t max_connections, max_per_user, max_per_host;
    bool allow_unknown_user;
    /* maxMessageSize (octets; 0: no limit) when has_max_message_size, else
     * policy.maxMessageSize */
    bool has_max_message_size;
    uint64_t max_message_size;
    const jn_policy_group_t *groups;
    size_t group_count;
} jn_policy_vhost_t;

/* The link rules a connection was admitted with: its user group's (see
 * jn_policy_group_t for each field's meaning), copied, so a vhost updated
 * or removed later leaves an open connection's rules as they were.
 * Strings are owned by the admission that holds them; never NULL. A
 * client in no group (allowUnknownUser) has empty lists (no address
 * allowed) and no link limits. Read-only to callers; immutable while the
 * admission lives, so the connection's thread reads it without a lock. */
typedef struct jn_policy_rules {
    char *sources, *targets, *source_pattern, *target_pattern;
    bool allow_anonymous_sender, allow_dynamic_source, allow_user_id_proxy;
    uint32_t max_frame_size, max_sessions, max_session_window; /* 0: not set */
    bool has_max_message_size; /* the group's, else the vhost's, if set */
    uint64_t max_message_size;
    uint32_t max_senders, max_receivers;
    bool allow_waypoint_links, allow_fallback_links, allow_dynamic_link_routes,
        allow_admin_status_update;
    bool outgoing; /* a connector's ($connector group): no transport settings */
    char *vhost;   /* the vhost whose figures count this connection's denials */
} jn_policy_rules_t;

/* One connection admitted (jn_policy_admit, jn_policy_admit_connector):
 * what it is counted as — the vhost's hostname, the user, the remote host
 * and the user group's name ("" for none); all NULL for a connector's,
 * which is not counted — and its rules. Owned by the caller until
 * jn_policy_release. */
typedef struct jn_policy_admission {
    char *vhost, *user, *rhost, *group;
    jn_policy_rules_t rules;
} jn_policy_admission_t;

/* The vhost table: vhosts by hostname, the open connections counted per
 * vhost, per user, per remote host and per user group, and each vhost's
 * figures (1.19's vhostStats). Opaque. */
typedef struct jn_policy jn_policy_t;

/* jn_policy_create: an empty table, no default vhost, name patterns off.
 * Returns it (free with jn_policy_free) or NULL (out of memory). Any
 * thread. */
jn_policy_t *jn_policy_create(void);

/* jn_policy_free: free p, its vhosts and its counts. Admissions still
 * held stay valid (they own their strings) but must not be released into
 * p afterwards. NULL ignored. Any thread, once nothing else uses p. */
void jn_policy_free(jn_policy_t *p);

/* jn_policy_configure: default_vhost (policy.defaultVhost, copied; NULL
 * or "": none) takes an Open whose hostname names no vhost;
 * name_patterns (policy.enableVhostNamePatterns): a hostname no vhost
 * names exactly, nor as an alias, takes the vhost whose hostname or alias
 * read as a pattern ('.' or '/' between tokens, '*' one token, '#' any
 * number) matches it with the fewest wildcards, then the first in table
 * order. Returns 0 or JN_ENOMEM (nothing changed). Any thread. */
int jn_policy_configure(jn_policy_t *p, const char *default_vhost, bool name_patterns);

/* jn_policy_vhost_add: add (or replace, by hostname: its figures go on)
 * vh; everything is copied. Returns 0 or JN_ENOMEM (nothing changed).
 * Any thread. */
int jn_policy_vhost_add(jn_policy_t *p, const jn_policy_vhost_t *vh);

/* jn_policy_vhost_remove: remove the vhost named hostname (exactly): new
 * connections no longer find it; admitted ones keep their rules, and
 * their counts until released. Returns 0 or JN_ENOENT. Any thread. */
int jn_policy_vhost_remove(jn_policy_t *p, const char *hostname);

/* The facts of a client's Open (1.19's policy check at Open): user is its
 * authenticated name ("anonymous" when none), hostname the Open's
 * hostname or the listener's policyVhost (NULL: none), rhost the peer's
 * address without the port. Borrowed. */
typedef struct jn_policy_open_facts {
    const char *user, *hostname, *rhost;
} jn_policy_open_facts_t;

/* jn_policy_admit: may a client connect with facts f? The vhost is the one
 * hostname names (jn_policy_configure), else the default vhost; the user
 * group the first (other than "$default") listing the user, else
 * "$default"; then the group's remoteHosts, and the vhost's, the user's,
 * the host's and the group's connection limits. Admitted: counted, the
 * vhost's connectionsApproved counted, *out a new admission (the caller
 * releases it with jn_policy_release when the connection closes), and
 * NULL returned. Denied: the vhost's connectionsDenied counted (when a
 * vhost was found), *out NULL, and the rule that denied it returned
 * (static text, "out of memory" included). Either way the vhost name to
 * log (the vhost's, else hostname) is written into shown (cap octets,
 * NUL-terminated when cap > 0). Any thread. */
const char *jn_policy_admit(jn_policy_t *p, const jn_policy_open_facts_t *f,
                            jn_policy_admission_t **out, char *shown, size_t cap);

/* jn_policy_admit_connector: the rules of an outgoing connection of a
 * connector whose policyVhost is vhost: the vhost's "$connector" group's,
 * with rules.outgoing set; not counted. NULL and *out a new admission, or
 * the reason (static: "no such vhost", "the vhost has no '$connector'
 * group", "out of memory") and *out NULL. Any thread. */
const char *jn_policy_admit_connector(jn_policy_t *p, const char *vhost,
                                      jn_policy_admission_t **out);

/* jn_policy_release: uncount a (from jn_policy_admit or
 * jn_policy_admit_connector on p) and free it. NULL ignored. Any thread. */
void jn_policy_release(jn_policy_t *p, jn_policy_admission_t *a);

/* What a denial after the Open was (jn_policy_note_denial): an attach of
 * the client's sender or receiver refused by the link rules (counted as
 * the vhost's senderDenied / receiverDenied and in the links denied), a
 * message of an anonymous sender refused (senderDenied only), a session
 * begun past maxSessions (sessionDenied and the sessions denied), a
 * message over maxMessageSize (maxMessageSizeDenied). */
typedef enum jn_policy_denial {
    JN_POLICY_DENIED_SENDER,
    JN_POLICY_DENIED_RECEIVER,
    JN_POLICY_DENIED_TRANSFER,
    JN_POLICY_DENIED_SESSION,
    JN_POLICY_DENIED_MAX_SIZE,
} jn_policy_denial_t;

/* jn_policy_note_denial: count one denial of kind in vhost's figures (a
 * vhost no longer in the table: the totals only). vhost borrowed. Any
 * thread. */
void jn_policy_note_denial(jn_policy_t *p, const char *vhost, jn_policy_denial_t kind);

/* One count of open connections: of a user or from a remote host. */
typedef struct jn_policy_count {
    char *key;
    uint64_t n;
} jn_policy_count_t;

/* The policy entity's connection figures (1.19's policy statistics), as
 * the layer that enforces the policy counts them (the I/O layer:
 * jn_io_policy_stats; the agent shows them): processed = approved +
 * denied since start; current = counted incoming connections open now;
 * max_message_size_denied = messages over maxMessageSize (each detached
 * its link and closed its connection). Plain data, any thread. */
typedef struct jn_policy_conn_stats {
    uint64_t processed, denied, current;
    uint64_t links_denied;    /* attaches refused by a vhost group's link rules */
    uint64_t sessions_denied; /* begins refused by a vhost group's maxSessions */
    uint64_t max_message_size_denied;
} jn_policy_conn_stats_t;

/* One vhost's figures (1.19's vhostStats): connections approved and
 * denied since it was added, open now; denials after the Open; per_user
 * / per_host: each user's / remote host's open connections (n_user,
 * n_host of them). Everything is owned by the array that holds it. */
typedef struct jn_policy_vhost_stats {
    char *hostname;
    uint64_t approved, denied, current, sender_denied, receiver_denied;
    uint64_t session_denied, max_size_denied;
    jn_policy_count_t *per_user, *per_host;
    size_t n_user, n_host;
} jn_policy_vhost_stats_t;

/* jn_policy_stats: the figures of every vhost, in table order, into a new
 * array *out of *count (free with jn_policy_stats_free). Returns 0 or
 * JN_ENOMEM (*out NULL, *count 0). Any thread. */
int jn_policy_stats(jn_policy_t *p, jn_policy_vhost_stats_t **out, size_t *count);

/* jn_policy_stats_free: free what jn_policy_stats made. NULL ignored. */
void jn_policy_stats_free(jn_policy_vhost_stats_t *st, size_t count);

/* jn_policy_vhost_denials: vhost's sessionDenied, senderDenied and
 * receiverDenied so far (1.19 shows them in a connection's close line);
 * all 0 when there is no such vhost. Any thread. */
void jn_policy_vhost_denials(jn_policy_t *p, const char *vhost, uint64_t *sessions,
                             uint64_t *senders, uint64_t *receivers);

/* jn_policy_totals: attaches refused by link rules and sessions refused
 * by maxSessions since p was made, over every vhost (the policy entity's
 * linksDenied and part of its totalDenials). Any thread. */
void jn_policy_totals(jn_policy_t *p, uint64_t *links_denied, uint64_t *sessions_denied);

/* ---- link rules (pure) --------------------------------------------------- */

/* The facts of one attach by a client: sender is true for the client's
 * sender (the router's receiving link; its target is checked), false for
 * its receiver (its source is checked); address the terminus address
 * (NULL or "": none); dynamic whether the terminus is dynamic; user the
 * admitted user; senders / receivers the client's links the rules count
 * open now; waypoint / fallback whether a capability of the terminus
 * starts with "qd.waypoint" / is "qd.fallback" (any of them: 1.19 looks at
 * the first only). Borrowed. */
typedef struct jn_policy_link_facts {
    bool sender;
    const char *address;
    bool dynamic;
    const char *user;
    uint32_t senders, receivers;
    bool waypoint, fallback;
} jn_policy_link_facts_t;

/* jn_policy_link_denial: the rule of r that refuses the attach f (static
 * text, for the log), or NULL when r allows it. *limit is set true when
 * the reason is maxSenders / maxReceivers (the caller refuses with
 * amqp:resource-limit-exceeded, else amqp:unauthorized-access, as 1.19).
 * Order: the link limit, an anonymous sender, a dynamic source, the
 * waypoint and fallback capabilities, then the address against the lists
 * and patterns. Any thread; pure. */
const char *jn_policy_link_denial(const jn_policy_rules_t *r, const jn_policy_link_facts_t *f,
                                  bool *limit);

/* jn_policy_target_allowed: does r allow user to send to address (an
 * address as the core routes on it, NUL-terminated) — by targets (exact,
 * "abc*" prefix, "*", "${user}") or by targetPattern? The check of each
 * message of an anonymous sender. Any thread; pure. */
bool jn_policy_target_allowed(const jn_policy_rules_t *r, const char *address, const char *user);

#endif /* JUNCTION_POLICY_H */
