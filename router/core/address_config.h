/*
 * address_config.h — the `address` entities' prefixes and patterns, and the
 * matcher that picks which one decides a mobile address's distribution.
 * Private to router/core (exposed here for its unit test,
 * tests/unit/test_core_address.c).
 *
 * Matching. An address is split into tokens at every '.' and '/'.
 *   - A prefix P matches address A when A equals P, or A starts with P and
 *     the next octet of A is '.' or '/'.
 *   - A pattern is tokens separated by '.' or '/': '*' matches exactly one
 *     token, '#' zero or more tokens, any other token itself (octet for
 *     octet). A pattern token and an address token match regardless of
 *     which separator preceded them.
 * When several entries match, the most specific wins, compared token by
 * token from the first address token: at the first token where two matches
 * differ, a literal match beats '*', which beats '#'. A prefix counts as
 * its own tokens matched literally followed by '#' (so the longest matching
 * prefix wins among prefixes). Equal specificity: a prefix beats a pattern,
 * then the entry added first wins. This is what a token trie that tries
 * literal, then '*', then '#' finds (qdrouterd's parse tree does the same).
 *
 * Cost: matching runs once per address, when the address is created (a link
 * attaches to it), never per delivery. It allocates a little scratch memory.
 *
 * Threads: the table is filled by the main thread before the core starts and
 * read only by the core thread afterwards; the functions have no state of
 * their own.
 */
#ifndef JN_CORE_ADDRESS_CONFIG_H
#define JN_CORE_ADDRESS_CONFIG_H 1

#include <junction/core.h>

/* Addresses or patterns with more tokens than this are not matched against
 * patterns (prefixes still match): the matcher recurses once per token. */
#define JN_ADDR_CONFIG_MAX_TOKENS 256

typedef struct jn_addr_config_entry {
    char *text;   /* prefix, or pattern with runs of '#' collapsed (heap) */
    size_t len;   /* octets of text */
    bool pattern; /* false: a prefix */
    jn_distribution_t distribution;
    /* multicastBackpressure (Junction): a multicast address's senders wait
     * for its slowest consumer instead of that consumer's copies being
     * dropped past its backlog (forward.c). Set by the caller after
     * jn_addr_config_add (the new entry is the last one); false there. */
    bool mc_backpressure;
    /* ingressPhase / egressPhase (waypoint: yes is egress 1): the phase of
     * the address for a sending link (ingress) and for a receiving link
     * (egress), 0..9. Set by the caller after jn_addr_config_add; 0 there. */
    uint8_t ingress_phase, egress_phase;
    /* enableFallback: a delivery that finds no destination for the address
     * goes to its fallback destinations (key M F <address>). Set like the
     * phases. */
    bool fallback;
    /* priority: the priority of the inter-router data link a matching
     * address's deliveries take (0..9), instead of their header's; -1: the
     * header's (the default). Set like the phases. */
    int8_t priority;
} jn_addr_config_entry_t;

/* The table. Owned by its jn_core_t (see the threads note above). */
typedef struct jn_addr_config {
    jn_addr_config_entry_t *entries; /* heap array, in the order added */
    size_t count;
    size_t capacity;
} jn_addr_config_t;

/* jn_addr_config_init: an empty table. Cannot fail. */
void jn_addr_config_init(jn_addr_config_t *cfg);

/* jn_addr_config_fini: free the entries; the table is empty afterwards. */
void jn_addr_config_fini(jn_addr_config_t *cfg);

/* jn_addr_config_text_len: the octets of prefix or pattern text (NUL-
 * terminated) that count: the text without the separators ('.', '/') at
 * its end, as 1.19 reads a prefix "a." (its link-route tests route
 * "a.b" by it): "a." and "a" match the same addresses. 0 when the text
 * is empty or only separators. Pure; any thread. */
size_t jn_addr_config_text_len(const char *text);

/* jn_addr_config_add: add a prefix (pattern false) or a pattern with its
 * distribution. text is NUL-terminated; its counted octets
 * (jn_addr_config_text_len) are copied. A pattern is stored with
 * each run of '#' tokens collapsed to one ("a.#.#" is "a.#"), which matches
 * the same addresses.
 * Returns 0; JN_EINVAL for NULL, empty or only-separator text or a distribution outside
 * jn_distribution_t; JN_EEXIST when the same prefix, or the same pattern
 * after collapsing, is already there; JN_ENOMEM. */
int jn_addr_config_add(jn_addr_config_t *cfg, const char *text, bool pattern,
                       jn_distribution_t distribution);

/* jn_addr_config_match: the index of the entry that decides the address of
 * len octets at addr (a JN_VIEW_ADDRESS body, e.g. "queue.a"; need not be
 * NUL-terminated), or -1 when no entry matches (and on ENOMEM of the scratch
 * memory, which is then also -1: the router's default applies). */
int jn_addr_config_match(const jn_addr_config_t *cfg, const char *addr, size_t len);

#endif /* JN_CORE_ADDRESS_CONFIG_H */
