// An application that uses backyard-mcp as its sandbox service (examples/compose.yaml): it
// holds a token, not the Docker socket, and works in a named session that it leaves and comes
// back to. Prints what it saw as one JSON line and exits 0, or says what went wrong and
// exits 1.
//   BACKYARD_URL=http://backyard:8765/mcp BACKYARD_TOKEN=... node app.mjs

import fs from 'node:fs';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const url = new URL(process.env.BACKYARD_URL);
const token = process.env.BACKYARD_TOKEN;
const session = process.env.BACKYARD_SESSION ?? 'demo';
const auth = { Authorization: `Bearer ${token}` };

// A client on the named session (by the header: the SDK's initialize carries no _meta).
async function open() {
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { ...auth, 'Backyard-Session': session } },
  });
  const client = new Client({ name: 'compose-app', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

async function call(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) throw new Error(`${name}: ${result.content?.[0]?.text}`);
  return result.structuredContent ?? result.content?.[0]?.text;
}

async function main() {
  const seen = { docker_socket: fs.existsSync('/var/run/docker.sock') };
  let client = await open();
  seen.instructions = client.getInstructions?.() ?? '';
  await call(client, 'write_file', { path: 'notes.txt', content: 'kept across connections\n' });
  seen.uname = (await call(client, 'execute', { command: 'id -u; hostname | wc -c' })).stdout;
  await call(client, 'run_python', { code: 'x = 41' });
  await client.close();

  // Back to the same session: its files, and its Python state while its kernel lives.
  client = await open();
  seen.notes = (await call(client, 'read_file', { path: 'notes.txt' })).content;
  seen.python = (await call(client, 'run_python', { code: 'x + 1' })).result;
  await client.close();

  // The stored workspace, read without a session; then purged.
  const api = new URL(`/api/sessions/${session}/read?path=notes.txt`, url);
  seen.stored = await (await fetch(api, { headers: auth })).text();
  const purged = await fetch(new URL(`/api/sessions/${session}`, url), {
    method: 'DELETE',
    headers: auth,
  });
  seen.purged = purged.status;
  console.log(JSON.stringify(seen));
}

main().catch((err) => {
  console.error(`app: ${err.stack ?? err}`);
  process.exit(1);
});
