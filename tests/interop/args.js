// Command-line options shared by the interop scripts:
// --port PORT (required), --address ADDR (required), --count N (default 10),
// --timeout SECS (default 30).
'use strict';
module.exports = function parse(argv) {
    const out = { count: 10, timeout: 30 };
    for (let i = 0; i < argv.length; i += 2) {
        const key = argv[i].replace(/^--/, '');
        if (!['port', 'address', 'count', 'timeout'].includes(key) || i + 1 >= argv.length) {
            process.stderr.write('usage: --port PORT --address ADDR [--count N] [--timeout SECS]\n');
            process.exit(2);
        }
        out[key] = key === 'address' ? argv[i + 1] : Number(argv[i + 1]);
    }
    if (!out.port || !out.address) {
        process.stderr.write('--port and --address are required\n');
        process.exit(2);
    }
    return out;
};
