/*
 * junction/message.h — message content: the octets of one AMQP message
 * (spec part 3, section 3.2), received incrementally, parsed only as far as
 * routing needs, and sent on, possibly to many links at once.
 *
 * A jn_message_t is refcounted content. One thread (the receiving I/O
 * thread) appends octets and parses; any number of threads hold references
 * and read the published octets to send copies (jn_message_out_t). The
 * body is never decoded.
 *
 * Parsing locates sections in order as octets arrive: header,
 * delivery-annotations, message-annotations, properties,
 * application-properties, then the body sections (data, amqp-sequence or
 * amqp-value, any number of them) and the footer. Of these only the header
 * fields, the message annotations (see junction/annotations.h) and the
 * properties `to` and `reply-to` are decoded; the others are skipped by their
 * size. A section out of order, a section that is not a described list/map
 * of the right descriptor, or a size that overruns the data makes the message
 * malformed (JN_EPROTO), and jn_message_error() says why.
 */
#ifndef JUNCTION_MESSAGE_H
#define JUNCTION_MESSAGE_H 1

#include <junction/annotations.h>
#include <junction/buffer.h>
#include <junction/iterator.h>

typedef struct jn_message jn_message_t;

/* How far to parse: each depth includes the ones before it. */
typedef enum jn_message_depth {
    JN_DEPTH_NONE = 0,
    JN_DEPTH_HEADER,
    JN_DEPTH_DELIVERY_ANNOTATIONS,
    JN_DEPTH_MESSAGE_ANNOTATIONS,
    JN_DEPTH_PROPERTIES,
    JN_DEPTH_APPLICATION_PROPERTIES,
    JN_DEPTH_BODY, /* the first body section located */
    JN_DEPTH_ALL   /* every section, up to the end of the complete message */
} jn_message_depth_t;

/* Sections, for jn_message_section(). */
typedef enum jn_section {
    JN_SEC_HEADER = 0,
    JN_SEC_DELIVERY_ANNOTATIONS,
    JN_SEC_MESSAGE_ANNOTATIONS,
    JN_SEC_PROPERTIES,
    JN_SEC_APPLICATION_PROPERTIES,
    JN_SEC_BODY, /* from the first body section to the end of the last one */
    JN_SEC_FOOTER,
    JN_SEC_COUNT
} jn_section_t;

/* The header section's fields (defaults when absent, spec 3.2.1). */
typedef struct jn_message_header {
    bool durable;
    uint8_t priority; /* default 4 */
    bool has_ttl;
    uint32_t ttl; /* milliseconds */
    bool first_acquirer;
    uint32_t delivery_count;
} jn_message_header_t;

/* jn_message_new: empty content, refcount 1. NULL on ENOMEM. Any thread. */
jn_message_t *jn_message_new(void);

/* jn_message_ref: add a reference; returns m. Any thread. */
jn_message_t *jn_message_ref(jn_message_t *m);

/* jn_message_unref: drop a reference; at zero the content and its buffers go
 * back to their pools. NULL is ignored. Any thread. */
void jn_message_unref(jn_message_t *m);

/* --- receiving (the one writer thread) --------------------------------- */

/* jn_message_write_space: where to write the next octets: *ptr and *len
 * describe free space at the end of the tail buffer (a new buffer is added
 * when the tail is full). Follow with jn_message_write_commit(). Returns 0
 * or JN_ENOMEM. Hot path: pn_link_recv() writes straight into it. */
int jn_message_write_space(jn_message_t *m, uint8_t **ptr, size_t *len);

/* jn_message_write_commit: publish n octets written at the space returned by
 * the last jn_message_write_space() (n <= its len). */
void jn_message_write_commit(jn_message_t *m, size_t n);

/* jn_message_append: copy len octets at data to the end of the content.
 * Returns 0 or JN_ENOMEM. */
int jn_message_append(jn_message_t *m, const void *data, size_t len);

/* jn_message_append_buffers: link the buffers of list (already filled, e.g.
 * by jn_encoder_to_buffers() for a message this router composes, or taken
 * whole from the input by jn_amqp_transport_take) after the content's
 * tail, taking over the list's references; the list is left empty. The
 * tail before them is topped up no more, even when short (so a chain may
 * hold a short buffer mid-chain: every reader goes by each buffer's size);
 * later writes top up the last of them. The writer thread. Returns 0. */
int jn_message_append_buffers(jn_message_t *m, jn_buffer_list_t *list);

/* jn_message_set_complete / jn_message_set_aborted: the last octet has
 * arrived / the sender aborted the delivery. Release order: a reader that
 * sees the flag sees every octet. */
void jn_message_set_complete(jn_message_t *m);
void jn_message_set_aborted(jn_message_t *m);

/* jn_message_set_complete_unshared: jn_message_set_complete for a message
 * no other thread can reach yet (the receiving link's own, before any
 * delivery holds it): a plain store instead of an atomic read-modify-write.
 * The release that later publishes the message (the core's queue) carries
 * it. The writer thread. */
void jn_message_set_complete_unshared(jn_message_t *m);

/* --- state, any thread holding a reference ----------------------------- */

bool jn_message_is_complete(const jn_message_t *m);
bool jn_message_is_aborted(const jn_message_t *m);
/* octets published so far */
size_t jn_message_length(const jn_message_t *m);
/* the first buffer of the content (NULL while empty); borrowed */
const jn_buffer_t *jn_message_buffers(const jn_message_t *m);

/* --- parsing (the writer thread, or any thread once complete) ---------- */

/* jn_message_parse: locate sections up to depth. Returns 0 when everything
 * up to depth is located (or known absent), JN_AGAIN when more octets are
 * needed (call again after more arrive), JN_EPROTO when the message is
 * malformed (jn_message_error() tells why; the message stays malformed). A
 * message parsed to JN_DEPTH_MESSAGE_ANNOTATIONS has its router annotations
 * read too (jn_message_annotations()), with honour_router_keys as given to
 * jn_message_set_annotation_policy(). JN_DEPTH_ALL needs the complete
 * message. A delivery aborted before the octets needed arrived also gives
 * JN_EPROTO (an aborted delivery is dropped, not rejected: check
 * jn_message_is_aborted() first).
 * Resumable: the parser keeps the offset of the next section and re-reads
 * only that section's head (descriptor, constructor, size) on the next
 * call. Sections before the body are taken once all their octets are in;
 * body sections and the footer are stepped over by their size.
 * Threads: the writer thread, or one thread once the message is complete.
 * What a call located is immutable afterwards: another thread that got the
 * message through a queue after the call may read it with the accessors
 * below. */
int jn_message_parse(jn_message_t *m, jn_message_depth_t depth);

/* jn_message_set_annotation_policy: whether router keys in the message
 * annotations are read (inter-router and edge connections, stripAnnotations
 * out/no) or treated as absent and dropped (stripAnnotations in/both,
 * the default for normal connections). Call before parsing. */
void jn_message_set_annotation_policy(jn_message_t *m, bool honour_router_keys);

/* jn_message_error: a description of why parsing failed, suitable for the
 * description of an amqp:decode-error (or amqp:invalid-field) rejection; NULL
 * while the message is not malformed. Static or content-owned string. */
const char *jn_message_error(const jn_message_t *m);

/* jn_message_error_condition: the AMQP error condition for the failure:
 * "amqp:decode-error" for malformed encodings, "amqp:invalid-field" for
 * router annotations of the wrong type (docs/protocol.md, "Router annotations"); NULL while
 * not malformed. Static string. */
const char *jn_message_error_condition(const jn_message_t *m);

/* jn_message_section: a raw view of the whole encoding of a located section
 * (descriptor included). JN_SEC_BODY covers every body section. Returns 0,
 * JN_ENOENT when the section is absent, JN_AGAIN when parsing has not got
 * that far (JN_SEC_BODY and JN_SEC_FOOTER need JN_DEPTH_ALL, the others their
 * own depth), JN_EINVAL for an unknown section. */
int jn_message_section(const jn_message_t *m, jn_section_t section, jn_iter_t *out);

/* jn_message_get_header: the header fields (defaults if absent). Returns 0 or
 * JN_AGAIN when the header is not parsed yet. */
int jn_message_get_header(const jn_message_t *m, jn_message_header_t *out);

/* jn_message_to / jn_message_reply_to: a JN_VIEW_ADDRESS view of the
 * properties `to` / `reply-to` string. Returns 0, JN_ENOENT if absent (no
 * properties, or the field is null), JN_AGAIN if properties are not parsed
 * yet. A non-string address is malformed (found by jn_message_parse). */
int jn_message_to(const jn_message_t *m, jn_iter_t *out);
int jn_message_reply_to(const jn_message_t *m, jn_iter_t *out);

/* jn_message_to_field: the properties `to` string as a raw view of its
 * octets, without jn_message_to's address view (for a caller that compares
 * the octets as they are, e.g. the core's per-link address memo). Returns
 * as jn_message_to does. Any thread that holds the message; no spec section
 * beyond jn_message_to's (AMQP 1.0 section 3.2.4, properties). */
int jn_message_to_field(const jn_message_t *m, jn_iter_t *out);

/* jn_message_user_id: a raw view of the properties `user-id` (binary; a
 * string is taken as its octets too), read on demand, not by
 * jn_message_parse. Returns 0, JN_ENOENT if absent (no properties, or
 * null), JN_AGAIN if properties are not parsed yet, JN_EINVAL if it is of
 * another type. Any thread holding a reference. AMQP 1.0 part 3, 3.2.4;
 * docs/design.md "The user-id check". */
int jn_message_user_id(const jn_message_t *m, jn_iter_t *out);

/* jn_message_annotations: the router annotations read from the message
 * annotations (all absent when there is no such section); borrowed, valid
 * while m is referenced. NULL if not parsed that far. */
const jn_ra_t *jn_message_annotations(const jn_message_t *m);

/* --- sending a copy (any thread holding a reference) ------------------- */

/* The octets of one outgoing copy, produced as segments to hand to
 * pn_link_send(): the original header and delivery annotations, a new
 * message-annotations section (or none), then the original octets from
 * properties onward, shared with every other copy. Delivery annotations
 * pass as they came, as 1.19 forwards them (the router acts on none).
 * Owned by the sending thread; holds a reference on m and on
 * the annotation buffers. */
typedef struct jn_message_out {
    jn_message_t *message;         /* referenced */
    jn_buffer_list_t annotations;  /* the composed message-annotations section */
    const jn_buffer_t *buffer;     /* original buffer at or before position */
    size_t buffer_start;           /* content offset of buffer's first octet */
    size_t position;               /* content offset of the next original octet */
    size_t skip_from, skip_to;     /* original octets replaced by annotations */
    const jn_buffer_t *ann_buffer; /* annotations: next buffer to send */
    uint8_t stage;                 /* private */
} jn_message_out_t;

/* jn_message_out_init: start a copy of m (parsed at least to
 * JN_DEPTH_MESSAGE_ANNOTATIONS) that replaces its message-annotations section
 * (if any) with the encoded section in *annotations (taken over: the list is
 * left empty; pass an empty list for no section). Takes a reference on m.
 * Returns 0 or JN_EINVAL (not parsed that far, or malformed; the list is
 * then left with the caller). */
int jn_message_out_init(jn_message_out_t *o, jn_message_t *m, jn_buffer_list_t *annotations);

/* jn_message_out_init_verbatim: start a copy of m that is its octets as
 * they came, every section included (a link-routed delivery: nothing
 * added, removed or replaced; docs/protocol.md, "Link routes,
 * auto-links and phases on the wire"). m need not be parsed at all.
 * Takes a reference on m. Returns 0; never fails. Any thread holding a
 * reference; hot path for link routes. */
int jn_message_out_init_verbatim(jn_message_out_t *o, jn_message_t *m);

/* jn_message_out_next: the next segment to send: *ptr and *len (borrowed, valid
 * while o lives; len > 0). Returns 1 with a segment, 0 when the whole copy
 * has been produced (the message is complete and all octets were handed
 * out), JN_AGAIN when the next octets have not arrived yet (call again after
 * more are published), JN_EPROTO when the incoming delivery was aborted
 * (abort the outgoing one). Hot path: a segment is a run of one buffer. */
int jn_message_out_next(jn_message_out_t *o, const uint8_t **ptr, size_t *len);

/* jn_message_out_next_buffer: as jn_message_out_next, but the segment is
 * given as the buffer it lies in (*buf, borrowed: valid while o lives and
 * the message keeps it; take a reference with jn_buffer_ref to keep it
 * longer, e.g. while a copy that has passed it is trimmed, junction/
 * buffer.h) and *offset, *len octets into that buffer's data. For a sender
 * that references the octets in its output instead of copying them (the
 * own engine's jn_amqp_delivery_send). Same results as
 * jn_message_out_next. Thread of o's owner; hot path. */
int jn_message_out_next_buffer(jn_message_out_t *o, const jn_buffer_t **buf, size_t *offset,
                               size_t *len);

/* jn_message_out_fini: release what o holds. */
void jn_message_out_fini(jn_message_out_t *o);

/* --- streaming: how far the copies got (message_stream.c) ------------- */

/* A message being received can be released from behind while its copies
 * are still sent: buffers every copy has passed go back to the pool before
 * the last octet arrives, so a message larger than memory passes with a
 * bounded footprint. This needs the set of copies to be final and each
 * copy to report its progress:
 *   - the core calls jn_message_stream_set_copies() once no new copy of the
 *     message can start (all handed out, or none);
 *   - each sending thread calls jn_message_stream_copy_begin() after
 *     jn_message_out_init(), jn_message_stream_copy_progress() after it
 *     handed segments on, and jn_message_stream_copy_end() before
 *     jn_message_out_fini() (or begin+end at once for a copy it drops);
 *   - the writer calls jn_message_stream_trim() as it reads.
 * Until the set is final, or when there are more copies than
 * JN_MESSAGE_STREAM_SLOTS, nothing is released and trim returns 0. After
 * buffers were released, jn_message_buffers() walks a chain with a gap:
 * only the copies registered here may read past the pinned prefix (header,
 * annotations, properties), and no new copy may be started. */
#define JN_MESSAGE_STREAM_SLOTS 4

/* jn_message_stream_set_copies: the message has exactly `copies` copies
 * and no other will start. Any thread (the core's, after it handed out the
 * last copy). */
void jn_message_stream_set_copies(jn_message_t *m, unsigned copies);

/* jn_message_stream_copy_begin: register a copy; returns its slot, or -1
 * when the message has more copies than slots (pass -1 on: the calls below
 * then do nothing). The sending thread. */
int jn_message_stream_copy_begin(jn_message_t *m);

/* jn_message_stream_copy_progress: the copy with cursor o (of m) has handed
 * on everything before its cursor's buffer. The sending thread; hot path:
 * one release store. */
void jn_message_stream_copy_progress(jn_message_t *m, int slot, const jn_message_out_t *o);

/* jn_message_stream_copy_end: the copy needs no more octets (sent, aborted
 * or dropped). The sending thread. */
void jn_message_stream_copy_end(jn_message_t *m, int slot);

/* jn_message_stream_trim: release the buffers every copy has passed (once
 * the set of copies is final and all of them registered) and return the
 * backlog: octets published that the slowest registered copy has not
 * passed yet (0 while the set is not final or the message is untracked).
 * The writer thread only. */
size_t jn_message_stream_trim(jn_message_t *m);

/* --- holding: what one incoming link holds (message_stream.c) ---------- */

/* A message's content is needed until every copy of it has been sent: its
 * buffers are released then, even though its deliveries live on until they
 * are settled (an outcome travels back without the content). Exactly then
 * means: the writer is done with it (jn_message_stream_writer_done), the
 * set of copies is final (jn_message_stream_set_copies) and every copy has
 * ended (jn_message_stream_copy_end, registered or not). Whichever of
 * those calls comes last releases the buffers; after that the message
 * keeps only its length, flags and parse results that do not point into
 * octets (no new copy may start, jn_message_buffers() is NULL). A message
 * that misses one of the calls (one the router composed, a copy whose
 * work was dropped with its connection) keeps its buffers until its last
 * reference goes, as before.
 *
 * The octets a message still holds when its writer is done are charged to
 * the budget of the link it arrived on (a jn_rx_budget_t), and given back
 * when its buffers are released (or the message is freed). The receiving
 * side stops taking new deliveries on the link while the budget is above
 * its high-water mark and resumes once it is below its low-water mark: the
 * budget calls its waker then, from the thread that released the octets.
 * Hot path cost: two atomic additions and a budget reference per message. */
typedef struct jn_rx_budget jn_rx_budget_t;

/* jn_rx_budget_new: a budget with the given marks (low < high), refcount
 * 1, no waker. NULL on ENOMEM. Any thread (at link attach, not per
 * message). */
jn_rx_budget_t *jn_rx_budget_new(size_t high, size_t low);

/* jn_rx_budget_unref: drop a reference (each charged message holds one).
 * NULL is ignored. Any thread. */
void jn_rx_budget_unref(jn_rx_budget_t *b);

/* jn_rx_budget_set_waker: wake(ctx) is called, from any thread and without
 * blocking, when the budget falls below its low-water mark after
 * jn_rx_budget_stop returned true. Pass NULL to clear it: after the call
 * returns, wake is not running and will not be called again (ctx may then
 * go). Takes the budget's lock (see message_stream.c); not per message. */
void jn_rx_budget_set_waker(jn_rx_budget_t *b, void (*wake)(void *ctx), void *ctx);

/* jn_rx_budget_stop: true when the link must stop taking deliveries (the
 * budget is above its high-water mark); the waker is then called once it
 * falls below the low-water mark (possibly at once). False (go on) for a
 * NULL budget. The receiving thread. */
bool jn_rx_budget_stop(jn_rx_budget_t *b);

/* jn_rx_budget_waiting: after jn_rx_budget_stop returned true: still above
 * the low-water mark (the wake has not been given). The receiving thread. */
bool jn_rx_budget_waiting(jn_rx_budget_t *b);

/* jn_rx_budget_held: octets charged and not given back. Any thread. */
size_t jn_rx_budget_held(jn_rx_budget_t *b);

/* jn_message_stream_writer_done: the writer will write, trim and parse the
 * message no more (it is complete, aborted, or abandoned). Charges what
 * the message still holds to b (NULL: charge nothing). Call once, only for
 * a message given to the core. The writer thread. */
void jn_message_stream_writer_done(jn_message_t *m, jn_rx_budget_t *b);

/* --- message logging's names (log_components.c) ----------------------- */

/* The properties section's fields, in their list order (message-id ...
 * reply-to-group-id); jn_message_property_name(i) is the name of field i
 * (NULL past the last). */
#define JN_MESSAGE_PROPERTY_COUNT 13
const char *jn_message_property_name(size_t index);

/* jn_message_log_components: a listener's or connector's
 * messageLoggingComponents ("all", "none", or a comma list of property
 * names and "app-properties") as a mask: bit i for property i,
 * JN_MESSAGE_LOG_APP_PROPERTIES for the application properties. Returns 0,
 * or JN_EINVAL with *bad and *bad_len (when bad is not NULL) the name not
 * known. NULL spec: 0. Pure; any thread. */
#define JN_MESSAGE_LOG_APP_PROPERTIES (1u << JN_MESSAGE_PROPERTY_COUNT)
int jn_message_log_components(const char *spec, uint32_t *out, const char **bad,
                              size_t *bad_len);

#endif /* JUNCTION_MESSAGE_H */
