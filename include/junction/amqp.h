/*
 * junction/amqp.h — AMQP 1.0 constants: format codes of the type system
 * (spec part 1, section 1.6), section descriptors of the message format
 * (part 3, section 3.2) and the router's own annotation keys
 * (docs/protocol.md, "The mesh": "Router annotations"). Data only.
 */
#ifndef JUNCTION_AMQP_H
#define JUNCTION_AMQP_H 1

/* Format codes (AMQP 1.0 part 1, 1.6). */
enum {
    JN_AMQP_DESCRIBED = 0x00,
    JN_AMQP_NULL = 0x40,
    JN_AMQP_BOOLEAN = 0x56,
    JN_AMQP_TRUE = 0x41,
    JN_AMQP_FALSE = 0x42,
    JN_AMQP_UBYTE = 0x50,
    JN_AMQP_USHORT = 0x60,
    JN_AMQP_UINT = 0x70,
    JN_AMQP_SMALLUINT = 0x52,
    JN_AMQP_UINT0 = 0x43,
    JN_AMQP_ULONG = 0x80,
    JN_AMQP_SMALLULONG = 0x53,
    JN_AMQP_ULONG0 = 0x44,
    JN_AMQP_BYTE = 0x51,
    JN_AMQP_SHORT = 0x61,
    JN_AMQP_INT = 0x71,
    JN_AMQP_SMALLINT = 0x54,
    JN_AMQP_LONG = 0x81,
    JN_AMQP_SMALLLONG = 0x55,
    JN_AMQP_FLOAT = 0x72,
    JN_AMQP_DOUBLE = 0x82,
    JN_AMQP_DECIMAL32 = 0x74,
    JN_AMQP_DECIMAL64 = 0x84,
    JN_AMQP_DECIMAL128 = 0x94,
    JN_AMQP_CHAR = 0x73,
    JN_AMQP_TIMESTAMP = 0x83,
    JN_AMQP_UUID = 0x98,
    JN_AMQP_VBIN8 = 0xa0,
    JN_AMQP_VBIN32 = 0xb0,
    JN_AMQP_STR8 = 0xa1,
    JN_AMQP_STR32 = 0xb1,
    JN_AMQP_SYM8 = 0xa3,
    JN_AMQP_SYM32 = 0xb3,
    JN_AMQP_LIST0 = 0x45,
    JN_AMQP_LIST8 = 0xc0,
    JN_AMQP_LIST32 = 0xd0,
    JN_AMQP_MAP8 = 0xc1,
    JN_AMQP_MAP32 = 0xd1,
    JN_AMQP_ARRAY8 = 0xe0,
    JN_AMQP_ARRAY32 = 0xf0
};

/* Message section descriptors (AMQP 1.0 part 3, 3.2), as ulong codes. */
enum {
    JN_SECTION_HEADER = 0x70,
    JN_SECTION_DELIVERY_ANNOTATIONS = 0x71,
    JN_SECTION_MESSAGE_ANNOTATIONS = 0x72,
    JN_SECTION_PROPERTIES = 0x73,
    JN_SECTION_APPLICATION_PROPERTIES = 0x74,
    JN_SECTION_DATA = 0x75,
    JN_SECTION_AMQP_SEQUENCE = 0x76,
    JN_SECTION_AMQP_VALUE = 0x77,
    JN_SECTION_FOOTER = 0x78
};

/* Router message-annotation keys (symbols; docs/protocol.md, "Router annotations"). */
#define JN_RA_PREFIX "x-opt-qd."
#define JN_RA_TO "x-opt-qd.to"
#define JN_RA_PHASE "x-opt-qd.phase"
#define JN_RA_INGRESS "x-opt-qd.ingress"
#define JN_RA_TRACE "x-opt-qd.trace"
#define JN_RA_STREAM "x-opt-qd.stream"
#define JN_RA_CLASS "x-opt-qd.class"

/* Phase value on the wire that stands for the fallback phase 'F'. */
#define JN_RA_PHASE_FALLBACK 22

#endif /* JUNCTION_AMQP_H */
