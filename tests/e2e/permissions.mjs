// Permission rulesets end to end (called from e2e.mjs, which owns the harness): the readonly
// preset's tool list and refusals, the default preset hiding secrets from every listing, and
// 'ask' turned into elicitation/create for a client that declared the capability. Each suite
// runs the Local backend on a fresh temp dir.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const READ_ONLY_TOOLS = ['ls', 'read_file', 'glob', 'grep'];
const SECRET = 'hunter2';

// h: { check, mkTemp, startServer, stopServer, textOf, assertOk, assertToolError,
//      setLabel(label) -> failures so far, reportStderr(label, failuresBefore) }
export async function permissionSuites(binary, h) {
  await readonlySuite(binary, h);
  await secretsSuite(binary, h);
  await askSuite(binary, h);
}

function localArgs(root) {
  return ['--backend', 'local', '--root', root];
}

function assertAbsent(root, rel) {
  assert.equal(fs.existsSync(path.join(root, rel)), false, `${rel} exists on disk`);
}

// Runs `body(server)` against a server started with `options`, then stops it (and checks that it
// exits); prints the server's stderr if a check in between failed.
async function withServer(binary, h, label, root, options, body) {
  const failedBefore = h.setLabel(label);
  let server;
  await h.check(`connect (${[`--ruleset ${options.ruleset}`, ...(options.extraArgs ?? [])].join(' ')})`,
    async () => {
      server = await h.startServer(binary, localArgs(root), root, options);
    });
  if (server) {
    const call = (name, args) => server.client.callTool({ name, arguments: args });
    await body(server, call);
    await h.check('server exits on stdin EOF', async () => {
      await h.stopServer(server);
    });
  }
  h.reportStderr(label, failedBefore);
}

// ---------------------------------------------------------------------------------------------

async function readonlySuite(binary, h) {
  const root = h.mkTemp('backyard-e2e-readonly-');
  fs.writeFileSync(path.join(root, 'readme.txt'), 'hello\n');

  await withServer(binary, h, 'readonly', root, { ruleset: 'readonly' }, async ({ client }, call) => {
    await h.check('tools/list offers exactly ls, read_file, glob, grep, all readOnlyHint', async () => {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), READ_ONLY_TOOLS);
      for (const t of tools) {
        assert.equal(t.annotations?.readOnlyHint, true, `${t.name} readOnlyHint`);
        assert.equal(t.annotations?.destructiveHint, false, `${t.name} destructiveHint`);
      }
    });

    await h.check('write_file is refused and nothing reaches the disk', async () => {
      const r = await call('write_file', { path: 'x.txt', content: 'x' });
      h.assertToolError(r, "write denied for 'x.txt'");
      assert.equal(h.textOf(r), "write denied for 'x.txt': by write default");
      assertAbsent(root, 'x.txt');
    });

    await h.check('edit_file is refused and the file is unchanged', async () => {
      const r = await call('edit_file', { path: 'readme.txt', old_string: 'hello', new_string: 'bye' });
      h.assertToolError(r, "edit denied for 'readme.txt'");
      assert.equal(fs.readFileSync(path.join(root, 'readme.txt'), 'utf8'), 'hello\n');
    });

    await h.check('read_file, ls, glob and grep still work', async () => {
      const r = await call('read_file', { path: 'readme.txt' });
      h.assertOk(r);
      assert.equal(r.structuredContent.content, 'hello\n');
      const ls = await call('ls', {});
      h.assertOk(ls);
      assert.deepEqual(ls.structuredContent.entries.map((e) => e.name), ['readme.txt']);
      assert.equal(ls.structuredContent.hidden, 0);
      const g = await call('glob', { pattern: '*.txt' });
      h.assertOk(g);
      assert.deepEqual(g.structuredContent.paths, ['readme.txt']);
      const gr = await call('grep', { pattern: 'hel+o' });
      h.assertOk(gr);
      assert.deepEqual(gr.structuredContent.files, ['readme.txt']);
    });
  });
}

// ---------------------------------------------------------------------------------------------

async function secretsSuite(binary, h) {
  const root = h.mkTemp('backyard-e2e-secrets-');
  fs.mkdirSync(path.join(root, 'config'));
  fs.mkdirSync(path.join(root, 'docs'));
  fs.writeFileSync(path.join(root, '.env'), `API_KEY=${SECRET}`);
  fs.writeFileSync(path.join(root, 'config', '.env.production'), `API_KEY=${SECRET}-prod\n`);
  fs.writeFileSync(path.join(root, 'id_rsa'), `-----BEGIN OPENSSH PRIVATE KEY-----\n${SECRET}\n`);
  fs.writeFileSync(path.join(root, 'docs', 'api.md'), 'The API is documented here.\n');

  // Neither a secret's name nor its content may appear anywhere in the answer.
  const assertNoSecrets = (r) => {
    const all = JSON.stringify(r);
    for (const needle of ['.env', 'id_rsa', SECRET, 'API_KEY', 'PRIVATE KEY']) {
      assert.ok(!all.includes(needle), `the answer mentions ${JSON.stringify(needle)}: ${all}`);
    }
  };
  const assertHidden = (r, expected) => {
    h.assertOk(r);
    assertNoSecrets(r);
    assert.equal(r.structuredContent.hidden, expected, `hidden in ${JSON.stringify(r.structuredContent)}`);
    const note = `[${expected} ${expected === 1 ? 'entry' : 'entries'} hidden by the permission rules]`;
    assert.ok(h.textOf(r).includes(note), `text ${JSON.stringify(h.textOf(r))} lacks ${JSON.stringify(note)}`);
  };

  await withServer(binary, h, 'secrets', root, { ruleset: 'default' }, async (_server, call) => {
    await h.check('ls hides .env and id_rsa, and says so', async () => {
      const r = await call('ls', {});
      assertHidden(r, 2);
      assert.deepEqual(r.structuredContent.entries.map((e) => e.name), ['config', 'docs']);
      assert.equal(r.structuredContent.total, 2);
      const sub = await call('ls', { path: 'config' });
      assertHidden(sub, 1);
      assert.deepEqual(sub.structuredContent.entries, []);
    });

    await h.check('glob **/* hides every secret', async () => {
      const r = await call('glob', { pattern: '**/*' });
      assertHidden(r, 3);
      assert.deepEqual(r.structuredContent.paths, ['docs/api.md']);
      assert.equal(r.structuredContent.total, 1);
    });

    await h.check('grep "API" finds only the normal file, in every output mode', async () => {
      const files = await call('grep', { pattern: 'API' });
      assertHidden(files, 3);
      assert.deepEqual(files.structuredContent.files, ['docs/api.md']);
      const content = await call('grep', { pattern: 'API', output_mode: 'content' });
      assertHidden(content, 3);
      assert.deepEqual(content.structuredContent.matches.map((m) => m.path), ['docs/api.md']);
      const count = await call('grep', { pattern: 'API', output_mode: 'count' });
      assertHidden(count, 3);
      assert.deepEqual(count.structuredContent.counts, [{ path: 'docs/api.md', count: 1 }]);
    });

    await h.check(`grep "${SECRET}" finds nothing`, async () => {
      for (const output_mode of ['files_with_matches', 'content', 'count']) {
        const r = await call('grep', { pattern: SECRET, output_mode });
        assertHidden(r, 3);
        assert.equal(r.structuredContent.total_matches, 0, output_mode);
        assert.equal(r.structuredContent.files_matched, 0, output_mode);
      }
      const inConfig = await call('grep', { pattern: SECRET, path: 'config', output_mode: 'content' });
      assertHidden(inConfig, 1);
      assert.deepEqual(inConfig.structuredContent.matches, []);
    });

    await h.check('read_file of .env, config/.env.production and id_rsa is refused', async () => {
      const r = await call('read_file', { path: '.env' });
      h.assertToolError(r, "read denied for '.env'");
      assertNoSecretContent(r);
      const dotted = await call('read_file', { path: './config/../.env' });
      h.assertToolError(dotted, "read denied for '.env'");
      const prod = await call('read_file', { path: 'config/.env.production' });
      h.assertToolError(prod, "read denied for 'config/.env.production'");
      assertNoSecretContent(prod);
      const key = await call('read_file', { path: 'id_rsa' });
      h.assertToolError(key, "read denied for 'id_rsa'");
      assertNoSecretContent(key);
    });

    await h.check('naming .env as the path of ls or grep is refused', async () => {
      const ls = await call('ls', { path: '.env' });
      h.assertToolError(ls, "ls denied for '.env'");
      const grep = await call('grep', { pattern: SECRET, path: '.env', output_mode: 'content' });
      h.assertToolError(grep, "grep denied for '.env'");
      assertNoSecretContent(grep);
    });

    await h.check('writing .env is refused even under default (never asked)', async () => {
      const r = await call('write_file', { path: '.env', content: 'API_KEY=stolen' });
      h.assertToolError(r, "write denied for '.env'");
      assert.equal(fs.readFileSync(path.join(root, '.env'), 'utf8'), `API_KEY=${SECRET}`);
    });
  });
}

function assertNoSecretContent(r) {
  const all = JSON.stringify(r);
  assert.ok(!all.includes(SECRET) && !all.includes('API_KEY'), `the answer leaks the secret: ${all}`);
}

// ---------------------------------------------------------------------------------------------

// A client that declares elicitation and answers every elicitation/create with answer(params)
// (a value or a promise); the requests it saw are in `asked`.
function eliciting(answer) {
  const asked = [];
  return {
    asked,
    options: {
      capabilities: { elicitation: {} },
      setUp: (client) => {
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          asked.push(request.params);
          return answer(request.params);
        });
      },
    },
  };
}

function elicitationRequests(transport) {
  return transport.received.filter((m) => m.method === 'elicitation/create');
}

async function askSuite(binary, h) {
  const root = h.mkTemp('backyard-e2e-ask-');
  fs.writeFileSync(path.join(root, 'readme.txt'), 'hello\n');
  const denied = (file) => `write for '${file}' needs approval (write default)`;

  // (a) accept with approve: true proceeds; accept with approve: false does not.
  let approve = true;
  let remember = false;
  const accepting = eliciting(() => ({ action: 'accept', content: { approve, remember } }));
  await withServer(binary, h, 'ask accept', root, { ruleset: 'default', ...accepting.options },
    async ({ transport }, call) => {
      await h.check('initialize declared the elicitation capability', async () => {
        const init = transport.sent.find((m) => m.method === 'initialize');
        assert.ok(init, 'no initialize request was sent');
        assert.ok('elicitation' in init.params.capabilities, JSON.stringify(init.params.capabilities));
      });

      await h.check('read_file is allowed without asking', async () => {
        h.assertOk(await call('read_file', { path: 'readme.txt' }));
        assert.equal(accepting.asked.length, 0);
      });

      await h.check('write_file asks once; accept + approve:true writes the file', async () => {
        const r = await call('write_file', { path: 'approved.txt', content: 'yes\n' });
        h.assertOk(r);
        assert.equal(r.structuredContent.created, true);
        assert.equal(fs.readFileSync(path.join(root, 'approved.txt'), 'utf8'), 'yes\n');
        assert.equal(accepting.asked.length, 1, JSON.stringify(accepting.asked));
        const [params] = accepting.asked;
        assert.match(params.message, /\bwrite\b/, params.message);
        assert.ok(params.message.includes('approved.txt'), params.message);
        const schema = params.requestedSchema;
        assert.equal(schema.type, 'object');
        assert.deepEqual(Object.keys(schema.properties), ['approve', 'remember']);
        assert.equal(schema.properties.approve.type, 'boolean');
        assert.equal(schema.properties.remember.type, 'boolean');
        assert.ok(schema.properties.remember.description.includes("write of 'approved.txt'"),
          schema.properties.remember.description);
        assert.deepEqual(schema.required, ['approve']);
        assert.equal(elicitationRequests(transport).length, 1);
      });

      await h.check('approve + remember: the same directory is not asked about again', async () => {
        remember = true;
        h.assertOk(await call('write_file', { path: 'notes/a.txt', content: 'a\n' }));
        assert.equal(accepting.asked.length, 2);
        assert.ok(accepting.asked[1].requestedSchema.properties.remember.description
          .includes("write under 'notes/**'"));
        h.assertOk(await call('write_file', { path: 'notes/deeper/b.txt', content: 'b\n' }));
        assert.equal(accepting.asked.length, 2, 'asked again inside a directory allowed for the session');
        assert.equal(fs.readFileSync(path.join(root, 'notes/deeper/b.txt'), 'utf8'), 'b\n');
        remember = false;
      });

      await h.check('accept with approve:false is a refusal', async () => {
        approve = false;
        const r = await call('write_file', { path: 'refused.txt', content: 'no\n' });
        h.assertToolError(r, denied('refused.txt'), 'the user declined');
        assertAbsent(root, 'refused.txt');
        assert.equal(accepting.asked.length, 3);
      });
    });

  // (b) decline and cancel.
  let action = 'decline';
  const declining = eliciting(() => ({ action }));
  await withServer(binary, h, 'ask decline', root, { ruleset: 'default', ...declining.options },
    async (_server, call) => {
      await h.check('decline refuses write_file', async () => {
        const r = await call('write_file', { path: 'declined.txt', content: 'x' });
        h.assertToolError(r, denied('declined.txt'), 'the user declined');
        assertAbsent(root, 'declined.txt');
        assert.equal(declining.asked.length, 1);
        assert.ok(declining.asked[0].message.includes('declined.txt'), declining.asked[0].message);
      });

      await h.check('cancel refuses edit_file and the file is unchanged', async () => {
        action = 'cancel';
        const r = await call('edit_file', { path: 'readme.txt', old_string: 'hello', new_string: 'bye' });
        h.assertToolError(r, "edit for 'readme.txt' needs approval", 'the user declined');
        assert.equal(fs.readFileSync(path.join(root, 'readme.txt'), 'utf8'), 'hello\n');
        assert.equal(declining.asked.length, 2);
        assert.match(declining.asked[1].message, /\bedit\b/);
      });
    });

  // (c) a client without the elicitation capability is never asked.
  await withServer(binary, h, 'ask no-elicitation', root, { ruleset: 'default' },
    async ({ transport }, call) => {
      await h.check('write_file is refused: the client does not support elicitation', async () => {
        const init = transport.sent.find((m) => m.method === 'initialize');
        assert.ok(!('elicitation' in init.params.capabilities), JSON.stringify(init.params.capabilities));
        const r = await call('write_file', { path: 'unasked.txt', content: 'x' });
        h.assertToolError(r, denied('unasked.txt'), 'none was given', 'does not support elicitation');
        assertAbsent(root, 'unasked.txt');
        assert.deepEqual(elicitationRequests(transport), []);
      });
    });

  // ... unless --ask-fallback allow.
  await withServer(binary, h, 'ask fallback', root,
    { ruleset: 'default', extraArgs: ['--ask-fallback', 'allow'] },
    async ({ transport }, call) => {
      await h.check('--ask-fallback allow lets write_file through without asking', async () => {
        const r = await call('write_file', { path: 'fallback.txt', content: 'x' });
        h.assertOk(r);
        assert.equal(fs.readFileSync(path.join(root, 'fallback.txt'), 'utf8'), 'x');
        assert.deepEqual(elicitationRequests(transport), []);
      });
    });

  // (d) a client that never answers.
  const silent = eliciting(() => new Promise(() => {}));
  await withServer(binary, h, 'ask timeout', root,
    { ruleset: 'default', extraArgs: ['--ask-timeout', '1'], ...silent.options },
    async (_server, call) => {
      await h.check('no answer within --ask-timeout 1 refuses write_file', async () => {
        const t0 = Date.now();
        const r = await call('write_file', { path: 'late.txt', content: 'x' });
        const took = Date.now() - t0;
        h.assertToolError(r, denied('late.txt'), 'none was given', 'no answer within 1 s');
        assert.ok(took >= 900 && took < 5000, `the refusal took ${took} ms`);
        assertAbsent(root, 'late.txt');
        assert.equal(silent.asked.length, 1);
      });

      await h.check('the server still answers after the timeout', async () => {
        const r = await call('read_file', { path: 'readme.txt' });
        h.assertOk(r);
        assert.equal(r.structuredContent.content, 'hello\n');
      });
    });

  h.setLabel('ask');
  await h.check('only the approved files and the fallback file were written', async () => {
    assert.deepEqual(fs.readdirSync(root).sort(), ['approved.txt', 'fallback.txt', 'notes', 'readme.txt']);
  });
}
