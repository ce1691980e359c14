#!/usr/bin/env node
// Drives Debian's chromium headless (playwright-core, no browser download)
// at a router's console for tests/system/test_http_console.py:
//   node console_check.js --url URL --routers A,B,C --links N --address ADDR
//                         --screenshot FILE [--timeout SECS] [--expect N]
// (--address "": stop after 1., with the screenshot)
// 1. loads the console and waits until the mesh picture shows every router
//    of --routers and --links links with costs; prints "topology";
// 2. prints "baseline <in>" (ADDR's "in" counter, 0 while it has no row)
//    and waits until the counter reaches baseline + N (default 1; the test
//    sends N messages after reading "baseline"); prints "moved <in>",
//    saves the screenshot and exits 0.
// Any failure: one line "error ..." and exit 1.
'use strict';
const { chromium } = require('playwright-core');

const args = { timeout: 60, links: 0, expect: 1 };
const argv = process.argv.slice(2);
for (let i = 0; i + 1 < argv.length; i += 2)
    args[argv[i].replace(/^--/, '')] = argv[i + 1];
const routers = args.routers.split(',');
const ms = Number(args.timeout) * 1000;

(async () => {
    const browser = await chromium.launch({
        executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
        args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    let page = null;
    try {
        page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
        page.on('pageerror', (e) => process.stderr.write('page error: ' + e + '\n'));
        await page.goto(args.url, { timeout: ms });
        await page.waitForFunction(([ids, links]) => {
            const drawn = [...document.querySelectorAll('#topology g.router')].map((g) => g.dataset.id);
            const lines = document.querySelectorAll('#topology line.link');
            const costs = [...document.querySelectorAll('#topology text.cost')]
                .filter((t) => /^cost \d+$/.test(t.textContent));
            return ids.every((id) => drawn.includes(id)) && drawn.length === ids.length &&
                lines.length === links && costs.length === links;
        }, [routers, Number(args.links)], { timeout: ms, polling: 200 });
        process.stdout.write('topology\n');
        if (!args.address) { // the picture only
            await page.screenshot({ path: args.screenshot, fullPage: true });
            await browser.close();
            process.exit(0);
        }
        const inCount = () => page.evaluate((addr) => {
            const tr = document.querySelector('#addresses tr[data-key="' + CSS.escape(addr) + '"]');
            return tr ? Number(tr.children[2].textContent) : null;
        }, args.address);
        const base = (await inCount()) || 0; // no row yet: the address is not known yet
        process.stdout.write('baseline ' + base + '\n');
        await page.waitForFunction(([addr, b]) => {
            const tr = document.querySelector('#addresses tr[data-key="' + CSS.escape(addr) + '"]');
            return tr && Number(tr.children[2].textContent) > b;
        }, [args.address, base + Number(args.expect) - 1], { timeout: ms, polling: 200 });
        process.stdout.write('moved ' + (await inCount()) + '\n');
        await page.screenshot({ path: args.screenshot, fullPage: true });
        await browser.close();
        process.exit(0);
    } catch (e) {
        let state = '';
        try {
            state = await page.evaluate(() => document.getElementById('status').textContent + ' | ' +
                                        document.getElementById('router-id').textContent + ' | ' + document.querySelector('#connections tbody').textContent.slice(0, 600) + ' | ' +
                                        [...document.querySelectorAll('#addresses tbody tr')].map((t) => t.textContent)
                                            .map((t) => t.slice(0, 80)).join(';'));
        } catch (e2) {
            state = String(e2);
        }
        process.stdout.write('error ' + String(e).split('\n')[0] + ' (page: ' + state + ')\n');
        await browser.close();
        process.exit(1);
    }
})();
