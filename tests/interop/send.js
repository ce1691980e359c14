#!/usr/bin/env node
// A rhea sender for Junction's interop tests: connects to a router on
// 127.0.0.1 with SASL ANONYMOUS, sends --count messages to --address, waits
// until the router has settled every one, prints one JSON line with the
// outcome counts and exits 0 only if all were accepted.
//
//   node send.js --port PORT --address ADDR [--count N] [--timeout SECS]
'use strict';
const rhea = require('rhea');
const args = require('./args')(process.argv.slice(2));

const count = args.count;
const counts = { sent: 0, accepted: 0, rejected: 0, released: 0, modified: 0 };
const container = rhea.create_container({ id: 'rhea-sender' });

const timer = setTimeout(() => finish('timed out after ' + args.timeout + ' s'), args.timeout * 1000);

function finish(error) {
    clearTimeout(timer);
    process.stdout.write(JSON.stringify(Object.assign({ error: error || null }, counts)) + '\n');
    process.exit(error ? 1 : 0);
}

function settledAll() {
    return counts.accepted + counts.rejected + counts.released + counts.modified === count;
}

container.on('sendable', (context) => {
    while (context.sender.sendable() && counts.sent < count) {
        const i = counts.sent++;
        context.sender.send({
            message_id: 'rhea-' + i,
            subject: 'interop',
            correlation_id: 'corr-' + i,
            content_type: 'text/plain',
            application_properties: { seq: i, origin: 'rhea' },
            body: 'message ' + i + ' from rhea',
        });
    }
});

for (const outcome of ['accepted', 'rejected', 'released', 'modified']) {
    container.on(outcome, () => {
        counts[outcome]++;
        if (settledAll()) {
            finish(counts.accepted === count ? null : 'not every message was accepted');
        }
    });
}

container.on('disconnected', (context) => finish('disconnected: ' + (context.error || '')));
container.on('connection_error', (context) => finish('connection error: ' + context.connection.error));
container.on('sender_error', (context) => finish('sender error: ' + context.sender.error));

const conn = container.connect({ host: '127.0.0.1', port: args.port, username: 'anonymous',
                                 reconnect: false });
conn.open_sender(args.address);
