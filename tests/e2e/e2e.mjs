#!/usr/bin/env node
// End-to-end test of backyard-mcp with the official MCP TypeScript SDK.
//
//   node tests/e2e/e2e.mjs /path/to/backyard-mcp
//
// Launches the server over stdio twice (Local backend on a fresh temp dir, then the State
// backend seeded from a snapshot file), calls every tool through the SDK's Client and checks
// the text and structuredContent of each answer. The SDK validates structuredContent against
// each tool's outputSchema, so a schema mismatch fails the call and the check. Then checks the
// permission rulesets (permissions.mjs). Prints one line per check and exits non-zero if any
// check fails.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { spawn } from 'node:child_process';
import {
  ErrorCode,
  LATEST_PROTOCOL_VERSION,
  LoggingMessageNotificationSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';

import { permissionSuites } from './permissions.mjs';

const DEADLINE_MS = 40_000;
const TOOL_NAMES = ['ls', 'read_file', 'write_file', 'edit_file', 'mkdir', 'move', 'delete', 'glob', 'grep'];
// Tools that change files without destroying anything.
const NOT_DESTRUCTIVE = new Set(['mkdir']);
const READ_ONLY = new Set(['ls', 'read_file', 'glob', 'grep']);
// A 1x1 PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

// ---------------------------------------------------------------------------------------------
// Harness

const started = Date.now();
let passed = 0;
let failed = 0;
const tempDirs = [];
const transports = new Set(); // every server started and not yet seen to exit

function cleanUp() {
  for (const transport of transports) {
    try {
      if (transport.pid) process.kill(transport.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  transports.clear();
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
  tempDirs.length = 0;
}
process.on('exit', cleanUp);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    console.log(`FAIL interrupted by ${signal}`);
    process.exit(1);
  });
}

const watchdog = setTimeout(() => {
  console.log(`FAIL the run took longer than ${DEADLINE_MS / 1000} s; giving up`);
  process.exit(1);
}, DEADLINE_MS);

function elapsed() {
  return `${((Date.now() - started) / 1000).toFixed(2)} s`;
}

let currentLabel = '';
let serverStderr = '';

async function check(name, fn) {
  const label = `[${currentLabel}] ${name}`;
  try {
    await fn();
    passed++;
    console.log(`ok   ${label}`);
  } catch (err) {
    const message = err instanceof assert.AssertionError ? err.message : (err?.stack ?? String(err));
    const detail = `     ${message.split('\n').join('\n     ')}`;
    failed++;
    console.log(`FAIL ${label}\n${detail}`);
  }
}

function mkTemp(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

function textOf(result) {
  assert.ok(Array.isArray(result.content) && result.content.length > 0, 'result has no content');
  assert.equal(result.content[0].type, 'text');
  return result.content[0].text;
}

function assertOk(result) {
  assert.notEqual(result.isError, true, `tool reported an error: ${result.content?.[0]?.text}`);
  assert.ok(result.structuredContent, 'structuredContent is missing');
}

function assertToolError(result, ...needles) {
  assert.equal(result.isError, true, `expected isError, got ${JSON.stringify(result)}`);
  const text = textOf(result);
  for (const needle of needles) {
    assert.ok(text.includes(needle), `error text ${JSON.stringify(text)} lacks ${JSON.stringify(needle)}`);
  }
  assert.equal(result.structuredContent, undefined, 'an error result carries no structuredContent');
}

// Records the protocol version the Client settles on (the Client hands it to transports that
// take it), and every message sent and received; over stdio or Streamable HTTP.
function recording(Base) {
  return class extends Base {
    sent = [];
    received = [];
    negotiated = undefined;
    #onmessage;

    setProtocolVersion(version) {
      this.negotiated = version;
      if (super.setProtocolVersion) super.setProtocolVersion(version);
    }

    send(message, options) {
      this.sent.push(message);
      return super.send(message, options);
    }

    // The Client installs its handler with `transport.onmessage = ...`; this records on the way.
    set onmessage(handler) {
      this.#onmessage = handler;
    }

    get onmessage() {
      return this.#onmessage && ((message, extra) => {
        this.received.push(message);
        this.#onmessage(message, extra);
      });
    }
  };
}
const RecordingTransport = recording(StdioClientTransport);
const RecordingHttpTransport = recording(StreamableHTTPClientTransport);
const RecordingSseTransport = recording(SSEClientTransport);

// Starts the server with --transport http on a free loopback port; resolves to the transport
// for it (Streamable HTTP, or with `legacy` the 2024-11-05 HTTP+SSE one at /sse), which knows
// the server's process.
function startHttpServer(binary, args, cwd, legacy) {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, [...args, '--transport', 'http', '--listen', '127.0.0.1:0'],
      { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`no address from the server: ${seen}`)), 10_000);
    child.stderr.on('data', (chunk) => {
      serverStderr += chunk.toString();
      seen += chunk.toString();
      const match = /http:\/\/127\.0\.0\.1:(\d+)\/mcp/.exec(seen);
      if (match && timer) {
        clearTimeout(timer);
        const base = `http://127.0.0.1:${match[1]}`;
        const transport = legacy ? new RecordingSseTransport(new URL(`${base}/sse`))
          : new RecordingHttpTransport(new URL(`${base}/mcp`));
        transport.child = child;
        transport.pid = child.pid;
        resolve(transport);
      }
    });
    child.on('error', reject);
  });
}

// Starts the server with `args` plus `--ruleset ruleset` (and `extraArgs`) and connects a
// Client declaring `capabilities`; `setUp(client)` runs before connecting (request handlers).
async function startServer(binary, args, cwd,
  { ruleset = 'permissive', extraArgs = [], capabilities = {}, setUp, http = false,
    legacy = false } = {}) {
  const allArgs = [...args, '--log-level', 'warn', '--ruleset', ruleset, ...extraArgs];
  serverStderr = '';
  let transport;
  if (http) {
    transport = await startHttpServer(binary, allArgs, cwd, legacy);
  } else {
    transport = new RecordingTransport({ command: binary, args: allArgs, cwd, stderr: 'pipe' });
    transport.stderr.on('data', (chunk) => {
      serverStderr += chunk.toString();
    });
  }
  const client = new Client({ name: 'backyard-e2e', version: '1.0.0' }, { capabilities });
  const logs = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push(n.params);
  });
  if (setUp) setUp(client);
  transports.add(transport);
  await client.connect(transport);
  return { client, transport, logs };
}

// Closes stdin and checks that the server exits by itself (the SDK sends SIGTERM after 2 s).
// Over HTTP: ends the session with DELETE, then SIGTERM must stop the server with status 0.
async function stopServer({ client, transport }) {
  if (transport.child) {
    const child = transport.child;
    if (transport.terminateSession) {
      await transport.terminateSession();
      assert.equal(transport.sessionId, undefined, 'the session was not ended');
    }
    await client.close();
    const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('hung'), 5000))]);
    transports.delete(transport);
    assert.equal(code, 0, `the HTTP server's exit after SIGTERM: ${code}`);
    return;
  }
  const pid = transport.pid;
  const t0 = Date.now();
  await client.close();
  const took = Date.now() - t0;
  let alive = true;
  try {
    process.kill(pid, 0);
  } catch {
    alive = false;
  }
  transports.delete(transport);
  assert.equal(alive, false, `server pid ${pid} is still running after close`);
  assert.ok(took < 1900, `the server took ${took} ms to exit on stdin EOF (SIGTERM needed?)`);
}

async function waitFor(predicate, ms = 2000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (predicate()) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return predicate();
}

// ---------------------------------------------------------------------------------------------
// The checks, run once per backend.

async function suite(binary, label, args, { cwd, pngPath, http = false, legacy = false }) {
  currentLabel = label;
  const failedBefore = failed;
  let server;
  await check('connect and initialize', async () => {
    server = await startServer(binary, args, cwd, { http: http || legacy, legacy });
  });
  if (!server) return;
  const { client, transport, logs } = server;
  const call = (name, args) => client.callTool({ name, arguments: args });

  await check('serverInfo, capabilities and negotiated protocol version', async () => {
    const info = client.getServerVersion();
    assert.equal(info.name, 'backyard-mcp');
    assert.match(info.version, /^\d+\.\d+\.\d+/);
    assert.equal(transport.negotiated, LATEST_PROTOCOL_VERSION);
    assert.equal(LATEST_PROTOCOL_VERSION, '2025-11-25');
    const caps = client.getServerCapabilities();
    assert.ok(caps.tools, 'tools capability missing');
    assert.ok(caps.logging, 'logging capability missing');
    const instructions = client.getInstructions();
    assert.equal(typeof instructions, 'string');
    for (const name of TOOL_NAMES) assert.ok(instructions.includes(name), `instructions lack ${name}`);
  });

  await check('ping', async () => {
    assert.deepEqual(await client.ping(), {});
  });

  // execute exists only where commands can run: the Local backend.
  const local = label.startsWith('local');
  const expectedTools = local ? [...TOOL_NAMES, 'execute', 'run_python'] : TOOL_NAMES;
  await check(`tools/list: all ${expectedTools.length} tools with schemas, title and annotations`, async () => {
    const { tools, nextCursor } = await client.listTools();
    assert.equal(nextCursor, undefined);
    assert.deepEqual(tools.map((t) => t.name), expectedTools);
    for (const t of tools) {
      assert.equal(t.inputSchema?.type, 'object', `${t.name} inputSchema`);
      assert.equal(t.outputSchema?.type, 'object', `${t.name} outputSchema`);
      assert.ok(Array.isArray(t.outputSchema.required) && t.outputSchema.required.length > 0);
      assert.ok(typeof t.title === 'string' && t.title.length > 0, `${t.name} title`);
      assert.ok(typeof t.description === 'string' && t.description.length > 20, `${t.name} description`);
      const a = t.annotations;
      assert.ok(a, `${t.name} annotations`);
      assert.equal(a.title, t.title);
      assert.equal(a.readOnlyHint, READ_ONLY.has(t.name), `${t.name} readOnlyHint`);
      assert.equal(a.destructiveHint, !READ_ONLY.has(t.name) && !NOT_DESTRUCTIVE.has(t.name), `${t.name} destructiveHint`);
      assert.equal(typeof a.idempotentHint, 'boolean');
      assert.equal(a.openWorldHint, false);
    }
    // The SDK compiled each outputSchema and checks every callTool result against it.
    for (const name of expectedTools) {
      const validate = client.getToolOutputValidator(name);
      assert.equal(typeof validate, 'function', `no output validator for ${name}`);
      assert.equal(validate({}).valid, false, `${name}'s validator accepts {}`);
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.deepEqual(byName.read_file.inputSchema.required, ['path']);
    assert.deepEqual(byName.edit_file.inputSchema.required, ['path', 'old_string', 'new_string']);
    assert.deepEqual(byName.move.inputSchema.required, ['source', 'destination']);
  });

  await check('mkdir, move and delete: a directory made, a file moved into it, then deleted', async () => {
    assertOk(await client.callTool({ name: 'mkdir', arguments: { path: 'e2e-ops/inbox' } }));
    assertOk(await client.callTool({ name: 'write_file', arguments: { path: 'e2e-ops/note.txt', content: 'n\n' } }));
    const moved = await client.callTool({ name: 'move', arguments: { source: 'e2e-ops/note.txt', destination: 'e2e-ops/inbox/note.txt' } });
    assertOk(moved);
    assert.equal(moved.structuredContent.type, 'file');
    const listed = await client.callTool({ name: 'ls', arguments: { path: 'e2e-ops/inbox' } });
    assert.deepEqual(listed.structuredContent.entries.map((e) => e.name), ['note.txt']);
    const refused = await client.callTool({ name: 'delete', arguments: { path: 'e2e-ops' } });
    assert.equal(refused.isError, true);
    assert.match(refused.content[0].text, /recursive: true/);
    const gone = await client.callTool({ name: 'delete', arguments: { path: 'e2e-ops', recursive: true } });
    assertOk(gone);
    assert.deepEqual([gone.structuredContent.files, gone.structuredContent.dirs], [1, 2]);
  });

  if (local) {
    await check('execute runs a command in the sandbox, with progress', async () => {
      const seen = [];
      const r = await client.callTool(
        { name: 'execute', arguments: { command: 'echo line1; sleep 0.6; echo line2; sleep 0.6; echo line3; sleep 0.6; echo err >&2; exit 4' } },
        undefined, { onprogress: (p) => seen.push(p) });
      assertOk(r);
      assert.equal(r.structuredContent.stdout, 'line1\nline2\nline3\n');
      assert.equal(r.structuredContent.stderr, 'err\n');
      assert.equal(r.structuredContent.exit_code, 4);
      assert.equal(r.structuredContent.timed_out, false);
      assert.ok(seen.length >= 1, 'no progress notification arrived');
      assert.match(seen[seen.length - 1].message ?? '', /^line/);
    });
  }

  if (local) {
    await check('run_python keeps state between calls and reports exceptions', async () => {
      const first = await call('run_python', { code: 'total = 40\nprint("set")' });
      assertOk(first);
      assert.equal(first.structuredContent.stdout, 'set\n');
      const second = await call('run_python', { code: 'total + 2' });
      assertOk(second);
      assert.equal(second.structuredContent.result, '42');
      const bad = await call('run_python', { code: 'int("x")' });
      assert.equal(bad.isError, true);
      assert.equal(bad.structuredContent.error.type, 'ValueError');
    });
  }

  const body = 'alpha\nbeta\ngamma\n';
  await check('write_file creates a file', async () => {
    const r = await call('write_file', { path: 'src/hello.txt', content: body });
    assertOk(r);
    assert.deepEqual(r.structuredContent, {
      path: 'src/hello.txt',
      mode: 'overwrite',
      created: true,
      bytes_written: 17,
      lines_written: 3,
      size: 17,
    });
    assert.match(textOf(r), /^Created 'src\/hello\.txt': wrote 17 bytes \(3 lines\); the file is now 17 B?/);
  });

  await check('write_file mode=create refuses an existing file', async () => {
    const r = await call('write_file', { path: 'src/hello.txt', content: 'x', mode: 'create' });
    assertToolError(r, 'src/hello.txt');
  });

  await check('write_file mode=append', async () => {
    const r = await call('write_file', { path: 'notes.md', content: '# Notes\n' });
    assertOk(r);
    const a = await call('write_file', { path: 'notes.md', content: 'TODO: more\n', mode: 'append' });
    assertOk(a);
    assert.equal(a.structuredContent.created, false);
    assert.equal(a.structuredContent.mode, 'append');
    assert.equal(a.structuredContent.size, 19);
    assert.match(textOf(a), /^Appended 'notes\.md'/);
  });

  await check('read_file returns what write_file wrote', async () => {
    const r = await call('read_file', { path: 'src/hello.txt' });
    assertOk(r);
    assert.equal(textOf(r), '     1\talpha\n     2\tbeta\n     3\tgamma\n');
    assert.deepEqual(r.structuredContent, {
      path: 'src/hello.txt',
      kind: 'text',
      content: body,
      start_line: 1,
      num_lines: 3,
      total_lines: 3,
      size: 17,
      next_offset: null,
      invalid_utf8: false,
    });
  });

  await check('read_file pages with offset and limit', async () => {
    const r = await call('read_file', { path: 'src/hello.txt', offset: 2, limit: 1 });
    assertOk(r);
    const text = textOf(r);
    assert.ok(text.startsWith('     2\tbeta\n'), text);
    assert.match(text, /lines 2-2 of 3; 1 more lines; continue with offset=3/);
    assert.equal(r.structuredContent.content, 'beta\n');
    assert.equal(r.structuredContent.num_lines, 1);
    assert.equal(r.structuredContent.next_offset, 3);
  });

  await check('edit_file dry_run shows a diff and leaves the file alone', async () => {
    const r = await call('edit_file', {
      path: 'src/hello.txt', old_string: 'beta', new_string: 'BETA', dry_run: true,
    });
    assertOk(r);
    assert.equal(r.structuredContent.dry_run, true);
    assert.match(textOf(r), /^Would replace 1 occurrence in 'src\/hello\.txt' \(dry run, file unchanged\):\n/);
    const back = await call('read_file', { path: 'src/hello.txt' });
    assert.equal(back.structuredContent.content, body);
  });

  const edited = 'alpha\nBETA\ngamma\n';
  await check('edit_file replaces a string and returns a unified diff', async () => {
    const r = await call('edit_file', { path: 'src/hello.txt', old_string: 'beta', new_string: 'BETA' });
    assertOk(r);
    const s = r.structuredContent;
    assert.equal(s.path, 'src/hello.txt');
    assert.equal(s.replacements, 1);
    assert.equal(s.dry_run, false);
    const lines = s.diff.split('\n');
    assert.ok(lines.some((l) => l.startsWith('--- ') && l.includes('src/hello.txt')), s.diff);
    assert.ok(lines.some((l) => l.startsWith('+++ ') && l.includes('src/hello.txt')), s.diff);
    assert.ok(lines.some((l) => /^@@ -\d+(,\d+)? \+\d+(,\d+)? @@/.test(l)), s.diff);
    assert.ok(lines.includes('-beta'), s.diff);
    assert.ok(lines.includes('+BETA'), s.diff);
    assert.ok(lines.includes(' alpha') && lines.includes(' gamma'), 'context lines');
    assert.equal(textOf(r), `Replaced 1 occurrence in 'src/hello.txt':\n${s.diff}`);
  });

  await check('read_file after edit_file shows the change', async () => {
    const r = await call('read_file', { path: 'src/hello.txt' });
    assertOk(r);
    assert.equal(r.structuredContent.content, edited);
    assert.equal(textOf(r), '     1\talpha\n     2\tBETA\n     3\tgamma\n');
  });

  await check('edit_file with an absent old_string is a tool error', async () => {
    const r = await call('edit_file', { path: 'src/hello.txt', old_string: 'delta', new_string: 'x' });
    assertToolError(r, 'old_string was not found', 'src/hello.txt');
  });

  await check('ls lists the root and a directory', async () => {
    const root = await call('ls', {});
    assertOk(root);
    assert.equal(root.structuredContent.path, '.');
    const src = root.structuredContent.entries.find((e) => e.name === 'src');
    assert.ok(src, JSON.stringify(root.structuredContent.entries));
    assert.equal(src.type, 'dir');
    assert.match(textOf(root), /^\.: \d+ entries\n/);

    const r = await call('ls', { path: 'src' });
    assertOk(r);
    const s = r.structuredContent;
    assert.equal(s.path, 'src');
    assert.equal(s.total, 1);
    assert.equal(s.truncated, false);
    assert.equal(s.entries.length, 1);
    const [e] = s.entries;
    assert.equal(e.name, 'hello.txt');
    assert.equal(e.type, 'file');
    assert.equal(e.size, 17);
    assert.match(e.mtime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    const text = textOf(r);
    assert.ok(text.startsWith('src: 1 entry\n'), text);
    assert.match(text, /^file\s+17 B\s+\S+Z\s+hello\.txt$/m);
  });

  await check('glob finds the file', async () => {
    const r = await call('glob', { pattern: '**/*.txt' });
    assertOk(r);
    assert.deepEqual(r.structuredContent, {
      pattern: '**/*.txt', paths: ['src/hello.txt'], total: 1, truncated: false, hidden: 0,
    });
    assert.equal(textOf(r), 'src/hello.txt\n');
    const none = await call('glob', { pattern: '**/*.rs' });
    assertOk(none);
    assert.equal(none.structuredContent.total, 0);
    assert.match(textOf(none), /^No files match/);
  });

  await check('grep content mode gives the line and its number', async () => {
    const r = await call('grep', { pattern: 'BET[A-Z]', output_mode: 'content' });
    assertOk(r);
    const s = r.structuredContent;
    assert.deepEqual(s.matches, [{ path: 'src/hello.txt', line: 2, text: 'BETA', match: true }]);
    assert.equal(s.files_matched, 1);
    assert.equal(s.total_matches, 1);
    assert.equal(s.truncated, false);
    // The PNG is searched too, and skipped as binary.
    assert.equal(s.files_searched, 3);
    assert.equal(s.binary_skipped, 1);
    assert.equal(textOf(r), 'src/hello.txt:2:BETA\n[1 binary file(s) skipped]\n');
  });

  await check('grep files_with_matches and count modes', async () => {
    const files = await call('grep', { pattern: 'TODO', include: '*.md' });
    assertOk(files);
    assert.deepEqual(files.structuredContent.files, ['notes.md']);
    assert.equal(files.structuredContent.files_searched, 1);
    assert.equal(textOf(files), 'notes.md\n');

    // Like grep -c, count mode counts matching lines ("alpha" and "gamma"), not matches.
    const count = await call('grep', { pattern: 'a', output_mode: 'count', include: '*.txt' });
    assertOk(count);
    assert.deepEqual(count.structuredContent.counts, [{ path: 'src/hello.txt', count: 2 }]);
    assert.equal(textOf(count), 'src/hello.txt:2\n');
  });

  await check('grep context lines around a match', async () => {
    const r = await call('grep', { pattern: 'l', output_mode: 'content', context: 1, path: 'src' });
    assertOk(r);
    // "alpha" matches on line 1; "BETA" (line 2) is its after-context.
    assert.deepEqual(r.structuredContent.matches.map((m) => [m.line, m.text, m.match]), [
      [1, 'alpha', true], [2, 'BETA', false],
    ]);
    assert.equal(textOf(r), 'src/hello.txt:1:alpha\nsrc/hello.txt-2-BETA\n');
  });

  await check('grep context line that is the last line of the file', async () => {
    const r = await call('grep', { pattern: 'beta', ignore_case: true, output_mode: 'content', context: 1, path: 'src' });
    assertOk(r);
    assert.deepEqual(r.structuredContent.matches.map((m) => [m.line, m.text, m.match]), [
      [1, 'alpha', false], [2, 'BETA', true], [3, 'gamma', false],
    ]);
    assert.equal(textOf(r), 'src/hello.txt-1-alpha\nsrc/hello.txt:2:BETA\nsrc/hello.txt-3-gamma\n');
  });

  await check('read_file of a PNG returns an image content block', async () => {
    const r = await call('read_file', { path: pngPath });
    assertOk(r);
    assert.equal(r.content.length, 2);
    assert.match(textOf(r), new RegExp(`^Image '${pngPath}' \\(image/png, `));
    const image = r.content[1];
    assert.equal(image.type, 'image');
    assert.equal(image.mimeType, 'image/png');
    assert.ok(Buffer.from(image.data, 'base64').equals(PNG), 'image bytes differ from the PNG on disk');
    assert.deepEqual(r.structuredContent, {
      path: pngPath, kind: 'image', mime_type: 'image/png', size: PNG.length,
    });
  });

  await check('read_file of a missing file is a tool error', async () => {
    const r = await call('read_file', { path: 'missing.txt' });
    assertToolError(r, 'missing.txt', 'does not exist');
  });

  await check('bad arguments are a tool error naming the field', async () => {
    const wrongType = await call('read_file', { path: 42 });
    assertToolError(wrongType, 'invalid arguments for read_file', 'path', 'must be a string');
    const missing = await call('write_file', { path: 'x.txt' });
    assertToolError(missing, 'invalid arguments for write_file', 'content', 'required');
    const unknown = await call('glob', { pattern: '*', recursive: true });
    assertToolError(unknown, 'invalid arguments for glob', 'recursive');
    const range = await call('grep', { pattern: 'x', context: 1000 });
    assertToolError(range, 'invalid arguments for grep', 'context');
  });

  await check('an unknown tool is a JSON-RPC error', async () => {
    await assert.rejects(call('no_such_tool', {}), (err) => {
      assert.ok(err instanceof McpError, String(err));
      assert.equal(err.code, ErrorCode.InvalidParams);
      assert.match(err.message, /no_such_tool/);
      return true;
    });
  });

  await check('logging/setLevel then a tool call yields notifications/message', async () => {
    logs.length = 0;
    await client.setLoggingLevel('debug');
    const r = await call('ls', { path: 'src' });
    assertOk(r);
    assert.ok(await waitFor(() => logs.some((l) => l.data?.tool === 'ls')), 'no log notification for ls');
    const entry = logs.find((l) => l.data?.tool === 'ls');
    assert.equal(entry.level, 'debug');
    assert.equal(entry.logger, 'backyard-mcp');
    assert.equal(entry.data.isError, false);
    assert.equal(typeof entry.data.duration_ms, 'number');

    const bad = await call('read_file', { path: 'missing.txt' });
    assert.equal(bad.isError, true);
    assert.ok(await waitFor(() => logs.some((l) => l.data?.tool === 'read_file')), 'no log for the error');
    const errEntry = logs.find((l) => l.data?.tool === 'read_file');
    assert.equal(errEntry.data.isError, true);
    assert.equal(errEntry.level, 'notice');

    // Above the level of these messages, nothing more arrives. The server sends a call's log
    // message before its response on the same stream, so awaiting the response is enough.
    await client.setLoggingLevel('error');
    logs.length = 0;
    assertOk(await call('ls', {}));
    assert.equal(await call('read_file', { path: 'missing.txt' }).then((x) => x.isError), true);
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(logs, []);
  });

  await check('logging/setLevel with an unknown level is rejected', async () => {
    await assert.rejects(client.setLoggingLevel('loud'), McpError);
  });

  await check(http ? 'session ends with DELETE and the server exits on SIGTERM'
    : legacy ? 'the server exits on SIGTERM' : 'server exits on stdin EOF', async () => {
    await stopServer(server);
  });
  if (failed > failedBefore && serverStderr.trim()) {
    console.log(`     server stderr (${label}):\n     ${serverStderr.trim().split('\n').join('\n     ')}`);
  }
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const arg = process.argv[2];
  if (!arg) {
    console.error('usage: node e2e.mjs /path/to/backyard-mcp');
    process.exit(2);
  }
  const binary = path.resolve(arg);
  try {
    fs.accessSync(binary, fs.constants.X_OK);
  } catch {
    console.error(`e2e: ${binary} is not an executable file`);
    process.exit(2);
  }
  console.log(`e2e: ${binary}`);

  // Local backend on a fresh directory holding a PNG written beforehand.
  const root = mkTemp('backyard-e2e-local-');
  fs.mkdirSync(path.join(root, 'img'));
  fs.writeFileSync(path.join(root, 'img', 'pixel.png'), PNG);
  await suite(binary, 'local', ['--backend', 'local', '--root', root], { cwd: root, pngPath: 'img/pixel.png' });
  currentLabel = 'local';
  await check('files written through the server are on disk', async () => {
    assert.equal(fs.readFileSync(path.join(root, 'src', 'hello.txt'), 'utf8'), 'alpha\nBETA\ngamma\n');
    assert.equal(fs.readFileSync(path.join(root, 'notes.md'), 'utf8'), '# Notes\nTODO: more\n');
  });

  // The same checks with the Local backend over Streamable HTTP.
  const httpRoot = mkTemp('backyard-e2e-http-');
  fs.mkdirSync(path.join(httpRoot, 'img'));
  fs.writeFileSync(path.join(httpRoot, 'img', 'pixel.png'), PNG);
  await suite(binary, 'local-http', ['--backend', 'local', '--root', httpRoot],
    { cwd: httpRoot, pngPath: 'img/pixel.png', http: true });
  currentLabel = 'local-http';
  await check('files written over HTTP are on disk', async () => {
    assert.equal(fs.readFileSync(path.join(httpRoot, 'src', 'hello.txt'), 'utf8'), 'alpha\nBETA\ngamma\n');
  });

  // And over the 2024-11-05 HTTP+SSE transport (GET /sse, POST /messages).
  const sseRoot = mkTemp('backyard-e2e-sse-');
  fs.mkdirSync(path.join(sseRoot, 'img'));
  fs.writeFileSync(path.join(sseRoot, 'img', 'pixel.png'), PNG);
  await suite(binary, 'local-sse', ['--backend', 'local', '--root', sseRoot],
    { cwd: sseRoot, pngPath: 'img/pixel.png', legacy: true });

  // State backend, seeded from a snapshot that holds the same PNG; saved back at exit.
  const stateDir = mkTemp('backyard-e2e-state-');
  const snapshot = path.join(stateDir, 'snapshot.json');
  fs.writeFileSync(snapshot, JSON.stringify({
    version: 1,
    files: { 'assets/pixel.png': { content: PNG.toString('base64'), encoding: 'base64' } },
    dirs: [],
  }));
  await suite(binary, 'state', ['--backend', 'state', '--state-file', snapshot],
    { cwd: stateDir, pngPath: 'assets/pixel.png' });
  currentLabel = 'state';
  await check('the State snapshot saved at exit holds the edits, and nothing leaked to disk', async () => {
    const saved = JSON.parse(fs.readFileSync(snapshot, 'utf8'));
    assert.equal(saved.version, 1);
    assert.deepEqual(saved.files['src/hello.txt'].content, 'alpha\nBETA\ngamma\n');
    assert.equal(saved.files['src/hello.txt'].encoding, 'utf-8');
    assert.equal(saved.files['notes.md'].content, '# Notes\nTODO: more\n');
    assert.equal(saved.files['assets/pixel.png'].encoding, 'base64');
    assert.ok(Buffer.from(saved.files['assets/pixel.png'].content, 'base64').equals(PNG));
    assert.ok(saved.dirs.includes('src') && saved.dirs.includes('assets'), JSON.stringify(saved.dirs));
    assert.deepEqual(fs.readdirSync(stateDir), ['snapshot.json']);
  });

  // Permission rulesets, on the Local backend.
  await permissionSuites(binary, {
    check, mkTemp, startServer, stopServer, textOf, assertOk, assertToolError,
    setLabel: (label) => {
      currentLabel = label;
      return failed;
    },
    reportStderr: (label, failedBefore) => {
      if (failed > failedBefore && serverStderr.trim()) {
        console.log(`     server stderr (${label}):\n     ${serverStderr.trim().split('\n').join('\n     ')}`);
      }
    },
  });
}

try {
  await main();
} catch (err) {
  failed++;
  console.log(`FAIL unexpected error: ${err?.stack ?? err}`);
} finally {
  clearTimeout(watchdog);
  cleanUp();
}
console.log(`${failed === 0 ? 'PASS' : 'FAIL'}: ${passed} passed, ${failed} failed in ${elapsed()}`);
process.exit(failed === 0 ? 0 : 1);
