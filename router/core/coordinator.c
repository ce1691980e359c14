/*
 * coordinator.c — links whose target is a transaction coordinator (AMQP
 * 1.0 4.5.1, the controller's link of a client that declares
 * transactions).
 *
 * The router coordinates no transaction itself. The I/O layer reports a
 * coordinator target with the address JN_COORDINATOR_ADDRESS
 * ("$coordinator"), so a link route whose prefix or pattern matches that
 * address (direction in) carries the controller's link, its termini
 * (the coordinator and its capabilities) copied, to the broker that
 * coordinates: declare, discharge and the transactional deliveries then
 * pass as on any routed link (linkroute.c). A coordinator link that no
 * link route takes is refused, never bound to an address of that name;
 * one whose link route has no container anywhere is refused with
 * qd:no-route-to-dest (as any link route's attach then is, linkroute.c).
 * Both errors are 1.19's, which clients read.
 *
 * Threads: the core thread.
 */
#include "core_private.h"

#define COORDINATOR_REFUSAL                                                                        \
    "The router can't coordinate transactions by itself, a linkRoute to a coordinator must "       \
    "be configured to use transactions."

bool jn_coordinator_refused_CT(jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    if (!link->coordinator)
        return false;
    jn_link_refuse_CT(link, "amqp:precondition-failed", COORDINATOR_REFUSAL);
    return true;
}
