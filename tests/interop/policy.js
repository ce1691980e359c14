#!/usr/bin/env node
// A rhea client for Junction's vhost policy tests
// (tests/system/test_router_policy_limits.py): connects to a router on
// 127.0.0.1 with SASL ANONYMOUS and the Open hostname --hostname, attaches
// the links of --links one after the other (a JSON list of
// {"kind": "sender"|"receiver", "address": ADDR}), and records for each
// "open" or the condition the router detached it with, and for a sender
// the max-message-size its attach advertised. With --size N, the first
// sender that opens sends one message of N octets and the outcome (the
// condition of a rejected outcome, of the link's close, "accepted") is
// recorded. Prints one JSON line and exits 0 (1 on a timeout).
//
//   node policy.js --port PORT --hostname HOST --links JSON [--size N] [--timeout SECS]
'use strict';
const rhea = require('rhea');

const args = { timeout: 30, size: 0 };
const argv = process.argv.slice(2);
for (let i = 0; i + 1 < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    args[key] = ['port', 'size', 'timeout'].includes(key) ? Number(argv[i + 1]) : argv[i + 1];
}
if (!args.port || !args.hostname || !args.links) {
    process.stderr.write('usage: --port PORT --hostname HOST --links JSON [--size N]\n');
    process.exit(2);
}
const wanted = JSON.parse(args.links);
const out = { links: [], sent: null, connection: null };
const timer = setTimeout(() => finish('timed out after ' + args.timeout + ' s'), args.timeout * 1000);

function finish(error) {
    clearTimeout(timer);
    out.error = error || null;
    process.stdout.write(JSON.stringify(out) + '\n');
    process.exit(error ? 1 : 0);
}

const container = rhea.create_container({ id: 'rhea-policy' });
const conn = container.connect({ host: '127.0.0.1', port: args.port, hostname: args.hostname,
                                 username: 'anonymous', reconnect: false });
let index = -1;
let sending = null;

function done() {
    return index >= wanted.length && (!args.size || out.sent !== null);
}

function next() {
    index++;
    if (index >= wanted.length) {
        if (done())
            finish();
        return;
    }
    const w = wanted[index];
    if (w.kind === 'sender')
        conn.open_sender({ target: { address: w.address }, name: 'l' + index });
    else
        conn.open_receiver({ source: { address: w.address }, name: 'l' + index });
}

function opened(context, link, terminus) {
    const i = Number(link.name.slice(1));
    if (!link.remote.attach[terminus] || !link.remote.attach[terminus].address)
        return; // refused: an attach without it, then the detach
    out.links[i] = { result: 'open' };
    if (link.is_sender()) {
        out.links[i].max_message_size = link.remote.attach.max_message_size || 0;
        if (args.size && !sending)
            sending = link;
    }
    next();
}

function failed(link) {
    const i = Number(link.name.slice(1));
    const cond = link.remote.detach && link.remote.detach.error;
    if (link === sending) {
        if (out.sent !== null)
            return;
        if (!cond)
            return; // the outcome or the connection's close says why (below)
        out.sent = cond.condition;
        if (done())
            finish();
        return;
    }
    if (out.links[i])
        return; // its close after its error, or a close of an open link
    out.links[i] = { result: cond ? cond.condition : 'detached' };
    next();
}

container.on('sender_open', (context) => opened(context, context.sender, 'target'));
container.on('receiver_open', (context) => opened(context, context.receiver, 'source'));
container.on('sender_error', (context) => failed(context.sender));
container.on('receiver_error', (context) => failed(context.receiver));
container.on('sender_close', (context) => failed(context.sender));
container.on('receiver_close', (context) => failed(context.receiver));
container.on('sendable', (context) => {
    if (context.sender === sending && out.sent === null && !sending.sent_one) {
        sending.sent_one = true;
        context.sender.send({ body: 'x'.repeat(args.size) });
    }
});
// over maxMessageSize: the outcome carries amqp:link:message-size-exceeded
container.on('rejected', (context) => {
    if (context.sender === sending && out.sent === null) {
        const state = context.delivery.remote_state;
        out.sent = state && state.error ? state.error.condition : 'rejected';
        if (done())
            finish();
    }
});
container.on('accepted', (context) => {
    if (context.sender === sending && out.sent === null) {
        out.sent = 'accepted';
        if (done())
            finish();
    }
});
container.on('connection_error', (context) => {
    const e = context.connection.error;
    out.connection = e ? e.condition : 'closed';
});
function closed() {
    if (sending && out.sent === null)
        out.sent = 'detached';
    finish();
}
container.on('connection_close', closed);
container.on('disconnected', closed);
conn.on('connection_open', () => next());
