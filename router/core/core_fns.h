/*
 * core_fns.h — the functions router/core's files share, grouped by the file
 * that defines each. Included by core_private.h only (after the structures
 * they take); nothing outside router/core sees it.
 */
#ifndef JN_CORE_FNS_H
#define JN_CORE_FNS_H 1

/* ---- core.c ------------------------------------------------------------- */

/* Post an action on the core's queue and wake the core thread when the
 * queue was empty. Any thread. */
void jn_core_post(jn_core_t *core, jn_action_t *action);

/* A multicast copy waits for credit: start watching for stuck consumers
 * (core->mc_waiting) if not yet, waking the core thread so that it sleeps
 * with the watch's timeout. Core thread. */
void jn_core_watch_mc_CT(jn_core_t *core);

/* Run jn_lr_tick_CT at monotonic time at_ms (jn_time_mono_ms) or soon
 * after, or earlier when already due earlier; wakes the core thread so
 * that it sleeps no longer than that. Core thread. */
void jn_core_timer_at_CT(jn_core_t *core, int64_t at_ms);

/* Something the core thread sleeps for became due sooner (the mesh's
 * deferred flush, mesh_side.c): on an I/O loop running the core inline,
 * wake the core thread so that it works out its sleep again (it may be
 * asleep until the next mesh tick, a second away); on the core thread
 * itself nothing, as it does so before it sleeps. Core role (either). */
void jn_core_resleep_CT(jn_core_t *core);

/* ---- conn.c ------------------------------------------------------------- */

void jn_conn_unref(jn_core_conn_t *conn);
void jn_conn_opened_CT(jn_core_conn_t *conn);
/* Process a close: detach every link, drop queued work, release io_conn. */
void jn_conn_closed_CT(jn_core_conn_t *conn);

/* Work items: allocate (zeroed) on the core thread; push to the link's or
 * delivery's connection (dropped when it is closed; wakes it on empty ->
 * non-empty). */
jn_work_t *jn_work_new_CT(jn_core_t *core, jn_work_type_t type);
/* (inline: every work item passes here) */
static inline void jn_work_push_CT(jn_core_conn_t *conn, jn_work_t *work)
{
    JN_ASSERT_CT(conn->core);
    if (JN_UNLIKELY(conn->ct.closed)) {
        jn_work_free(work);
        return;
    }
    if (jn_mpsc_push(&conn->work, &work->node))
        conn->core->ops.wake(conn->io_conn);
}
/* Link work: takes a link reference. Returns 0 or JN_ENOMEM (logged). */
int jn_work_link_CT(jn_core_link_t *link, jn_work_type_t type, const char *address,
                    const char *condition, const char *description, uint32_t credit);
/* Drain work (JN_WORK_LINK_CREDIT with drain, AMQP 1.0 2.6.7): credit 0:
 * the credit granted stays the sender's, with the drain flag; 1: it is
 * taken away without the flag (io_own_rx.c). Takes a link reference.
 * Returns 0 or JN_ENOMEM (nothing pushed). */
int jn_work_drain_CT(jn_core_link_t *link, uint32_t credit);
/* Delivery work on dlv's link's connection: jn_work_dlv_CT, inline in
 * delivery.h; this is its general case (dlv's own item taken, or a
 * disposition with strings or extra fields), same arguments and returns
 * (0, or JN_ENOMEM logged and nothing queued). Core thread. */
int jn_work_dlv_slow_CT(jn_delivery_t *dlv, jn_work_type_t type, uint64_t disp_type,
                   const jn_disposition_t *disp, bool settled);

/* ---- link.c ------------------------------------------------------------- */

/* jn_link_ref, jn_link_unref: take / drop a reference on link (atomic; any
 * thread); the last one frees it (jn_link_free_, which drops its
 * connection's). Inline: every delivery, work item and queued link takes
 * and drops one. */
void jn_link_free_(jn_core_link_t *link);
static inline jn_core_link_t *jn_link_ref(jn_core_link_t *link)
{
    atomic_fetch_add_explicit(&link->refcount, 1, memory_order_relaxed);
    return link;
}
static inline void jn_link_unref(jn_core_link_t *link)
{
    unsigned before = atomic_fetch_sub_explicit(&link->refcount, 1, memory_order_acq_rel);
    JN_CHECK(before > 0);
    if (before == 1)
        jn_link_free_(link);
}
void jn_link_attached_CT(jn_core_link_t *link);
/* Process a detach; from_conn_close: the connection is closing (no
 * LINK_RELEASED work: ops->conn_released covers it). */
void jn_link_detached_CT(jn_core_link_t *link, bool from_conn_close);
void jn_link_flow_CT(jn_core_link_t *link);
/* Outgoing: hand waiting copies out within the credit; answer a drain. */
void jn_link_pump_CT(jn_core_link_t *link);
/* Incoming: recompute the link's credit at the end of the batch. */
void jn_link_mark_dirty_CT(jn_core_link_t *link);
/* End of a batch: grant the credit of every dirty link (one LINK_CREDIT
 * per link at most). */
void jn_link_flush_credit_CT(jn_core_t *core);
/* Outgoing link that was at its unsettled bound and had a copy settled:
 * queue it to be pumped at the end of the batch (safe inside any loop over
 * its copies: it does not pump now). */
void jn_link_mark_resume_CT(jn_core_link_t *link);
/* End of a batch, before jn_link_flush_credit_CT: pump every link queued by
 * jn_link_mark_resume_CT (and mark a link-routed sender dirty). */
void jn_link_flush_resume_CT(jn_core_t *core);
/* True when the outgoing link holds its bound of unsettled copies. */
static inline bool jn_link_full_CT(const jn_core_link_t *link)
{
    return link->ct.unsettled >= link->ct.unsettled_max;
}
/* Mark every producer of addr dirty (its consumers changed). */
void jn_link_producers_dirty_CT(jn_addr_t *addr);

/* ---- address.c ---------------------------------------------------------- */

/* Find or create the address for a link's terminus address (a C string,
 * read through the hash view) for a link of direction dir: a mobile
 * address configured with phases gets the ingress phase for an incoming
 * link, the egress phase for an outgoing one (else phase 0); a fallback
 * receiver binds to phase 'F'; a waypoint's link (waypoint n, 1..9;
 * 0: none) binds to phase n when incoming, n - 1 when outgoing. *out is NULL
 * when the address's distribution is unavailable (nothing is created).
 * Returns 0 or JN_ENOMEM. */
int jn_addr_get_CT(jn_core_t *core, const char *address, jn_link_dir_t dir, bool fallback,
                   uint8_t waypoint, jn_addr_t **out);
/* jn_addr_unavailable_for_delivery_CT: true when the address an incoming
 * delivery on an anonymous link is sent to (its to-override when its
 * connection's are honoured, else properties.to; in its connection's
 * tenant space when it has one, as routed) is a mobile address whose
 * distribution is configured `unavailable` (an address entity, or the
 * router's defaultDistribution): the router refuses it rather than
 * release it. Not on the hot path (only for messages with no address
 * entry). Core thread. */
bool jn_addr_unavailable_for_delivery_CT(jn_core_t *core, const jn_delivery_t *dlv);

/* ---- tenant.c: tenant spaces (docs/design.md, "Tenant spaces") ---------- */

/* jn_tenant_conn_set: give conn (being opened, not yet posted) the tenant
 * space of vhost (not empty): conn->tenant becomes "<vhost>/". Returns 0,
 * JN_EINVAL when vhost cannot name a space (jn_core_tenant_vhost_usable;
 * the I/O layer refuses such a connection first) or JN_ENOMEM. The
 * opening thread. */
int jn_tenant_conn_set(jn_core_conn_t *conn, const char *vhost);
/* jn_tenant_attach_CT: an endpoint link with an address attaching on a
 * connection with a tenant space: when the address is mobile, moves it
 * into the space (link->address becomes "<vhost>/<address body>", the
 * client's kept in link->client_address). Returns 0 or JN_ENOMEM (the
 * link unchanged). */
int jn_tenant_attach_CT(jn_core_link_t *link);
/* jn_tenant_addr_for_delivery_CT: jn_addr_for_message_CT for a delivery
 * that arrived on an anonymous link of a connection with a tenant space:
 * a mobile address is looked up in the space, and the delivery keeps that
 * address (dlv->to_override, owned) for the copies that go to other
 * routers (x-opt-qd.to). NULL when none exists. */
jn_addr_t *jn_tenant_addr_for_delivery_CT(jn_core_t *core, jn_delivery_t *dlv, bool honour);

/* Look up the address a message is sent to (to-override when honoured, else
 * properties.to); NULL when none exists. */
jn_addr_t *jn_addr_for_message_CT(jn_core_t *core, const jn_message_t *msg,
                                  bool honour_to_override);
/* jn_addr_for_message_memo_CT: jn_addr_for_message_CT (same arguments,
 * same result) through memo, an anonymous incoming link's memo of the last
 * address found (borrowed, core thread state): when the message's address
 * field holds the same octets, with the same phase, as the memo's and no
 * address was freed since it was kept, the memo's address is returned
 * without the address view, the hash or the table; otherwise the address
 * is looked up and kept in memo when found (a field of at most
 * JN_ADDR_MEMO_MAX octets in one run). Hot path on an inter-router link: a
 * mesh's messages name the same few addresses in turn. Core thread. */
jn_addr_t *jn_addr_for_message_memo_CT(jn_core_t *core, const jn_message_t *msg,
                                       bool honour_to_override, jn_addr_memo_t *memo);
/* Add link as a consumer / producer of addr and set link->ct.addr.
 * Returns 0 or JN_ENOMEM (nothing changed). */
int jn_addr_add_consumer_CT(jn_addr_t *addr, jn_core_link_t *link);
int jn_addr_add_producer_CT(jn_addr_t *addr, jn_core_link_t *link);
/* Remove link from its address (link->ct.addr, cleared) and return that
 * address (NULL if none); the caller frees it with
 * jn_addr_release_if_unused_CT once done with it. */
jn_addr_t *jn_addr_remove_link_CT(jn_core_t *core, jn_core_link_t *link);
/* Free addr if no link refers to it and an edge router does not hold it
 * (edge_hold: a fallback phase its senders may need). */
void jn_addr_release_if_unused_CT(jn_core_t *core, jn_addr_t *addr);
/* Dynamic addresses: "temp." then JN_ADDR_TEMP_CHARS base64url characters
 * of JN_ADDR_TEMP_RANDOM octets from getrandom(2) (128 bits: not to be
 * guessed, so a receiver cannot wait on another client's reply address;
 * qdrouterd 1.19's discriminator is 16 characters). */
#define JN_ADDR_TEMP_PREFIX "temp."
#define JN_ADDR_TEMP_RANDOM 16
#define JN_ADDR_TEMP_CHARS  22
/* The base64url text (RFC 4648 section 5, no padding) of rnd into out
 * (JN_ADDR_TEMP_CHARS characters and a NUL). Pure; any thread. */
void jn_addr_temp_name(const uint8_t rnd[JN_ADDR_TEMP_RANDOM], char out[JN_ADDR_TEMP_CHARS + 1]);
/* Make a dynamic address "amqp:/_topo/0/<id>/temp.<random>" (the form
 * qdrouterd 1.19 gives; on an edge router "amqp:/_edge/<id>/temp.<random>")
 * into *out (heap, the caller's). Returns 0; JN_AGAIN when the kernel gave
 * no random octets (its pool not ready, or getrandom failed): the caller
 * refuses the attach, there is no guessable fallback; JN_ENOMEM. */
int jn_addr_make_dynamic_CT(jn_core_t *core, char **out);
/* Make the address of a dynamic target (a sender that asks the router to
 * name its node, AMQP 1.0 section 3.5.4): "amqp:/_$temp.<random>", the
 * form qdrouterd 1.19 gives, a mobile address (hash key "M0_$temp.<random>")
 * that a receiver anywhere in the mesh may attach to by that name. Same
 * random part, returns and ownership as jn_addr_make_dynamic_CT. Core
 * thread. */
#define JN_ADDR_DYN_TARGET_PREFIX "_$temp."
int jn_addr_make_dynamic_target_CT(jn_core_t *core, char **out);
/* Why a receiver (outgoing link) attached by name to address is refused,
 * or NULL: address is in this router's dynamic-address space (hash key
 * "Ltemp.", in any spelling the router accepts: with or without "amqp:/",
 * "_topo/0/<id>/", "_topo/all/<id>/", "_edge/<id>/" on an edge,
 * "_local/"), which only a dynamic attach hands out; or it names another
 * router (classes R, A and H; on an edge, its uplink's "L_edge"), where a
 * local consumer would take that router's traffic (another router's
 * dynamic addresses and $management among it). Senders to any of these
 * are not affected. The caller refuses with amqp:unauthorized-access. */
const char *jn_addr_consumer_refusal_CT(jn_core_t *core, const char *address);
/* Pick the consumer for an anycast delivery (closest or balanced). */
jn_core_link_t *jn_addr_pick_consumer_CT(jn_addr_t *addr);
/* Find or create the address for a hash key (a new one gets the
 * configured distribution for mobile keys, else dist). *out NULL when
 * configured unavailable. Returns 0 or JN_ENOMEM. */
int jn_addr_get_key_CT(jn_core_t *core, const uint8_t *key, size_t len, jn_distribution_t dist,
                       jn_addr_t **out);
/* Remote router `router` has / no longer has a destination for addr
 * (remove may free addr). */
void jn_addr_add_remote_CT(jn_core_t *core, jn_addr_t *addr, int router);
void jn_addr_remove_remote_CT(jn_core_t *core, jn_addr_t *addr, int router);
/* jn_addr_remote_reach_CT: router (an index with a node) gained its first
 * route (reachable true) or lost it (false); called where the node's
 * `reachable` flag changes, with nothing in between. Every address with a destination there counts
 * it, or stops counting it, as reachable; senders to an address whose
 * reachable destinations went from none to some, or from some to none, are
 * marked for a credit update (they get credit, or lose it). Walks every
 * address: topology changes only. Core thread. */
void jn_addr_remote_reach_CT(jn_core_t *core, int router, bool reachable);
/* addr has somewhere to send to now: a local consumer, a remote router
 * with a destination that a route reaches (a router known from the link
 * state but not yet or no longer reachable does not count: a sender given
 * credit for it would only have its deliveries released), or an
 * in-process node. */
static inline bool jn_addr_has_destination(const jn_addr_t *addr)
{
    return addr->n_consumers > 0 || addr->n_reachable > 0 || addr->inproc;
}
/* The fallback address of addr (its key with phase 'F'), when addr has
 * enableFallback and that address exists; NULL otherwise. Not on the hot
 * path: only for an address without a destination. */
jn_addr_t *jn_addr_fallback_CT(jn_core_t *core, const jn_addr_t *addr);
/* For a fallback address (phase 'F'): the primary address it serves (phase
 * '0'), if it exists; NULL otherwise. */
jn_addr_t *jn_addr_primary_CT(jn_core_t *core, const jn_addr_t *fallback);
/* addr, or its fallback, has somewhere to send to: senders get credit. */
bool jn_addr_fallback_has_destination_CT(jn_core_t *core, const jn_addr_t *addr);
static inline bool jn_addr_has_destination_or_fallback_CT(jn_core_t *core, const jn_addr_t *addr)
{
    return jn_addr_has_destination(addr) ||
           (JN_UNLIKELY(addr->fallback) && jn_addr_fallback_has_destination_CT(core, addr));
}
/* Tell the mesh whether addr has a local destination now (a consumer or
 * an exchange), when that changed (docs/protocol.md, mobile addresses). */
void jn_addr_advertise_CT(jn_core_t *core, jn_addr_t *addr);
/* Free every address left (teardown). */
void jn_addr_free_all_CT(jn_core_t *core);

/* ---- forward.c, forward_mc.c, forward_gone.c, forward_figures.c ---------- */

void jn_forward_arrived_CT(jn_delivery_t *dlv);
void jn_forward_continued_CT(jn_delivery_t *dlv);
void jn_forward_update_CT(jn_delivery_t *dlv, const jn_disposition_t *disp, bool settled);
/* Send dlv (an incoming delivery, or one made on the internal link) as a
 * copy on each of links (n may be 0), multicast-style (one pre-settled copy
 * each) or not; marks it routed and finishes it as forwarding does. */
void jn_forward_to_links_CT(jn_delivery_t *dlv, jn_core_link_t **links, unsigned n, bool multicast);
/* jn_forward_reject_CT: settle an incoming delivery rejected, with the
 * error condition and description (may be NULL), unless it is settled
 * already (a service of the router's that refuses a request; not on the
 * per-message path). Core thread. */
void jn_forward_reject_CT(jn_delivery_t *dlv, const char *condition, const char *description);
/* An outgoing link in drop mode (ct.mc_dropping) handed some out, or is
 * going: once it took a copy and its backlog is down to half its capacity
 * (or it is detached), log the end of the episode with the number dropped
 * and leave drop mode. */
void jn_forward_backlog_check_CT(jn_core_link_t *link);
/* While core->mc_waiting, every JN_CORE_MC_CHECK_MS (one clock read per call):
 * put the outgoing links that took no copy for JN_CORE_MC_STUCK_MS while
 * multicast copies waited in drop mode. */
void jn_forward_mc_tick_CT(jn_core_t *core);
/* Every JN_CORE_FIGURES_MS once armed (jn_forward_figures_arm_CT), from the
 * core timer: count the unsettled deliveries held longer than
 * JN_CORE_STUCK_MS (router deliveriesStuck) and the client links that had
 * no credit that long (linksBlocked, logged as each starts to count), into
 * core->stats;
 * then set the core timer for the next run. Called on every run of the
 * core timer (an early call only sets it again). O(links + stuck
 * deliveries): each link's lists are looked at from their oldest end. */
void jn_forward_figures_tick_CT(jn_core_t *core);
/* linksBlocked: credit came to link (an incoming link: the router gave
 * its sender some; an outgoing one: its receiver's flow left it some): it
 * is no longer watched, and if it was counted the router's figure drops
 * by one now (the next tick recounts). Core thread, with the core's token. */
void jn_forward_credit_given_CT(jn_core_link_t *link);
/* Start the figures tick if it is not running (a connection opened). */
void jn_forward_figures_arm_CT(jn_core_t *core);
/* How long the core may sleep (ms, -1: until woken) given the caller's
 * timeout, so that the watch above runs while core->mc_waiting. The core
 * thread, without the core's token (it reads only an atomic flag). */
int jn_forward_mc_sleep_ms(jn_core_t *core, int timeout);
/* Route a composed message's delivery (internal link) by its `to`. */
void jn_forward_composed_CT(jn_delivery_t *dlv);
/* Hand a copy waiting at the head of its link's undelivered list to the
 * I/O layer (the caller checked the credit). */
void jn_forward_hand_out_CT(jn_delivery_t *copy);
/* An outgoing link is going: re-route its undelivered anycast copies to
 * another consumer of addr (its former address, NULL if none; the link is
 * already removed from its consumers), release the others to their
 * senders. */
void jn_forward_consumer_gone_CT(jn_core_link_t *link, jn_addr_t *addr);
/* jn_forward_producer_gone_CT: an incoming link is gone: the copies of its
 * deliveries whose consumers gave an outcome without settling are settled
 * by the router (no sender is left to settle first); forward_gone.c. */
void jn_forward_producer_gone_CT(jn_core_link_t *link);

/* ---- mesh_side.c (the core's side of the mesh) -------------------------- */

/* What routing needs to know of a delivery that came across the mesh:
 * connections (by slot) not to send it back to (the one it came on and
 * those to routers in its trace), its origin router (x-opt-qd.ingress; 0 =
 * this router or unknown), the length of its trace, whether the trace
 * already names this router (a loop), its priority. The first three are
 * what only a route toward another router needs: they may be left to be
 * filled when one is looked for (full false: jn_router_route_ctx_CT). */
typedef struct jn_route_ctx {
    jn_mesh_bits_t excluded;
    int origin;
    uint32_t trace_count;
    unsigned priority;
    bool looped; /* this router's own id is in the trace: never forward it */
    /* excluded, origin and priority are filled; else they are filled from
     * dlv on the first look for a remote route (jn_router_pick_remote_CT,
     * jn_router_multicast_links_CT) */
    bool full;
    const jn_delivery_t *dlv;
    /* it came from an edge router: never back to that edge (edge.c) */
    const jn_core_conn_t *from_edge;
} jn_route_ctx_t;

/* Create the internal origin of composed messages and, for an interior
 * router, the mesh engine. Returns 0 or JN_ENOMEM. jn_core_create. */
int jn_router_init(jn_core_t *core, const jn_core_config_t *cfg);
/* Core thread start: the in-process addresses. Returns 0 or JN_ENOMEM. */
int jn_router_start_CT(jn_core_t *core);
/* Teardown: free router nodes (core thread role), then the rest. */
void jn_router_fini_CT(jn_core_t *core);
void jn_router_free(jn_core_t *core);
/* Tick the mesh when a second has passed; how long the core may sleep
 * before the next tick (ms; -1: no mesh, sleep until woken). */
void jn_router_tick_CT(jn_core_t *core);
/* A mesh tick this late (ms past its time) means the router itself did not
 * run meanwhile (process stopped or starved): silence is then judged from
 * the moment it runs again (jn_router_tick_CT, jn_edge_stalled_CT). */
#define JN_CORE_STALL_MS 1000
int jn_router_sleep_ms_CT(jn_core_t *core);
/* Connections: take / give back an inter-router slot. */
void jn_router_conn_opened_CT(jn_core_conn_t *conn);
void jn_router_conn_closed_CT(jn_core_conn_t *conn);
/* Links: check an attach against the connection's role and register
 * inter-router links (NULL = fine, else the refusal's description with
 * *condition set); after the attach is accepted; when it detaches. */
const char *jn_router_link_attach_CT(jn_core_link_t *link, const char **condition);
void jn_router_link_attached_CT(jn_core_link_t *link);
void jn_router_link_detached_CT(jn_core_link_t *link);
/* Deliveries served in-process (control messages, management requests),
 * once complete; continued: a waiting one may be complete now. */
void jn_router_control_arrived_CT(jn_delivery_t *dlv);
void jn_router_management_arrived_CT(jn_delivery_t *dlv);
void jn_router_continued_CT(jn_delivery_t *dlv);
/* Routing across the mesh. jn_router_route_ctx_CT: what routing needs to
 * know of dlv (borrowed, alive while rc is used) into rc; with full false
 * only the loop check (looped, trace_count) and from_edge, the rest left
 * for when a route toward another router is looked for: a delivery for a
 * local consumer costs no walk of the routers in its trace (hot path on
 * the egress router of a mesh). */
void jn_router_route_ctx_CT(jn_core_t *core, const jn_delivery_t *dlv, jn_route_ctx_t *rc,
                            bool full);
jn_core_conn_t *jn_router_conn_CT(jn_core_t *core, const jn_router_node_t *node);
/* jn_router_usable_conn_CT: the connection to reach node through (NULL:
 * none), unless rc excludes it (mesh_route.c). */
jn_core_conn_t *jn_router_usable_conn_CT(jn_core_t *core, const jn_router_node_t *node,
                                         const jn_route_ctx_t *rc);
/* jn_router_node_at_CT: the remote router of mesh index index, or NULL. */
static inline jn_router_node_t *jn_router_node_at_CT(jn_core_t *core, int index)
{
    JN_ASSERT_CT(core);
    return index > 0 && index < JN_MESH_MAX_ROUTERS ? core->ct.routers[index] : NULL;
}
jn_core_link_t *jn_router_data_link_CT(jn_core_conn_t *conn, unsigned priority);
/* The best remote destination's data link for an anycast delivery (NULL:
 * none); *load (may be NULL) gets its balanced score. */
jn_core_link_t *jn_router_pick_remote_CT(jn_core_t *core, jn_addr_t *addr, jn_route_ctx_t *rc,
                                         uint64_t *load);
/* Data links toward the remote destinations of a multicast address, one
 * per connection; returns how many were put in out (at most max). */
unsigned jn_router_multicast_links_CT(jn_core_t *core, const jn_addr_t *addr, jn_route_ctx_t *rc,
                                      jn_core_link_t **out, unsigned max);

/* ---- exchange.c (exchanges and bindings) --------------------------------- */

/* jn_exchange_forward_CT: forward dlv, which arrived for addr (an
 * exchange's address, addr->inproc JN_INPROC_EXCHANGE), through its
 * exchange: pre-settled copies to the matching bindings' next hops (or the
 * alternate); the delivery is accepted when some copy was made (settled as
 * the copies are handed out), else released (dropped when pre-settled).
 * rc: the delivery's routing context (its priority is kept). */
void jn_exchange_forward_CT(jn_delivery_t *dlv, jn_addr_t *addr, const jn_route_ctx_t *rc);
/* Free every exchange (jn_core_free; touches no address). */
void jn_exchange_fini(jn_core_t *core);

/* A next hop of an exchange being forwarded to: set on the incoming
 * delivery (ct.reroute) while its copies are made, so that a copy toward
 * another router carries x-opt-qd.to = address and x-opt-qd.phase = phase
 * (delivery.c) and a fresh trace (router/io). */
typedef struct jn_reroute {
    const char *address;
    uint8_t phase;
} jn_reroute_t;

/* jn_forward_route_CT: route dlv to addr as an arrival would (anycast or
 * multicast, local and remote consumers), adding to dlv->ct.pending the
 * copies it makes. For the exchange (exchange.c). */
void jn_forward_route_CT(jn_delivery_t *dlv, jn_addr_t *addr, jn_route_ctx_t *rc);
/* jn_forward_copies_CT: one copy of dlv (settled as dlv is sent) to each
 * of links (n), added to dlv->ct.pending. For the exchange (exchange.c). */
void jn_forward_copies_CT(jn_delivery_t *dlv, jn_core_link_t **links, unsigned n);
/* ---- edge.c (the interior's side of edge routers) ------------------------- */

/* An edge router: its edge connection conn opened / closed (choose the
 * active uplink: the first opened; on its loss the next open one). */
void jn_edge_conn_opened_CT(jn_core_conn_t *conn);
void jn_edge_conn_closed_CT(jn_core_conn_t *conn);
/* An edge router: addr's local consumers or producers changed (a link not
 * on the uplink attached or detached): ask for or close its links on the
 * uplink. */
void jn_edge_local_changed_CT(jn_core_t *core, jn_addr_t *addr);
/* An edge router: link, a per-address uplink sender whose producers went
 * (ct.close_when_sent), has handed out its last waiting copy: close it. */
void jn_edge_sent_all_CT(jn_core_link_t *link);
/* An edge router: every JN_EDGE_HEARTBEAT_MS, a heartbeat up the uplink
 * (when its heartbeat link has credit); how long the core may sleep until
 * the next one (ms). */
void jn_edge_uplink_tick_CT(jn_core_t *core);
int jn_edge_sleep_ms_CT(jn_core_t *core);
#define JN_EDGE_HEARTBEAT_MS 2000
/* An edge router: a delivery on the tracking link ([key, bool]). */
void jn_edge_tracking_arrived_CT(jn_delivery_t *dlv);
/* A delivery on a link served here (JN_LINK_EDGE_TRACKING, _HEARTBEAT,
 * _LOOKUP, _REPLY): to the one that serves its kind. */
void jn_edge_served_arrived_CT(jn_delivery_t *dlv);

/* ---- edge_lookup.c (link-route lookups and proxies, mesh-protocol 11) -- */

/* An edge router, an endpoint link's attach from a client (not the
 * uplink) with an address and no local link route served here: ask the
 * interior whether the address is link-routed (the link waits in
 * JN_LINK_ST_ROUTING) and return true; false: go on at once (no uplink,
 * or the interior's lookup service not attached). The request is sent
 * when the lookup link has credit (jn_edge_clients_tick_CT tries again). */
bool jn_edge_lookup_CT(jn_core_link_t *link);
/* An interior: a lookup request from an edge, answered to its reply-to. */
void jn_edge_lookup_arrived_CT(jn_delivery_t *dlv);
/* An edge router: an answer on its reply link (lookup or management). */
void jn_edge_reply_arrived_CT(jn_delivery_t *dlv);
/* An edge router: the interior answered the reply link's attach with the
 * dynamic address (link->answer_address). */
void jn_edge_reply_answered_CT(jn_core_link_t *link);
/* An edge router: the uplink (de)activated: attach the lookup and
 * management clients' links / forget them, sending the waiting attaches
 * on as if no link route existed. */
void jn_edge_clients_activate_CT(jn_core_t *core);
void jn_edge_clients_lost_CT(jn_core_t *core);
/* An edge router: one of the clients' own links attached / detached. */
void jn_edge_client_link_attached_CT(jn_core_link_t *link);
void jn_edge_client_link_detached_CT(jn_core_link_t *link);
/* An edge router, each batch: lookups that waited too long
 * (JN_EDGE_LOOKUP_TIMEOUT_MS) go on as if no link route existed; link-route
 * proxies to create or delete are sent. */
void jn_edge_clients_tick_CT(jn_core_t *core);
#define JN_EDGE_LOOKUP_TIMEOUT_MS 3000
/* An edge router: the link routes served here changed (linkroute_table.c):
 * their proxies are brought in line on the next tick. */
void jn_edge_proxies_changed_CT(jn_core_t *core);
/* Free the clients' state (jn_core_free). */
void jn_edge_clients_fini(jn_core_t *core);
/* Ask the uplink's I/O thread to attach an edge link of kind (a
 * jn_link_type_t) with address at the interior's end (NULL: none). */
void jn_edge_ask_attach_CT(jn_core_t *core, jn_link_dir_t dir, const char *address, uint8_t kind);
/* linkroute_table.c: fn(arg, key) for each link route (configured or
 * connection-scoped) whose container is connected here (key: C/D/E/F +
 * text, borrowed for the call). */
void jn_lr_each_served_CT(jn_core_t *core, void (*fn)(void *arg, const char *key), void *arg);
/* linkroute_table.c: the address-table rows (router.address) of this router's
 * own link routes, one per mesh key that the address table does not hold
 * already (a key advertised by another router is its row there), as 1.19
 * lists a link route's address from its creation: fn(ctx, row) for rows
 * [offset, offset + max), false stops; returns the number of such rows.
 * Core thread. */
struct jn_view_addr;
size_t jn_lr_view_keys_CT(jn_core_t *core, size_t offset, size_t max,
                          bool (*fn)(void *ctx, const struct jn_view_addr *addr), void *ctx);
/* linkroute.c: route link's attach over conn (an edge router's uplink) with
 * its own name and address; false: out of memory (the link is refused). */
bool jn_lr_attach_via_CT(jn_core_link_t *link, jn_core_conn_t *conn);
/* linkroute_table.c: whether address is link-routed in direction dir here (a
 * configured or advertised route) and whether the route has a container
 * anywhere (has_dest), leaving out the connection `except`. */
bool jn_lr_lookup_CT(jn_core_t *core, const char *address, jn_link_dir_t dir,
                     const jn_core_conn_t *except, bool *has_dest);
/* linkroute_table.c: whether a link route of dir matching address has its
 * container (a route-container connection) connected here. */
bool jn_lr_local_route_CT(jn_core_t *core, const char *address, jn_link_dir_t dir);
/* An edge router: the uplink's anonymous sender, for a delivery with no
 * local destination that did not come down the uplink; NULL: none. */
jn_core_link_t *jn_edge_uplink_for_CT(jn_core_t *core, const jn_delivery_t *dlv);

/* An edge link (JN_LINK_EDGE_*) the edge attached: bind it, or refuse it
 * (or close the connection of a second edge with an id already attached).
 * Core thread; docs/design.md "Edge routers". */
void jn_edge_link_attached_CT(jn_core_link_t *link);
/* An attached edge link detaches. */
void jn_edge_link_detached_CT(jn_core_link_t *link);
/* A delivery on a heartbeat link: noted and consumed. */
void jn_edge_heartbeat_arrived_CT(jn_delivery_t *dlv);
/* Once a second: close the edge connections whose heartbeat is silent for
 * more than JN_EDGE_HEARTBEAT_TIMEOUT_MS. */
void jn_edge_tick_CT(jn_core_t *core);
/* The router did not run for late_ms more than a tick (its own stall:
 * jn_router_tick_CT): every edge's last heartbeat moves on by late_ms, so
 * that heartbeats still unread in its socket are not taken for silence. */
void jn_edge_stalled_CT(jn_core_t *core, int64_t late_ms);
/* A sender on an edge connection was looked at for credit: tell the edge,
 * on its tracking link, when whether its address has a destination other
 * than the edge itself changed. */
void jn_edge_track_CT(jn_core_link_t *link);
/* addr's consumers changed: senders of edge routers to it are looked at
 * again (jn_edge_track_CT). */
void jn_edge_consumers_changed_CT(jn_core_t *core, jn_addr_t *addr);
/* The first consumer of addr not on conn (for anycast from an edge), from
 * the round robin's place; NULL: none. */
jn_core_link_t *jn_edge_pick_other_CT(jn_addr_t *addr, const jn_core_conn_t *conn);

#define JN_EDGE_HEARTBEAT_TIMEOUT_MS 8000

/* ---- coordinator.c (transaction coordinator targets) ---------------------- */

/* jn_coordinator_refused_CT: link is an endpoint attach that no link
 * route took (jn_lr_attach_CT returned false). When its target is a
 * transaction coordinator (AMQP 1.0 4.5.1), refuse it with
 * amqp:precondition-failed (1.19's words: the router coordinates no
 * transaction itself) and return true; otherwise return false and do
 * nothing. Core thread. */
bool jn_coordinator_refused_CT(jn_core_link_t *link);
/* The error of a link-routed attach that finds no container anywhere (no
 * route-container connection here, no router that advertised the route):
 * 1.19's QDR_CONDITION_NO_ROUTE_TO_DESTINATION, for every link, a
 * transaction controller's (coordinator.c) included (docs/design.md,
 * "Link routes"). */
#define JN_LR_NO_ROUTE_CONDITION   "qd:no-route-to-dest"
#define JN_LR_NO_ROUTE_DESCRIPTION "No route to the destination node"

/* ---- linkroute.c (link routes and auto-links) ---------------------------- */

/* Allocate / free the tables (jn_core_create / jn_core_free). */
int jn_lr_init(jn_core_t *core);
void jn_lr_fini(jn_core_t *core);
/* An endpoint link's attach: when a link route matches its address, route
 * it (or refuse it: no container) and return true; false: route it by its
 * address as usual. */
bool jn_lr_attach_CT(jn_core_link_t *link);
/* A link the router attached for a JN_WORK_LINK_ATTACH was reported
 * (link->attach_ref names the request): pair it with what asked for it. */
void jn_lr_local_attached_CT(jn_core_link_t *link);
/* Its peer answered (JN_ACT_LINK_ANSWERED). */
void jn_lr_answered_CT(jn_core_link_t *link);
/* A link that is routed or serves an auto-link (or waits to), or whose
 * detach another link's answer waits for (ct.echo), is detaching: undo the
 * pairing, detach the other end with the error. True when link's own
 * answer waits for the other end's detach (AMQP 1.0 2.6.6: a detach is
 * answered by one): the caller does not release it, linkroute.c does
 * once the other end answered. Core thread. */
bool jn_lr_link_detached_CT(jn_core_link_t *link, bool from_conn_close);
/* Connections opening and closing: auto-links attach and go; requests
 * waiting on a closed connection are answered. */
void jn_lr_conn_opened_CT(jn_core_conn_t *conn);
void jn_lr_conn_closed_CT(jn_core_conn_t *conn);
/* The core timer fired (jn_core_timer_at_CT): re-attach the auto-links
 * whose retry is due, and set the timer for the next. Core thread. */
void jn_lr_tick_CT(jn_core_t *core);
/* The credit a routed incoming link may be granted now (link.c). */
uint32_t jn_lr_credit_due_CT(const jn_core_link_t *link);
/* A draining outgoing link (link->ct.drain) with nothing it may send now
 * (none waiting, or at its unsettled bound) and credit left: the rest of
 * its credit is used up (JN_WORK_LINK_DRAINED: pn_link_drained). Else
 * nothing. Core thread (link.c). */
void jn_link_answer_drain_CT(jn_core_link_t *link);
/* A routed incoming link's credit was flushed (link.c): when the receiver
 * at the other end drains and the sender holds credit, pass the drain to
 * the sender (JN_WORK_LINK_CREDIT, drain, credit 0) once. Core thread. */
void jn_lr_pass_drain_CT(jn_core_link_t *link);
/* A routed incoming link's sender answered the passed drain
 * (jn_core_link_drained_IO): it holds no credit; the receiver's drain is
 * answered once its copies are handed out. Core thread. */
void jn_lr_sender_drained_CT(jn_core_link_t *link);

/* link.c: an endpoint link's attach, from the link-route check on: route
 * it, or bind it to its address (what jn_link_attached_CT does after an
 * edge router's lookup, jn_edge_lookup_CT). */
void jn_link_attach_route_CT(jn_core_link_t *link);

/* link.c: refuse an attach with an error (LINK_CLOSE; waits for the
 * detach). */
void jn_link_refuse_CT(jn_core_link_t *link, const char *condition, const char *description);

/* ---- stream.c (streaming links, mesh-protocol 3.5) ----------------------- */

/* Whether ref (a link's attach_ref) marks a streaming link stream.c asked
 * for. Any thread. */
bool jn_stream_is_ref(const void *ref);
/* The link a copy of dlv takes instead of `to`, an outgoing inter-router
 * data link the forwarding picked (balanced: picked by balanced
 * distribution): `to` itself when the copy does not stream, else an idle
 * streaming link of to's connection (borrowed), or NULL when there is
 * none: dlv then waits for a new one (a delivery reference is kept) and
 * the caller counts the copy in dlv->ct.pending as if it were made; it is
 * made with jn_fwd_deferred_copy_CT. Core thread. */
jn_core_link_t *jn_stream_route_CT(jn_delivery_t *dlv, jn_core_link_t *to, bool balanced);
/* The last of the message on streaming link `link` is queued to the I/O
 * layer, or its copy finished earlier: the link goes back to its pool.
 * Core thread. */
void jn_stream_done_CT(jn_core_link_t *link);
/* A streaming link asked for (jn_stream_is_ref) attached: it takes the
 * oldest waiting delivery of its connection, or goes to the pool. Core
 * thread. */
void jn_stream_attached_CT(jn_core_link_t *link);
/* A streaming link is detaching: out of its pool. Core thread. */
void jn_stream_link_gone_CT(jn_core_link_t *link);
/* conn closed: its waiting deliveries count their copies as not made.
 * Core thread. */
void jn_stream_conn_closed_CT(jn_core_conn_t *conn);
/* The scrubber, from the figures tick (now_ms: jn_time_mono_ms). Core
 * thread. */
void jn_stream_tick_CT(jn_core_t *core, int64_t now_ms);

/* ---- delivery.c ---------------------------------------------------------- */

/* Free an update action the core has taken from its queue. */
void jn_update_action_free(jn_update_action_t *a);

/* Delivery lists (jn_dlv_list_append_CT, jn_dlv_list_remove_CT): inline in
 * delivery.h. */

#endif /* JN_CORE_FNS_H */
