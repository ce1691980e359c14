// Junction's console: served by the router's http listener (docs/design.md,
// "The console"). It speaks AMQP over WebSocket to the router that served
// it (rhea, loaded from rhea.js beside this file) and sends the same
// $management requests junction-manage sends (QUERY of router.node,
// router.address, connection, router.link; docs/protocol.md, "HTTP"),
// every REFRESH_MS, and draws the mesh, the addresses, the connections
// and the links. Plain JavaScript, no build step.
'use strict';
(function () {
    const REFRESH_MS = 2000;
    const REQUEST_TIMEOUT_MS = 4000;
    const MGMT = '$management';
    const $ = (id) => document.getElementById(id);

    // rhea's UMD build (rhea-umd.js, served as rhea.js) names itself rheaUmd
    const rhea = window.rhea || window.rheaUmd;
    if (!rhea) {
        $('status').textContent = 'rhea.js is missing: cannot speak AMQP';
        $('status').className = 'status down';
        return;
    }

    const container = rhea.create_container({ id: 'junction-console-' + Math.random().toString(16).slice(2) });
    const ws = container.websocket_connect(WebSocket);
    const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/';
    const conn = container.connect({ connection_details: ws(url, ['amqp']), username: 'anonymous',
                                     reconnect: true, initial_reconnect_delay: 500,
                                     max_reconnect_delay: 5000 });
    let replyTo = null;
    const senders = {};
    const pending = {};
    let nextId = 1;

    conn.open_receiver({ source: { dynamic: true } });
    container.on('receiver_open', (ctx) => {
        replyTo = ctx.receiver.source.address;
        setStatus('connected', 'up');
        refresh();
    });
    container.on('disconnected', () => {
        replyTo = null;
        for (const k of Object.keys(senders))
            delete senders[k];
        setStatus('disconnected: reconnecting', 'down');
    });
    container.on('message', (ctx) => {
        const id = ctx.message.correlation_id;
        const p = pending[id];
        if (!p)
            return;
        delete pending[id];
        clearTimeout(p.timer);
        const props = ctx.message.application_properties || {};
        if (props.statusCode !== 200)
            p.reject(new Error(props.statusCode + ' ' + props.statusDescription));
        else
            p.resolve(ctx.message.body);
    });

    function setStatus(text, cls) {
        $('status').textContent = text;
        $('status').className = 'status ' + cls;
    }

    // One QUERY of entityType at the $management of address `to`; resolves
    // to a list of objects (attribute name -> value).
    function query(entityType, attributeNames, to) {
        to = to || MGMT;
        return new Promise((resolve, reject) => {
            if (!replyTo)
                return reject(new Error('not connected'));
            let sender = senders[to];
            if (!sender)
                sender = senders[to] = conn.open_sender(to);
            const id = 'c' + nextId++;
            const timer = setTimeout(() => {
                delete pending[id];
                reject(new Error('no answer from ' + to));
            }, REQUEST_TIMEOUT_MS);
            pending[id] = {
                timer, reject,
                resolve: (body) => resolve((body.results || []).map((row) => {
                    const o = {};
                    body.attributeNames.forEach((n, i) => { o[n] = row[i]; });
                    return o;
                })),
            };
            sender.send({ reply_to: replyTo, correlation_id: id,
                          application_properties: { operation: 'QUERY', type: 'org.amqp.management',
                                                    name: 'self', entityType },
                          body: { attributeNames } });
        });
    }

    function cell(text, numeric) {
        const td = document.createElement('td');
        td.textContent = text === null || text === undefined ? '' : String(text);
        if (numeric)
            td.className = 'n';
        return td;
    }

    // Replace tbody's rows with one per item: cells(item) -> [[value, numeric]...].
    function fill(tableId, items, cells, key) {
        const tbody = $(tableId).querySelector('tbody');
        tbody.textContent = '';
        for (const item of items) {
            const tr = document.createElement('tr');
            if (key)
                tr.dataset.key = key(item);
            for (const [v, n] of cells(item))
                tr.appendChild(cell(v, n));
            tbody.appendChild(tr);
        }
    }

    // "M0R1", "M0addr", "L..": the address without its class prefix.
    function shortAddress(a) {
        if (!a)
            return '';
        return a.replace(/^[A-Z][0-9]?/, '');
    }

    const SVG = 'http://www.w3.org/2000/svg';
    function svgEl(name, attrs, parent) {
        const el = document.createElementNS(SVG, name);
        for (const k of Object.keys(attrs))
            el.setAttribute(k, attrs[k]);
        parent.appendChild(el);
        return el;
    }

    // The mesh: routers on a circle, inter-router links as lines labelled
    // with their cost (the routing cost between the two neighbours, as the
    // lower-id router computes it), this router in green.
    function drawTopology(self, nodes, costs) {
        const svg = $('topology');
        svg.textContent = '';
        const w = 560, h = 360, r = Math.min(w, h) / 2 - 50;
        const ids = nodes.map((n) => n.id).sort();
        const pos = {};
        ids.forEach((id, i) => {
            const a = -Math.PI / 2 + (2 * Math.PI * i) / Math.max(ids.length, 1);
            pos[id] = ids.length === 1 ? [w / 2, h / 2]
                                       : [w / 2 + r * Math.cos(a), h / 2 + r * Math.sin(a)];
        });
        const drawn = new Set();
        for (const n of nodes) {
            for (const peer of n.linkState || []) {
                const k = [n.id, peer].sort().join('\u0000');
                if (drawn.has(k) || !pos[peer])
                    continue;
                drawn.add(k);
                const [a, b] = [n.id, peer].sort();
                const [x1, y1] = pos[a], [x2, y2] = pos[b];
                const line = svgEl('line', { x1, y1, x2, y2, class: 'link' }, svg);
                line.dataset.a = a;
                line.dataset.b = b;
                const c = costs[a] && costs[a][b] !== undefined ? costs[a][b]
                    : costs[b] && costs[b][a] !== undefined ? costs[b][a] : '?';
                const t = svgEl('text', { x: (x1 + x2) / 2 + 6, y: (y1 + y2) / 2 - 6, class: 'cost' },
                                svg);
                t.textContent = 'cost ' + c;
            }
        }
        for (const n of nodes) {
            const g = svgEl('g', { class: 'router' + (n.id === self ? ' self' : '') +
                                          (n.cost === null && n.id !== self ? ' unreachable' : '') },
                            svg);
            g.dataset.id = n.id;
            const [x, y] = pos[n.id];
            svgEl('circle', { cx: x, cy: y, r: 30 }, g);
            const t = svgEl('text', { x, y }, g);
            t.textContent = n.id.length > 9 ? n.id.slice(0, 8) + '…' : n.id;
            const title = svgEl('title', {}, g);
            title.textContent = n.id;
        }
    }

    // Each router's costs to its neighbours, asked of that router's own
    // $management (_topo/0/ID/$management) when it is not this one.
    async function neighbourCosts(self, nodes) {
        const costs = {};
        await Promise.all(nodes.map(async (n) => {
            const to = n.id === self ? MGMT : '_topo/0/' + n.id + '/' + MGMT;
            try {
                const rows = await query('router.node', ['id', 'cost'], to);
                costs[n.id] = {};
                for (const row of rows)
                    if (row.cost !== null && row.cost !== undefined)
                        costs[n.id][row.id] = row.cost;
            } catch (e) {
                // unknown costs are drawn as '?'
            }
        }));
        return costs;
    }

    let busy = false;
    async function refresh() {
        if (busy || !replyTo)
            return;
        busy = true;
        try {
            const routers = await query('router', ['id']);
            const self = routers.length ? routers[0].id : '';
            $('router-id').textContent = self;
            let nodes = await query('router.node', ['id', 'linkState', 'cost', 'nextHop']);
            if (!nodes.length)
                nodes = [{ id: self, linkState: [], cost: 0 }];
            drawTopology(self, nodes, await neighbourCosts(self, nodes));
            const addrs = await query('router.address', ['name', 'distribution', 'deliveriesIngress',
                                                         'deliveriesEgress', 'deliveriesTransit',
                                                         'subscriberCount', 'remoteCount']);
            addrs.sort((a, b) => (a.name < b.name ? -1 : 1));
            fill('addresses', addrs, (a) => [[shortAddress(a.name)], [a.distribution],
                                             [a.deliveriesIngress, 1], [a.deliveriesEgress, 1],
                                             [a.deliveriesTransit, 1], [a.subscriberCount, 1],
                                             [a.remoteCount, 1]], (a) => shortAddress(a.name));
            const conns = await query('connection', ['identity', 'container', 'host', 'role', 'dir',
                                                     'isEncrypted', 'user']);
            fill('connections', conns, (c) => [[c.identity], [c.container], [c.host], [c.role],
                                               [c.dir], [c.isEncrypted ? 'yes' : 'no'], [c.user]]);
            const links = await query('router.link', ['identity', 'linkType', 'linkDir', 'owningAddr',
                                                      'deliveryCount', 'undeliveredCount',
                                                      'unsettledCount', 'creditAvailable']);
            fill('links', links, (l) => [[l.identity], [l.linkType], [l.linkDir],
                                         [shortAddress(l.owningAddr)], [l.deliveryCount, 1],
                                         [l.undeliveredCount, 1], [l.unsettledCount, 1],
                                         [l.creditAvailable, 1]]);
            setStatus('connected · updated ' + new Date().toLocaleTimeString(), 'up');
            document.body.dataset.refreshed = String(Date.now());
        } catch (e) {
            setStatus('error: ' + e.message, 'down');
        } finally {
            busy = false;
        }
    }
    setInterval(refresh, REFRESH_MS);
})();
