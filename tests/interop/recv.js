#!/usr/bin/env node
// A rhea receiver for Junction's interop tests: connects to a router on
// 127.0.0.1 with SASL ANONYMOUS, attaches to --address, prints "attached"
// once the router has answered the attach, then one JSON line per message
// (body and properties), accepts each, and exits 0 after --count messages.
//
//   node recv.js --port PORT --address ADDR [--count N] [--timeout SECS]
'use strict';
const rhea = require('rhea');
const args = require('./args')(process.argv.slice(2));

let received = 0;
const container = rhea.create_container({ id: 'rhea-receiver' });

const timer = setTimeout(() => fail('timed out after ' + args.timeout + ' s with ' + received +
                                    ' of ' + args.count + ' messages'), args.timeout * 1000);

function fail(error) {
    clearTimeout(timer);
    process.stderr.write(error + '\n');
    process.exit(1);
}

function plain(value) {
    // Typed AMQP values (for instance a binary) printed as something JSON can carry.
    if (Buffer.isBuffer(value)) return { binary: value.toString('hex') };
    return value === undefined ? null : value;
}

container.on('receiver_open', () => process.stdout.write('attached\n'));

container.on('message', (context) => {
    const m = context.message;
    process.stdout.write(JSON.stringify({
        body: plain(m.body),
        message_id: plain(m.message_id),
        correlation_id: plain(m.correlation_id),
        subject: plain(m.subject),
        content_type: plain(m.content_type),
        application_properties: m.application_properties || null,
        delivery_settled: context.delivery.remote_settled,
    }) + '\n');
    context.delivery.accept();
    if (++received === args.count) {
        clearTimeout(timer);
        context.connection.close();
    }
});

container.on('connection_close', () => process.exit(received === args.count ? 0 : 1));
container.on('disconnected', (context) => {
    if (received !== args.count) fail('disconnected: ' + (context.error || ''));
});
container.on('connection_error', (context) => fail('connection error: ' + context.connection.error));
container.on('receiver_error', (context) => fail('receiver error: ' + context.receiver.error));

const conn = container.connect({ host: '127.0.0.1', port: args.port, username: 'anonymous',
                                 reconnect: false });
conn.open_receiver({ source: args.address, credit_window: 100 });
