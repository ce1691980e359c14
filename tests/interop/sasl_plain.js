#!/usr/bin/env node
// A rhea client for Junction's auth service tests: connects to a router on
// 127.0.0.1 with SASL PLAIN (--user, --password), prints one JSON line:
// {"opened": true} once the router's open arrives, or {"opened": false,
// "error": ...} when the connection fails; exits 0 only when it opened.
//
//   node sasl_plain.js --port PORT --user USER --password PW [--timeout SECS]
'use strict';
const rhea = require('rhea');

const opts = { timeout: 30 };
const argv = process.argv.slice(2);
for (let i = 0; i + 1 < argv.length; i += 2) {
    opts[argv[i].replace(/^--/, '')] = argv[i + 1];
}
if (!opts.port || opts.user === undefined || opts.password === undefined) {
    process.stderr.write('usage: --port PORT --user USER --password PW [--timeout SECS]\n');
    process.exit(2);
}

let done = false;
function finish(opened, error) {
    if (done) return;
    done = true;
    process.stdout.write(JSON.stringify({ opened: opened, error: error || null }) + '\n');
    process.exit(opened ? 0 : 1);
}

setTimeout(() => finish(false, 'timed out after ' + opts.timeout + ' s'), Number(opts.timeout) * 1000);
const container = rhea.create_container({ id: 'rhea-sasl' });
container.on('connection_open', (context) => {
    context.connection.close();
    finish(true);
});
container.on('connection_error', (context) => finish(false, String(context.connection.error)));
container.on('disconnected', (context) => finish(false, context.error ? String(context.error) : 'disconnected'));
container.connect({
    host: '127.0.0.1', port: Number(opts.port), username: opts.user, password: opts.password,
    reconnect: false,
});
