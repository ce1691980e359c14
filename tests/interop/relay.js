#!/usr/bin/env node
// A rhea client for Junction's anonymous-relay policy tests
// (tests/system/test_security_policy_relay.py): connects to a router
// (--url amqp://127.0.0.1:PORT, or ws://127.0.0.1:PORT over WebSocket,
// subprotocol `amqp`) with SASL ANONYMOUS, attaches one anonymous sender
// (a target with no address) and sends the messages of --messages (a JSON
// list of {"to": ADDR, "override": ADDR (the x-opt-qd.to annotation),
// "user_id": STR, "reply_to": ADDR, "properties": MAP (the application
// properties), "body": ANY}, each field optional), unsettled unless
// --settled 1. Prints one JSON line: for each message its outcome
// ("accepted", "released", "modified", or "rejected CONDITION DESCRIPTION";
// "sent" for a settled one), and any error; exits 0 (1 on an error or a
// timeout).
//
//   node relay.js --url URL --messages JSON [--settled 1] [--timeout SECS]
'use strict';
const rhea = require('rhea');
const WebSocket = require('ws');

const args = { timeout: 30, settled: 0 };
const argv = process.argv.slice(2);
for (let i = 0; i + 1 < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    args[key] = ['timeout', 'settled'].includes(key) ? Number(argv[i + 1]) : argv[i + 1];
}
if (!args.url || !args.messages) {
    process.stderr.write('usage: --url URL --messages JSON [--settled 1] [--timeout SECS]\n');
    process.exit(2);
}
const wanted = JSON.parse(args.messages);
const out = { outcomes: wanted.map(() => null), error: null };
let finished = false;
const timer = setTimeout(() => finish('timed out after ' + args.timeout + ' s'),
                         args.timeout * 1000);

// Print the result; on success close the connection first, so that every
// transfer reaches the router before the close.
function finish(error) {
    if (finished)
        return;
    finished = true;
    clearTimeout(timer);
    out.error = error || null;
    process.stdout.write(JSON.stringify(out) + '\n');
    if (error)
        process.exit(1);
    conn.close();
    container.on('connection_close', () => process.exit(0));
    setTimeout(() => process.exit(0), 2000);
}

const container = rhea.create_container({ id: 'rhea-relay-' + process.pid });
const tcp = /^amqp:\/\/([^:/]+):(\d+)/.exec(args.url);
const conn = container.connect(Object.assign(
    tcp ? { host: tcp[1], port: Number(tcp[2]) }
        : { connection_details: rhea.websocket_connect(WebSocket)(args.url, ['amqp'], {}) },
    { username: 'anonymous', reconnect: false }));

const sender = conn.open_sender({ target: {}, snd_settle_mode: args.settled ? 1 : 0 });
let next = 0;
let settled = 0;
sender.on('sendable', (context) => {
    while (context.sender.sendable() && next < wanted.length) {
        const w = wanted[next];
        const m = { body: w.body === undefined ? 'relay ' + next : w.body };
        if (w.to !== undefined)
            m.to = w.to;
        if (w.user_id !== undefined)
            m.user_id = w.user_id;
        if (w.reply_to !== undefined)
            m.reply_to = w.reply_to;
        if (w.properties !== undefined)
            m.application_properties = w.properties;
        if (w.override !== undefined)
            m.message_annotations = { 'x-opt-qd.to': w.override };
        const d = context.sender.send(m);
        d.index = next;
        if (args.settled)
            out.outcomes[next] = 'sent';
        next++;
    }
    if (args.settled && next === wanted.length)
        finish(null);
});

function record(context, outcome) {
    out.outcomes[context.delivery.index] = outcome;
    if (++settled === wanted.length)
        finish(null);
}
container.on('accepted', (context) => record(context, 'accepted'));
container.on('released', (context) => record(context, 'released'));
container.on('modified', (context) => record(context, 'modified'));
container.on('rejected', (context) => {
    const e = context.delivery.remote_state && context.delivery.remote_state.error;
    record(context, 'rejected ' + (e ? e.condition + ' ' + e.description : ''));
});
container.on('disconnected', (context) => finished ? process.exit(0)
                                          : finish('disconnected: ' + (context.error || '')));
container.on('connection_error', (context) => finish('connection error: ' +
                                                     JSON.stringify(context.connection.error)));
container.on('sender_error', (context) => finish('sender error: ' +
                                                 JSON.stringify(context.sender.error)));
