#!/usr/bin/env node
// A rhea client over WebSocket (the `ws` package) for Junction's HTTP
// tests and the WebSocket throughput figure in docs/performance.md:
// connects to a router's http listener (ws:// or wss://, subprotocol
// `amqp`), then sends or receives --count messages on --address and prints
// one JSON line: the counts, the elapsed seconds and any error; exits 0
// only when all went as asked.
//
//   node ws.js --url ws://127.0.0.1:PORT --mode send|recv --address ADDR
//   (or --url amqp://127.0.0.1:PORT: the same over TCP)
//              [--count N] [--size OCTETS] [--ca FILE] [--timeout SECS]
//              [--unsettled 1] [--stall 1] [--credit N]
//              [--cert FILE --key FILE] [--external 1]
// --cert/--key: the client certificate wss:// presents; --external 1:
// authenticate with SASL EXTERNAL (the certificate's identity) instead of
// ANONYMOUS.
// send: waits until the router settled every message (accepted counted).
// recv: accepts each message; checks the body's size when --size is given.
// --stall 1 (recv): after the first message, stop reading the socket (a
// client that stops reading) and stay until killed, printing "stalled".
'use strict';
const fs = require('fs');
const rhea = require('rhea');
const WebSocket = require('ws');

const args = { count: 10, timeout: 30, size: 0, unsettled: 1, stall: 0, credit: 250 };
const argv = process.argv.slice(2);
for (let i = 0; i + 1 < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    args[key] = ['url', 'mode', 'address', 'ca', 'cert', 'key'].includes(key) ? argv[i + 1]
                                                                        : Number(argv[i + 1]);
}
if (!args.url || !args.address || !['send', 'recv'].includes(args.mode)) {
    process.stderr.write('usage: --url URL --mode send|recv --address ADDR [--count N] ' +
                         '[--size OCTETS] [--ca FILE] [--timeout SECS]\n');
    process.exit(2);
}

const counts = { sent: 0, accepted: 0, rejected: 0, released: 0, modified: 0, received: 0,
                 bad: 0 };
const start = process.hrtime.bigint();
const container = rhea.create_container({ id: 'rhea-ws-' + args.mode + '-' + process.pid });
const timer = setTimeout(() => finish('timed out after ' + args.timeout + ' s'),
                         args.timeout * 1000);

let finished = false;
// Print the result; on success close the AMQP connection first (so the
// last dispositions reach the router), then exit.
function finish(error) {
    if (finished)
        return;
    finished = true;
    clearTimeout(timer);
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    process.stdout.write(JSON.stringify(Object.assign({ error: error || null, seconds }, counts)) +
                         '\n');
    if (error)
        process.exit(1);
    conn.close();
    container.on('connection_close', () => process.exit(0));
    setTimeout(() => process.exit(0), 2000);
}

const body = args.size > 0 ? Buffer.alloc(args.size, 0x61) : null;
const options = {};
if (args.ca)
    options.ca = fs.readFileSync(args.ca);
if (args.cert) {
    options.cert = fs.readFileSync(args.cert);
    options.key = fs.readFileSync(args.key);
}
let socket = null; // the last WebSocket made (for --stall)
class Recorded extends WebSocket {
    constructor(...a) {
        super(...a);
        socket = this;
    }
}
const connect = rhea.websocket_connect(Recorded);
// amqp://HOST:PORT: the same client over plain TCP (for the comparison in
// docs/performance.md)
const tcp = /^amqp:\/\/([^:/]+):(\d+)/.exec(args.url);
const conn = container.connect(Object.assign(
    tcp ? { host: tcp[1], port: Number(tcp[2]) }
        : { connection_details: connect(args.url, ['amqp'], options) },
    args.external ? { sasl_mechanisms: external(), reconnect: false }
                  : { username: 'anonymous', reconnect: false }));

// SASL EXTERNAL only: the identity is the TLS client certificate's
function external() {
    const m = container.sasl.client_mechanisms();
    m.enable_external();
    return m;
}

if (args.mode === 'send') {
    const sender = conn.open_sender({ target: { address: args.address },
                                      snd_settle_mode: args.unsettled ? 0 : 1 });
    sender.on('sendable', (context) => {
        while (context.sender.sendable() && counts.sent < args.count) {
            const i = counts.sent++;
            context.sender.send({ message_id: 'ws-' + i, application_properties: { seq: i },
                                  body: body ? rhea.message.data_section(body) : 'message ' + i });
        }
        if (!args.unsettled && counts.sent === args.count)
            finish(null);
    });
    for (const outcome of ['accepted', 'rejected', 'released', 'modified']) {
        container.on(outcome, () => {
            counts[outcome]++;
            const done = counts.accepted + counts.rejected + counts.released + counts.modified;
            if (done === args.count)
                finish(counts.accepted === args.count ? null : 'not every message was accepted');
        });
    }
} else {
    conn.open_receiver({ source: { address: args.address }, credit_window: args.credit });
    container.on('message', (context) => {
        counts.received++;
        if (args.stall && counts.received === 1) {
            socket._socket.pause(); // TCP backpressure reaches the router
            clearTimeout(timer);
            process.stdout.write('stalled\n');
            return;
        }
        const b = context.message.body;
        const got = b && (b.content ? b.content.length : b.length);
        if (args.size > 0 && got !== args.size)
            counts.bad++;
        if (counts.received === args.count)
            finish(counts.bad ? counts.bad + ' bodies of the wrong size' : null);
    });
}

container.on('disconnected', (context) => finished ? process.exit(0)
                                          : finish('disconnected: ' + (context.error || '')));
container.on('connection_error', (context) => finish('connection error: ' +
                                                     JSON.stringify(context.connection.error)));
container.on('sender_error', (context) => finish('sender error: ' +
                                                 JSON.stringify(context.sender.error)));
container.on('receiver_error', (context) => finish('receiver error: ' +
                                                   JSON.stringify(context.receiver.error)));
