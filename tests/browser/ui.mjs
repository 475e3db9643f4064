#!/usr/bin/env node
// The operator's page (/ui) in a real browser: Debian's chromium, driven by puppeteer-core,
// against the real server (Local backend, HTTP, --ui). An MCP client (the official TypeScript
// SDK) connects beside it, so the page has a session to show.
//
//   node tests/browser/ui.mjs /path/to/backyard-mcp [--screenshots DIR]
//
// Prints one line per check; exits non-zero when one fails. With --screenshots, the three
// views are saved there at 1280x800 (docs/ keeps the README's).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import puppeteer from 'puppeteer-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const binary = process.argv[2];
const shotsAt = process.argv.indexOf('--screenshots');
const shots = shotsAt > 0 ? path.resolve(process.argv[shotsAt + 1]) : null;
if (shots) fs.mkdirSync(shots, { recursive: true });
const CHROMIUM = process.env.BYD_CHROMIUM || '/usr/bin/chromium';
const TOKEN = 'operator-' + Math.random().toString(36).slice(2) + '-0123456789';
const WAIT = { timeout: 20_000 };

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'byd-ui-'));
const root = path.join(tmp, 'root');
const downloads = path.join(tmp, 'downloads');
fs.mkdirSync(root);
fs.mkdirSync(downloads);
fs.writeFileSync(path.join(root, 'notes.txt'), 'first line\nsecond line\nthird line\n');
fs.writeFileSync(path.join(root, '.env'), 'API_KEY=hunter2\n');
fs.mkdirSync(path.join(root, 'pics'));
// A 1x1 PNG.
fs.writeFileSync(path.join(root, 'pics', 'dot.png'), Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64'));
fs.writeFileSync(path.join(tmp, 'admin'), TOKEN + '\n', { mode: 0o600 });

let server, browser, failed = 0, passed = 0;
const started = Date.now();

async function check(name, fn) {
  const t = Date.now();
  try {
    await fn();
    passed++;
    console.log(`ok   ${name} (${Date.now() - t} ms)`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e.stack || e}`);
  }
}

function startServer() {
  return new Promise((resolve, reject) => {
    const proc = spawn(binary, ['--transport', 'http', '--listen', '127.0.0.1:0', '--root', root,
      '--ruleset', 'permissive', '--ui', '--admin-token-file', path.join(tmp, 'admin'),
      '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let head = '';
    proc.stderr.on('data', (chunk) => {
      head += chunk;
      const m = head.match(/http:\/\/127\.0\.0\.1:(\d+)\/mcp/);
      if (m && !proc.port) {
        proc.port = Number(m[1]);
        resolve(proc);
      }
    });
    proc.on('exit', (code) => reject(new Error(`the server exited (${code}): ${head}`)));
  });
}

async function connectClient(origin) {
  const client = new Client({ name: 'ui-test-agent', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(origin + '/mcp'));
  await client.connect(transport);
  return { client, transport };
}

// The text of every element matching `sel`.
const texts = (page, sel) => page.$$eval(sel, (els) => els.map((e) => e.textContent));

try {
  server = await startServer();
  const origin = `http://127.0.0.1:${server.port}`;
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Root has no user namespace sandbox for chromium here; the page is our own.
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-dev-shm-usage'],
  });
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  const foreign = [];
  page.on('request', (req) => {
    const url = req.url();
    if (!url.startsWith(origin + '/') && !url.startsWith('data:') && !url.startsWith('blob:')) {
      foreign.push(url);
    }
  });
  const cspErrors = [];
  page.on('console', (msg) => {
    if (/Content Security Policy/i.test(msg.text())) cspErrors.push(msg.text());
  });
  const cdp = await page.createCDPSession();
  await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads });

  let response;
  await check('the page is served with a strict Content-Security-Policy', async () => {
    response = await page.goto(origin + '/ui', { waitUntil: 'load' });
    assert.equal(response.status(), 200);
    const csp = response.headers()['content-security-policy'] || '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'nonce-[A-Za-z0-9+/=]+'/);
    assert.match(csp, /connect-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    const [nonceA] = csp.match(/nonce-[^']+/);
    const again = await fetch(origin + '/ui');
    assert.notEqual(again.headers.get('content-security-policy').match(/nonce-[^']+/)[0], nonceA,
      'a fresh nonce for each answer');
  });

  await check('a wrong token is refused', async () => {
    await page.type('#token', 'not-the-token');
    await page.click('#login-form button');
    await page.waitForFunction(() => !document.querySelector('#login-error').hidden, WAIT);
    assert.match(await page.$eval('#login-error', (e) => e.textContent), /refused/);
    assert.equal(await page.$eval('#app', (e) => e.hidden), true);
  });

  await check('the operator signs in and sees the capacity', async () => {
    await page.$eval('#token', (e) => { e.value = ''; });
    await page.type('#token', TOKEN);
    await page.click('#login-form button');
    await page.waitForFunction(() => !document.querySelector('#app').hidden, WAIT);
    assert.match(await page.$eval('#capacity', (e) => e.textContent), /0 of 64 sessions/);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('byd-operator-token')), TOKEN);
  });

  let agent, sid;
  await check('a session appears when a client connects', async () => {
    agent = await connectClient(origin);
    sid = agent.transport.sessionId;
    assert.ok(sid);
    await page.waitForSelector(`tr[data-id="${sid}"]`, WAIT);
    const row = await texts(page, `tr[data-id="${sid}"] td`);
    assert.equal(row[0], sid.slice(0, 8));
    assert.equal(row[1], 'default');
    assert.equal(row[4], 'local');
    assert.match(await page.$eval('#capacity', (e) => e.textContent), /1 of 64 sessions/);
  });
  if (shots) await page.screenshot({ path: path.join(shots, 'ui-sessions.png') });

  await check('the terminal streams a command\'s output as it comes', async () => {
    await page.click(`tr[data-id="${sid}"] button`);
    await page.waitForFunction(() => !document.querySelector('#pane-terminal').hidden, WAIT);
    await page.type('#term-in', 'for i in 1 2 3 4; do echo step$i; sleep 1; done');
    await page.click('#term-form button[type=submit]');
    // A line shows while the command still runs (before its exit status).
    await page.waitForFunction(() => {
      const out = document.querySelector('#term-out').textContent;
      return /step[12]/.test(out) && !/\[exit/.test(out);
    }, WAIT);
    await page.waitForFunction(() => /\[exit 0\]/.test(document.querySelector('#term-out').textContent), WAIT);
    const out = await page.$eval('#term-out', (e) => e.textContent);
    assert.match(out, /step1\s*step2\s*step3\s*step4/);
    // Its sandbox runs now: the sessions view shows its memory against the ceiling.
    await page.click('nav button[data-view="sessions"]');
    const open = await page.$(`tr[data-id="${sid}"] button`);
    const age = await page.$eval(`tr[data-id="${sid}"] td:nth-child(6)`, (e) => e.textContent);
    await page.waitForFunction((id, was) => {
      const cell = (n) => document.querySelector(`tr[data-id="${id}"] td:nth-child(${n})`).textContent;
      // ... and the row was updated since; its idle time counts from the last call, though
      // the agent's client holds a stream open to listen.
      return /MiB \/ 1\.0 GiB/.test(cell(9)) && cell(6) !== was && cell(7) !== '0s';
    }, WAIT, sid, age);
    // The row changed in place: what the operator was about to click is still there.
    assert.ok(await open.evaluate((b) => b.isConnected), 'the row was rebuilt under the pointer');
    await open.click();
  });

  await check('the terminal keeps a history and cancels a command', async () => {
    await page.type('#term-in', 'sleep 30; echo never');
    await page.click('#term-form button[type=submit]');
    await page.waitForFunction(() => !document.querySelector('#term-cancel').disabled, WAIT);
    await page.click('#term-cancel');
    await page.waitForFunction(() => document.querySelector('#term-cancel').disabled, WAIT);
    const lines = await texts(page, '#term-out div');
    assert.equal(lines.at(-1), '(cancelled)');
    assert.ok(!lines.includes('never'), lines.join('|'));
    await page.focus('#term-in');
    await page.keyboard.press('ArrowUp');
    assert.equal(await page.$eval('#term-in', (e) => e.value), 'sleep 30; echo never');
    await page.keyboard.press('ArrowUp');
    assert.match(await page.$eval('#term-in', (e) => e.value), /^for i in/);
    await page.$eval('#term-in', (e) => { e.value = ''; });
  });

  await check('a denied command is refused with its reason', async () => {
    await page.type('#term-in', 'cat .env');
    await page.click('#term-form button[type=submit]');
    await page.waitForFunction(() => /denied/.test(document.querySelector('#term-out').textContent), WAIT);
    assert.doesNotMatch(await page.$eval('#term-out', (e) => e.textContent), /hunter2/);
  });

  await check('a notebook cell shows a matplotlib figure as an image', async () => {
    await page.click('.tabs button[data-pane="notebook"]');
    await page.type('#cells .cell:last-child textarea',
      'import matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\n' +
      'plt.plot([1, 3, 2])\nanswer = 6 * 7\nanswer');
    await page.click('#cells .cell:last-child button.primary');
    await page.waitForSelector('#cells .cell:last-child .out img', { timeout: 60_000 });
    const src = await page.$eval('#cells .cell:last-child .out img', (e) => e.src);
    assert.match(src, /^data:image\/png;base64,iVBOR/);
    assert.equal(await page.$eval('#cells .cell:last-child .out .result', (e) => e.textContent), '42');
  });

  await check('a traceback shows as one, and a while-True cell is interrupted', async () => {
    await page.click('#add-cell');
    await page.type('#cells .cell:last-child textarea', '1 / 0');
    await page.click('#cells .cell:last-child button.primary');
    await page.waitForSelector('#cells .cell:last-child .traceback', WAIT);
    assert.match(await page.$eval('#cells .cell:last-child .traceback', (e) => e.textContent), /ZeroDivisionError/);
    await page.click('#add-cell');
    await page.type('#cells .cell:last-child textarea', 'while True:\n    pass');
    await page.click('#cells .cell:last-child button.primary');
    await page.waitForFunction(() => {
      const b = document.querySelectorAll('#cells .cell:last-child button')[1];
      return b && !b.disabled;
    }, WAIT);
    await new Promise((r) => setTimeout(r, 500));
    await page.evaluate(() => document.querySelectorAll('#cells .cell:last-child button')[1].click());
    await page.waitForFunction(() => !document.querySelector('#cells .cell:last-child button.primary').disabled, WAIT);
    // The kernel lives on, with its variables.
    await page.click('#add-cell');
    await page.type('#cells .cell:last-child textarea', 'answer + 1');
    await page.click('#cells .cell:last-child button.primary');
    await page.waitForSelector('#cells .cell:last-child .out .result', { timeout: 30_000 });
    assert.equal(await page.$eval('#cells .cell:last-child .out .result', (e) => e.textContent), '43');
  });

  await check('a restart starts the notebook afresh', async () => {
    await page.click('#nb-restart');
    await page.waitForFunction(() => document.querySelector('#nb-status').textContent === 'restarted', { timeout: 60_000 });
    await page.click('#add-cell');
    await page.type('#cells .cell:last-child textarea', 'answer');
    await page.click('#cells .cell:last-child button.primary');
    await page.waitForSelector('#cells .cell:last-child .traceback', { timeout: 30_000 });
    assert.match(await page.$eval('#cells .cell:last-child .traceback', (e) => e.textContent), /NameError/);
  });
  if (shots) {
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: path.join(shots, 'ui-workspace.png') });
  }

  await check('the file browser opens a file with line numbers and downloads it', async () => {
    await page.click('.tabs button[data-pane="files"]');
    await page.waitForFunction(() => [...document.querySelectorAll('#file-list button')]
      .some((b) => b.textContent === 'notes.txt'), WAIT);
    const names = await texts(page, '#file-list button');
    assert.ok(!names.includes('.env'), 'a denied file is not listed');
    await page.evaluate(() => [...document.querySelectorAll('#file-list button')]
      .find((b) => b.textContent === 'notes.txt').click());
    await page.waitForSelector('#file-view .numbered span', WAIT);
    assert.deepEqual(await texts(page, '#file-view .numbered span'), ['first line', 'second line', 'third line']);
    await page.click('#file-download');
    const target = path.join(downloads, 'notes.txt');
    for (let i = 0; i < 100 && !fs.existsSync(target); i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(fs.readFileSync(target, 'utf8'), 'first line\nsecond line\nthird line\n');
  });

  await check('the file browser goes into a directory, shows an image, and comes back up', async () => {
    await page.evaluate(() => [...document.querySelectorAll('#file-list button')]
      .find((b) => b.textContent === 'pics/').click());
    await page.waitForFunction(() => document.querySelector('#file-path').value === 'pics' &&
      [...document.querySelectorAll('#file-list button')].some((b) => b.textContent === 'dot.png'), WAIT);
    await page.evaluate(() => [...document.querySelectorAll('#file-list button')]
      .find((b) => b.textContent === 'dot.png').click());
    await page.waitForSelector('#file-view img', WAIT);
    assert.match(await page.$eval('#file-view img', (e) => e.src), /^data:image\/png;base64,iVBOR/);
    assert.equal(await page.$eval('#file-view img', (e) => e.naturalWidth), 1, 'the image decodes');
    await page.click('#file-up');
    await page.waitForFunction(() => document.querySelector('#file-path').value === '.' &&
      [...document.querySelectorAll('#file-list button')].some((b) => b.textContent === 'notes.txt'), WAIT);
  });

  await check('the activity log shows the calls as they come, the denied one marked', async () => {
    await page.click('.tabs button[data-pane="activity"]');
    await page.waitForSelector('#activity tr.denied', WAIT);
    // The agent's call shows while the pane is open: the page follows the log as it grows.
    await agent.client.callTool({ name: 'read_file', arguments: { path: 'notes.txt' } });
    await page.waitForFunction(() => [...document.querySelectorAll('#activity tbody tr')]
      .some((r) => r.children[1].textContent === 'read_file'), WAIT);
    const tools = await texts(page, '#activity tbody tr td:nth-child(2)');
    for (const t of ['execute', 'run_python', 'ls', 'read_file']) assert.ok(tools.includes(t), `${t} in ${tools}`);
    const denied = await texts(page, '#activity tr.denied td');
    assert.equal(denied[1], 'execute');
    assert.equal(denied[4], 'denied');
    assert.equal(denied[6], 'page');
    const rows = await page.$$eval('#activity tbody tr', (trs) => trs.map((r) => [...r.children].map((c) => c.textContent)));
    assert.equal(rows[0][1], 'read_file', 'newest first');
    assert.equal(rows[0][6], 'client', 'the agent\'s own call');
  });

  await check('the runtimes and policy view shows the rules and where settings came from', async () => {
    await page.click('nav button[data-view="policy"]');
    await page.waitForFunction(() => document.querySelector('#ruleset').textContent.length > 10, WAIT);
    assert.match(await page.$eval('#ruleset-name', (e) => e.textContent), /permissive/);
    const settings = await texts(page, '#settings tbody tr');
    assert.ok(settings.some((r) => r.startsWith('ruleset') && r.includes('flag --ruleset')), settings.join('|'));
    assert.ok(settings.some((r) => r.startsWith('ui') && r.includes('flag --ui')));
  });
  if (shots) await page.screenshot({ path: path.join(shots, 'ui-policy.png') });

  await check('the session disappears when its client ends it', async () => {
    await page.click('nav button[data-view="sessions"]');
    await agent.transport.terminateSession();
    await agent.client.close();
    await page.waitForFunction((id) => !document.querySelector(`tr[data-id="${id}"]`), WAIT, sid);
    assert.match(await page.$eval('#capacity', (e) => e.textContent), /0 of 64 sessions/);
  });

  await check('the operator ends a session from the page', async () => {
    const other = await connectClient(origin);
    const id = other.transport.sessionId;
    await page.waitForSelector(`tr[data-id="${id}"]`, WAIT);
    page.once('dialog', (d) => d.accept());
    await page.click(`tr[data-id="${id}"] button.danger`);
    await page.waitForFunction((i) => !document.querySelector(`tr[data-id="${i}"]`), WAIT, id);
    await assert.rejects(other.client.callTool({ name: 'ls', arguments: {} }));
    await other.client.close().catch(() => {});
  });

  await check('the page fits a phone-sized screen', async () => {
    await page.setViewport({ width: 390, height: 844 });
    for (const view of ['sessions', 'policy']) {
      await page.click(`nav button[data-view="${view}"]`);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 1, `${view} overflows by ${overflow}px`);
    }
    await page.setViewport({ width: 1280, height: 800 });
  });

  await check('the API answers the operator\'s token alone', async () => {
    for (const auth of [undefined, 'Bearer wrong']) {
      const r = await fetch(origin + '/ui/api/state', { headers: auth ? { Authorization: auth } : {} });
      assert.equal(r.status, 401);
    }
    const r = await fetch(origin + '/ui/api/state', { headers: { Authorization: 'Bearer ' + TOKEN } });
    assert.equal(r.status, 200);
    const mcp = await fetch(origin + '/mcp', { method: 'POST', headers: { Authorization: 'Bearer ' + TOKEN,
      'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
    assert.notEqual(mcp.status, 500);
  });

  await check('the page made no request beyond its own origin, and broke no policy', async () => {
    assert.deepEqual(foreign, []);
    assert.deepEqual(cspErrors, []);
  });
} catch (e) {
  failed++;
  console.log(`FAIL the harness: ${e.stack || e}`);
} finally {
  if (browser) await browser.close().catch(() => {});
  if (server) server.kill('SIGTERM');
  fs.rmSync(tmp, { recursive: true, force: true });
}
console.log(`\n${passed} passed, ${failed} failed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
process.exit(failed ? 1 : 0);
