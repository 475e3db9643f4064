#!/usr/bin/env node
// Compares backyard-mcp with two peer MCP servers, all driven by the same MCP SDK client over
// stdio in one run: @modelcontextprotocol/server-filesystem and @wonderwhy-er/desktop-commander.
//
//   npm ci --prefix bench/peers      # once: the SDK client and the two peers (pinned)
//   node bench/peers.mjs [--binary build/backyard-mcp] [--fixture DIR] [--runs N]
//                        [--only backyard|backyard-text|filesystem|desktop-commander]
//                        [--json out.json] [--floor]
//
// Makes (or reuses) a seeded fixture of ~2,000 files / ~250 MB, starts each server, warms it up
// and checks its answers, then times client.callTool for: ls of a 500-entry directory, a whole
// 1 MiB text file read, a 10 KiB write, and a **/*.txt glob; and reads each server's RSS.
// Servers are interleaved (rounds of a few calls each, the order rotated every round) so machine
// noise hits all alike. Servers run with HOME set to a temporary directory; Desktop Commander
// with telemetry off and nothing fetched from the internet.
//
// --floor adds `floor` and `floor-text`: backyard-mcp (default, and --structured-content off)
// behind bench/replay.py, which answers each call after the first with the bytes our server
// answered it with, at once. Their times are what the client and the pipe alone take for our
// answers: no server can answer the same bytes faster through this client.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const PEERS_DIR = path.join(BENCH_DIR, 'peers', 'node_modules');
const MIB = 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Options

const opts = { binary: path.join(BENCH_DIR, '..', 'build', 'backyard-mcp'),
  fixture: path.join(BENCH_DIR, 'fixture-peers'), runs: 40, only: null, json: null, floor: false };
for (let i = 2; i < process.argv.length; i++) {
  const key = process.argv[i].replace(/^--/, '');
  if (key === 'floor') { opts.floor = true; continue; }
  if (!(key in opts) || i + 1 >= process.argv.length) {
    console.error(`usage: node bench/peers.mjs [--binary PATH] [--fixture DIR] [--runs N] ` +
      `[--only backyard|backyard-text|filesystem|desktop-commander] [--json FILE] [--floor]`);
    process.exit(2);
  }
  opts[key] = key === 'runs' ? Math.max(1, parseInt(process.argv[++i], 10) || 1) : process.argv[++i];
}
if (opts.only && !['backyard', 'backyard-text', 'filesystem', 'desktop-commander'].includes(opts.only)) {
  console.error('--only: backyard, backyard-text, filesystem or desktop-commander');
  process.exit(2);
}
opts.fixture = path.resolve(opts.fixture);
opts.binary = path.resolve(opts.binary);

const sdk = (p) => pathToFileURL(path.join(PEERS_DIR, '@modelcontextprotocol/sdk/dist/esm', p)).href;
if (!fs.existsSync(PEERS_DIR)) {
  console.error(`${PEERS_DIR} is missing: run npm ci --prefix bench/peers first`);
  process.exit(2);
}
const { Client } = await import(sdk('client/index.js'));
const { StdioClientTransport } = await import(sdk('client/stdio.js'));

// ---------------------------------------------------------------------------------------------
// Fixture: deterministic (seeded), regenerated when FIXTURE_VERSION or SEED changes.

const FIXTURE_VERSION = 1;
const SEED = 4242;
const WIDE_FILES = 480; // + WIDE_SUBDIRS = exactly 500 entries in wide/
const WIDE_SUBDIRS = 20;
const PROJECTS = 30;
const FILES_PER_PROJECT = 50;
const TOTAL_BYTES = 250 * MIB;
const FILE_1M = 'known/1m.txt';
const BIG_FILE = 'known/big_50m.txt';

const WORDS = `able account adjust align apply argument assert audit batch binary bound buffer cache capture catch
change chunk clean clock cluster command compare config content copy create cursor data define
delete deploy detail disable domain drive edit encode entry event execute factor feature field
filter flow folder frame graph hash heap history host install issue journal label length library
line list logic loop map matrix method mode module name node object option origin page parent patch
pattern point pool prefix probe project proxy queue random reason reduce release render request
reset resource retry route sample scale schema search select serial service share signal size socket
split stage state status string submit summary symbol tail task test thread tool trace transfer
trigger usage valid vector version walk weight worker write`.split(/\s+/);

function makeRng(seed) { // mulberry32
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = (xs) => xs[Math.floor(next() * xs.length)];
  const lognormal = (sigma) => Math.exp(sigma * Math.sqrt(-2 * Math.log(1 - next())) *
    Math.cos(2 * Math.PI * next()));
  return { next, int, pick, lognormal };
}

// One line of a kind: 'words' (plain prose, ~80 chars), 'txt' (log-like), 'py', 'md'.
function makeLine(kind, r) {
  const w = () => r.pick(WORDS);
  const W = () => { const s = w(); return s[0].toUpperCase() + s.slice(1); };
  const words = (target) => { let s = W(); while (s.length < target) s += ' ' + w(); return s; };
  const n = () => String(r.pick([0, 1, 2, 8, 16, 64, 100, 256, 1000, r.int(0, 99999)]));
  const two = (a, b) => String(r.int(a, b)).padStart(2, '0');
  switch (kind) {
    case 'words': return words(r.int(70, 86));
    case 'txt': return r.next() < 0.6
      ? `2024-${two(1, 12)}-${two(1, 28)}T${two(0, 23)}:${two(0, 59)}:${two(0, 59)}Z ` +
        `${r.pick(['INFO ', 'DEBUG', 'WARN ', 'ERROR'])} ${w()}.${w()}: ${words(r.int(20, 50))}`
      : words(r.int(30, 90));
    case 'py': return r.pick([
      () => `import ${w()}`, () => `def ${w()}_${w()}(${w()}, ${w()}=${n()}):`,
      () => `    ${w()} = ${w()}.${w()}_${w()}(${w()}, ${n()})`, () => `class ${W()}${W()}(${W()}):`,
      () => `    # ${words(r.int(20, 60))}.`, () => `        return ${w()}_${w()}(${w()}=${n()})`,
      () => `    for ${w()} in ${w()}.${w()}s():`, () => ''])();
    default: return r.pick([
      () => `# ${words(r.int(10, 30))}`, () => `## ${words(r.int(8, 24))}`, () => '',
      () => `${words(r.int(60, 160))}.`, () => `- \`${w()}_${w()}\`: ${words(r.int(20, 60))}.`,
      () => `| ${w()} | ${n()} | ${w()} ${w()} |`])();
  }
}

// Exactly `size` bytes of whole lines drawn from a pool of pre-made lines, ending in '\n'.
function textOfSize(pool, r, size) {
  const parts = [];
  let have = 0;
  while (have < size) { const b = r.pick(pool); parts.push(b); have += b.length; }
  const data = Buffer.concat(parts, have).subarray(0, size);
  if (size > 0) data[size - 1] = 0x0a;
  return data;
}

function planFixture(r) {
  const files = [[FILE_1M, MIB, 'words'], [BIG_FILE, 50 * MIB, 'txt']];
  for (let i = 0; i < WIDE_FILES; i++) {
    const ext = ['txt', 'py', 'md'][i % 3];
    files.push([`wide/entry_${String(i).padStart(4, '0')}.${ext}`, r.int(2048, 14336), ext]);
  }
  for (let i = 0; i < WIDE_SUBDIRS; i++) {
    files.push([`wide/dir_${String(i).padStart(2, '0')}/readme.md`, r.int(1024, 4096), 'md']);
  }
  const fixed = files.reduce((s, f) => s + f[1], 0);
  const proj = []; // projects: files at depths 1 to 4
  for (let p = 0; p < PROJECTS; p++) {
    const base = `proj_${String(p).padStart(2, '0')}`;
    const dirs = [base, `${base}/src`, `${base}/src/${r.pick(WORDS)}`,
      `${base}/src/${r.pick(WORDS)}/${r.pick(WORDS)}`, `${base}/docs`,
      `${base}/logs/${r.pick(WORDS)}/${r.pick(WORDS)}`];
    const used = new Set();
    for (let f = 0; f < FILES_PER_PROJECT; f++) {
      const dir = dirs[f % dirs.length];
      const ext = dir.endsWith('/docs') ? 'md' : dir.includes('/logs')
        ? 'txt' : r.pick(['py', 'py', 'py', 'md', 'txt']);
      let name;
      do name = `${dir}/${r.pick(WORDS)}_${r.pick(WORDS)}.${ext}`; while (used.has(name));
      used.add(name);
      proj.push([name, r.lognormal(1.2), ext]);
    }
  }
  const scale = (TOTAL_BYTES - fixed) / proj.reduce((s, f) => s + f[1], 0);
  for (const [name, weight, ext] of proj) files.push([name, Math.max(200, Math.floor(weight * scale)), ext]);
  return files;
}

function loadOrMakeFixture(root) {
  try {
    const m = JSON.parse(fs.readFileSync(path.join(root, 'fixture.json'), 'utf8'));
    if (m.version === FIXTURE_VERSION && m.seed === SEED) return m;
  } catch { /* none yet, or unreadable: make it */ }
  if (fs.existsSync(root) && !fs.existsSync(path.join(root, 'fixture.json'))) {
    throw new Error(`${root} exists and is not a fixture of this script: not replacing it`);
  }
  console.log(`generating fixture in ${root} ...`);
  const t0 = Date.now();
  const r = makeRng(SEED);
  const pools = {};
  for (const kind of ['words', 'txt', 'py', 'md']) {
    pools[kind] = Array.from({ length: 5000 }, () => Buffer.from(makeLine(kind, r) + '\n'));
  }
  const tmp = `${root}.tmp`;
  fs.rmSync(tmp, { recursive: true, force: true });
  let bytes = 0;
  const plan = planFixture(r);
  for (const [rel, size, kind] of plan) {
    const full = path.join(tmp, rel);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    fs.writeFileSync(full, textOfSize(pools[kind], r, size));
    bytes += size;
  }
  fs.mkdirSync(path.join(tmp, 'scratch')); // where the write benchmark writes (not *.txt)
  const manifest = { version: FIXTURE_VERSION, seed: SEED, files: plan.length, bytes,
    txt_files: plan.filter(([rel]) => rel.endsWith('.txt')).length,
    wide_entries: WIDE_FILES + WIDE_SUBDIRS, file_1m: FILE_1M };
  fs.writeFileSync(path.join(tmp, 'fixture.json'), JSON.stringify(manifest, null, 1));
  fs.rmSync(root, { recursive: true, force: true });
  fs.renameSync(tmp, root);
  console.log(`  ${plan.length} files, ${(bytes / MIB).toFixed(0)} MiB in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return manifest;
}

// ---------------------------------------------------------------------------------------------
// Servers. Each names how to start it and, per operation, a function of a call helper that does
// the operation and returns what the checks need ({ text } or { count }).

const FX = opts.fixture;
const abs = (rel) => path.join(FX, rel);
const countLines = (text, re) => text.split('\n').filter((l) => re.test(l)).length;
const NODE = process.execPath;
const pkg = (p) => path.join(PEERS_DIR, p);

const SERVERS = {
  backyard: {
    // The default ruleset asks before writes, and this client cannot answer: permissive.
    // The default --max-text-bytes (100 KiB) would cut the 1 MiB read.
    command: opts.binary,
    args: ['--root', FX, '--ruleset', 'permissive', '--log-level', 'off',
      '--max-text-bytes', String(8 * MIB)],
    ops: {
      ls: async (call) => ({ count: (await call('ls', { path: 'wide' })).structuredContent.total }),
      read: async (call) => ({ text: (await call('read_file', { path: FILE_1M, limit: 100000 })).text }),
      write: async (call, content) => call('write_file', { path: 'scratch/backyard.dat', content }),
      glob: async (call) => ({ count: countLines((await call('glob', { pattern: '**/*.txt' })).text, /\.txt$/) }),
    },
  },
  // The same server answering its text alone (--structured-content off): half the bytes for
  // a large read, for clients that give the model the text.
  'backyard-text': {
    command: opts.binary,
    args: ['--root', FX, '--ruleset', 'permissive', '--log-level', 'off',
      '--max-text-bytes', String(8 * MIB), '--structured-content', 'off'],
    ops: {
      ls: async (call) => ({ count: countLines((await call('ls', { path: 'wide' })).text, / \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ /) }),
      read: async (call) => ({ text: (await call('read_file', { path: FILE_1M, limit: 100000 })).text }),
      write: async (call, content) => call('write_file', { path: 'scratch/backyard-text.dat', content }),
      glob: async (call) => ({ count: countLines((await call('glob', { pattern: '**/*.txt' })).text, /\.txt$/) }),
    },
  },
  filesystem: {
    command: NODE,
    args: [pkg('@modelcontextprotocol/server-filesystem/dist/index.js'), FX],
    ops: {
      ls: async (call) => ({ count: countLines((await call('list_directory_with_sizes', { path: abs('wide') })).text, /^\[(FILE|DIR)\]/) }),
      read: async (call) => ({ text: (await call('read_text_file', { path: abs(FILE_1M) })).text }),
      write: async (call, content) => call('write_file', { path: abs('scratch/filesystem.dat'), content }),
      glob: async (call) => ({ count: countLines((await call('search_files', { path: FX, pattern: '**/*.txt' })).text, /\.txt$/) }),
    },
  },
  'desktop-commander': {
    command: NODE,
    args: [pkg('@wonderwhy-er/desktop-commander/dist/index.js'), '--no-onboarding'],
    ops: {
      // depth 1: its default (2) would also list inside wide/'s subdirectories.
      ls: async (call) => ({ count: countLines((await call('list_directory', { path: abs('wide'), depth: 1 })).text, /^\[(FILE|DIR)\]/) }),
      read: async (call) => ({ text: (await call('read_file', { path: abs(FILE_1M), offset: 0, length: 100000 })).text }),
      write: async (call, content) => call('write_file', { path: abs('scratch/desktop-commander.dat'), content, mode: 'rewrite' }),
      // A search is a session: start_search, then get_more_search_results until it completes.
      glob: async (call) => {
        const start = await call('start_search', { path: FX, pattern: '*.txt', searchType: 'files' });
        const id = /session: (\S+)/.exec(start.text)[1];
        let count = 0;
        for (;;) {
          const more = (await call('get_more_search_results', { sessionId: id, offset: count, length: 100000 })).text;
          count += countLines(more, /^📁 /);
          if (/Status: COMPLETED/.test(more) && !/More results available/.test(more)) return { count };
        }
      },
    },
  },
};

const EQUIVALENTS = {
  ls: 'ls | list_directory_with_sizes | list_directory depth 1 (names only, no sizes)',
  read: 'read_file limit 100000 | read_text_file | read_file length 100000',
  write: 'write_file | write_file | write_file mode rewrite',
  glob: 'glob **/*.txt | search_files **/*.txt (minimatch walk) | start_search files *.txt (ripgrep --files) + get_more_search_results',
};

// Every server gets the same throwaway HOME (the user's is never touched). Desktop Commander's
// config is written there first: telemetry off, the fixture allowed, read and write line limits
// above what the benchmark needs, no onboarding.
function peerHome() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-peers-home-'));
  const dc = path.join(home, '.claude-server-commander');
  fs.mkdirSync(dc);
  fs.writeFileSync(path.join(dc, 'config.json'), JSON.stringify({
    blockedCommands: [], defaultShell: '/bin/sh', allowedDirectories: [FX], telemetryEnabled: false,
    fileReadLineLimit: 100000, fileWriteLineLimit: 100000,
    pendingWelcomeOnboarding: false, welcomeOnboardingEligible: false }, null, 2));
  // It downloads Chrome (for PDF export) at start unless its cache has one: a stub stops that.
  const chrome = path.join(dc, 'puppeteer-cache/chrome/stub/chrome-linux64/chrome');
  fs.mkdirSync(path.dirname(chrome), { recursive: true });
  fs.writeFileSync(chrome, '');
  return home;
}
const SERVER_ENV = {
  // A plain PATH: Desktop Commander runs `python3 --version` (execSync, blocking) for every
  // telemetry event it builds, even with telemetry off; a pyenv shim first on PATH makes that
  // ~0.3 s instead of ~15 ms, which would time pyenv rather than the server.
  PATH: [path.dirname(NODE), '/usr/local/bin', '/usr/bin', '/bin'].join(':'),
  DESKTOP_COMMANDER_DISABLE_TELEMETRY: '1', // its documented kill switch, besides the config
  DC_FLAG_URL: 'http://127.0.0.1:9/flags.json', // feature flags: refused at once, not fetched
};

async function startServer(name, home) {
  const spec = SERVERS[name];
  const transport = new StdioClientTransport({ command: spec.command, args: spec.args,
    env: { HOME: home, ...SERVER_ENV }, stderr: 'pipe', cwd: FX });
  let stderr = '';
  transport.stderr?.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
  const client = new Client({ name: 'bench-peers', version: '1.0.0' });
  await client.connect(transport);
  await client.listTools(); // as a client would; also primes the SDK's output-schema checks
  const call = async (tool, args) => {
    const r = await client.callTool({ name: tool, arguments: args }, undefined, { timeout: 120000 });
    const text = (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
    if (r.isError) throw new Error(`${name} ${tool} failed: ${text.slice(0, 500)}`);
    return { text, structuredContent: r.structuredContent };
  };
  const info = client.getServerVersion();
  return { name, spec, client, transport, call, pid: transport.pid, stderr: () => stderr,
    version: `${info?.name} ${info?.version}` };
}

// ---------------------------------------------------------------------------------------------
// Checks of one answer per operation: fail loudly rather than time a truncated answer.

function check(server, op, result, expect) {
  const fail = (msg) => { throw new Error(`${server.name} ${op}: ${msg}`); };
  if (op === 'ls' && result.count !== expect.wide) fail(`${result.count} entries, expected ${expect.wide}`);
  if (op === 'glob' && result.count !== expect.txt) fail(`${result.count} matches, expected ${expect.txt}`);
  if (op === 'read') {
    const t = result.text;
    if (t.length < expect.file.length || !t.includes(expect.first) || !t.includes(expect.last)) {
      fail(`truncated: ${t.length} chars for a file of ${expect.file.length} bytes, or its first ` +
        `or last line missing; the answer ends ${JSON.stringify(t.slice(-200))}`);
    }
    return t.length;
  }
  if (op === 'write') {
    const dat = fs.readFileSync(abs(`scratch/${server.spec.floorOf ?? server.name}.dat`), 'utf8');
    if (dat !== expect.content) fail(`the file written holds ${dat.length} bytes, not the ${expect.content.length} sent`);
  }
  return result.count;
}

function rssKiB(pid, field) {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

// ---------------------------------------------------------------------------------------------
// Main

const manifest = loadOrMakeFixture(FX);
const file1m = fs.readFileSync(abs(FILE_1M), 'utf8');
const lines1m = file1m.split('\n').filter(Boolean);
const r10k = makeRng(7);
let content10k = '';
while (content10k.length < 10240) content10k += makeLine('words', r10k) + '\n';
const expect = { wide: manifest.wide_entries, txt: manifest.txt_files, file: file1m,
  first: lines1m[0], last: lines1m.at(-1), content: content10k.slice(0, 10239) + '\n' };

// The floors: our server behind a replayer (see --floor above); same calls, same checks.
const REPLAY = path.join(BENCH_DIR, 'replay.py');
for (const [floor, of] of [['floor', 'backyard'], ['floor-text', 'backyard-text']]) {
  if (!opts.floor) break;
  SERVERS[floor] = { ...SERVERS[of], command: '/usr/bin/python3',
    args: [REPLAY, SERVERS[of].command, ...SERVERS[of].args], floorOf: of };
}
const names = opts.only ? [opts.only] : Object.keys(SERVERS);
const OPS = ['ls', 'read', 'write', 'glob'];
const ITERS = { ls: opts.runs, read: opts.runs, write: opts.runs, glob: Math.max(5, Math.ceil(opts.runs / 4)) };
const ROUNDS = Math.min(5, opts.runs);
const WARMUP = 3;

const home = peerHome();
const servers = [];
const cleanUp = async () => {
  await Promise.allSettled(servers.map((s) => s.client.close()));
  fs.rmSync(home, { recursive: true, force: true });
};
process.on('SIGINT', () => { cleanUp().finally(() => process.exit(130)); }); // close the servers

const results = { fixture: FX, files: manifest.files, bytes: manifest.bytes, runs: opts.runs,
  node: process.version, cpus: os.cpus().length, servers: {} };
try {
  for (const name of names) {
    const s = await startServer(name, home);
    servers.push(s);
    results.servers[name] = { version: s.version, pid: s.pid, ops: {}, checked: {} };
  }
  const dc = servers.find((s) => s.name === 'desktop-commander');
  if (dc) {
    const cfg = (await dc.call('get_config', {})).text;
    if (!/"telemetryEnabled":\s*false/.test(cfg)) throw new Error(`desktop-commander telemetry not off: ${cfg.slice(0, 400)}`);
  }
  // Warm-up: every operation a few times per server, checking each answer.
  for (const s of servers) {
    for (const op of OPS) {
      for (let i = 0; i < WARMUP; i++) {
        results.servers[s.name].checked[op] = check(s, op, await s.spec.ops[op](s.call, expect.content), expect);
      }
    }
    results.servers[s.name].rss_after_warmup_kib = rssKiB(s.pid, 'VmRSS');
  }
  // Timed: per operation, ROUNDS rounds; in each, every server (order rotated) runs its share.
  const samples = {};
  for (const op of OPS) {
    const perRound = Math.ceil(ITERS[op] / ROUNDS);
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < servers.length; k++) {
        const s = servers[(round + k) % servers.length];
        const ms = [];
        for (let i = 0; i < perRound; i++) {
          const t0 = process.hrtime.bigint();
          const res = await s.spec.ops[op](s.call, expect.content);
          ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
          if (op !== 'write') check(s, op, res, expect); // writes were checked in warm-up
        }
        ((samples[s.name] ??= {})[op] ??= []).push(ms);
      }
    }
  }
  // What each keeps once left alone: a server may give memory back when idle (ours after 1 s,
  // a Node server when its garbage collector runs).
  await new Promise((resolve) => setTimeout(resolve, 2000));
  for (const s of servers) {
    const r = results.servers[s.name];
    r.peak_rss_kib = rssKiB(s.pid, 'VmHWM');
    r.rss_idle_kib = rssKiB(s.pid, 'VmRSS');
    for (const op of OPS) {
      const rounds = samples[s.name][op];
      const all = rounds.flat().sort((a, b) => a - b);
      const q = (p) => all[Math.min(all.length - 1, Math.floor(p * all.length))];
      const med = (xs) => { const v = [...xs].sort((a, b) => a - b); const h = v.length >> 1;
        return v.length % 2 ? v[h] : (v[h - 1] + v[h]) / 2; };
      const roundMedians = rounds.map(med);
      r.ops[op] = { median_ms: med(all), p25_ms: q(0.25), p75_ms: q(0.75), min_ms: all[0],
        max_ms: all.at(-1), round_medians_ms: roundMedians, n: all.length };
    }
  }
  printTable(results);
  if (opts.json) fs.writeFileSync(opts.json, JSON.stringify(results, null, 1));
} catch (err) {
  console.error(`FAIL ${err.stack ?? err}`);
  for (const s of servers) if (s.stderr()) console.error(`--- ${s.name} stderr (tail):\n${s.stderr()}`);
  process.exitCode = 1;
} finally {
  await cleanUp();
}

function ours(name) { return name === 'backyard' || name === 'backyard-text' || !!SERVERS[name].floorOf; }

// "fs xA dc xB": each peer's median over `ms`.
function peersOver(res, op, ms) {
  const short = { filesystem: 'fs', 'desktop-commander': 'dc' };
  return Object.keys(short).filter((n) => res.servers[n])
    .map((n) => `  ${short[n]} x${(res.servers[n].ops[op].median_ms / ms).toFixed(1)}`).join('');
}

function printTable(res) {
  const fmt = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
  const base = res.servers.backyard;
  const label = { ls: 'ls wide/ (500 entries)', read: 'read 1 MiB text file', write: 'write 10 KiB',
    glob: '**/*.txt over fixture' };
  const rows = [['operation', ...names.map((n) => `${n} median [p25-p75] ms`)]];
  for (const op of OPS) {
    rows.push([label[op], ...names.map((n) => {
      const o = res.servers[n].ops[op];
      const of = SERVERS[n].floorOf && res.servers[SERVERS[n].floorOf];
      const ratio = base && !ours(n) ? `  x${(o.median_ms / base.ops[op].median_ms).toFixed(1)}`
        : n === 'backyard-text' ? peersOver(res, op, o.median_ms)
        : of ? `  ${((100 * o.median_ms) / of.ops[op].median_ms).toFixed(0)}% of ${SERVERS[n].floorOf}` : '';
      return `${fmt(o.median_ms)} [${fmt(o.p25_ms)}-${fmt(o.p75_ms)}]${ratio}`;
    })]);
  }
  for (const [key, title] of [['rss_after_warmup_kib', 'RSS after warm-up, MiB'],
    ['rss_idle_kib', 'RSS after the run and 2 s idle, MiB'], ['peak_rss_kib', 'peak RSS (VmHWM), MiB']]) {
    rows.push([title, ...names.map((n) => {
      if (SERVERS[n].floorOf) return '(the replayer\'s: n/a)';
      const v = res.servers[n][key];
      const ratio = base && !ours(n) ? `  x${(v / base[key]).toFixed(1)}` : '';
      return `${(v / 1024).toFixed(1)}${ratio}`;
    })]);
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  console.log(`\nMCP servers over stdio, same SDK client; fixture ${res.files} files, ` +
    `${(res.bytes / MIB).toFixed(0)} MiB; ${res.runs} runs (glob ${ITERS.glob}); ${res.cpus} CPUs; node ${res.node}`);
  for (const n of names) console.log(`  ${n}: ${res.servers[n].version} (pid ${res.servers[n].pid})`);
  console.log('');
  for (const r of rows) console.log(r.map((cell, c) => cell.padEnd(widths[c])).join('  |  '));
  console.log(`\nxN: peer median / backyard median (>1: backyard faster or smaller); in the ` +
    `backyard-text column, each peer's median / backyard-text's.`);
  if (opts.floor) console.log(`floor, floor-text: the client and pipe alone for backyard's answers ` +
    `(replayed at once by bench/replay.py), and their share of backyard's time.`);
  console.log(`Checked per server: ls entries, glob matches, read answer chars:`);
  for (const n of names) console.log(`  ${n}: ${JSON.stringify(res.servers[n].checked)}`);
  console.log('Tools used (backyard and backyard-text | filesystem | desktop-commander):');
  for (const op of OPS) console.log(`  ${op}: ${EQUIVALENTS[op]}`);
}
