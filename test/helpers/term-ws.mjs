// term-ws.mjs — terminal clients over WebSocket (npm `ws`) for t0070: binary relay to two clients, and the
// access attacks of another agor user. Prints one JSON object of outcomes; exits non-zero on a surprise.
//   WS_MODULE_DIR=<dir> node term-ws.mjs relay PORT TERMINAL_ID TOKEN
//   WS_MODULE_DIR=<dir> node term-ws.mjs attacks PORT BOB_TOKEN WORKTREE_ID TERMINAL_ID TOKEN OTHER_TOKEN
import { createRequire } from 'node:module';

const WebSocket = createRequire(process.env.WS_MODULE_DIR + '/')('ws');
const fail = (msg) => { console.error(`term-ws: ${msg}`); process.exit(1); };
const [mode, port, ...args] = process.argv.slice(2);
setTimeout(() => fail('timed out'), 30000);

function client(path) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`);
  const c = { ws, seen: '', pending: new Map(), id: 0, events: [] };
  ws.on('message', (m, binary) => {
    if (binary) { c.seen += m.toString('latin1'); return; }
    const r = JSON.parse(m);
    if (r.id !== undefined && c.pending.has(r.id)) c.pending.get(r.id)(r); else c.events.push(r);
  });
  c.call = (method, params = {}) => new Promise((res) => {
    c.pending.set(++c.id, res);
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: c.id, method, params }));
  });
  c.until = (re) => new Promise((res, rej) => {
    const t0 = Date.now();
    const poll = () => re.test(c.seen) ? res(true) : Date.now() - t0 > 15000 ? rej(new Error(`no ${re} in ${JSON.stringify(c.seen)}`)) : setTimeout(poll, 50);
    poll();
  });
  c.opened = new Promise((res, rej) => { ws.once('open', () => res(c)); ws.once('error', rej); });
  return c;
}
const code = (r) => r.error ? r.error.data?.code || r.error.code : 'ok';

if (mode === 'relay') {
  const [tid, token] = args;
  const a = await client('/terminal').opened, b = await client('/terminal').opened;
  const out = {};
  out.a = code(await a.call('terminal.attach', { terminal_id: tid, token }));
  out.b = code(await b.call('terminal.attach', { terminal_id: tid, token }));
  a.ws.send(Buffer.from('echo ws$((6*7))relay\r'));
  await a.until(/ws42relay\r\n/); await b.until(/ws42relay\r\n/);
  out.both_saw_output = true;
  out.resize = code(await b.call('terminal.resize', { cols: 0, rows: 5 }));
  console.log(JSON.stringify(out)); process.exit(0);
} else if (mode === 'attacks') {
  const [bobToken, wt, tid, token, otherToken] = args;
  const out = {};
  const bob = await client('/ws').opened;
  out.bob_auth = code(await bob.call('auth.token', { token: bobToken }));
  out.bob_open_alices_worktree = code(await bob.call('terminal.open', { worktree_id: wt }));
  out.bob_attach_with_alices_token = code(await bob.call('terminal.attach', { terminal_id: tid, token }));
  out.bob_list = (await bob.call('terminal.list')).result;
  out.bob_close = code(await bob.call('terminal.close', { terminal_id: tid }));
  const anon = await client('/terminal').opened;
  out.other_terminals_token = code(await anon.call('terminal.attach', { terminal_id: tid, token: otherToken }));
  out.garbage_token = code(await anon.call('terminal.attach', { terminal_id: tid, token: 'x'.repeat(64) }));
  out.no_such_terminal = code(await anon.call('terminal.attach', { terminal_id: 'nope', token }));
  out.input_unattached = code(await anon.call('terminal.input', { data: 'ZWNobwo=' }));
  out.handover_forged = code(await anon.call('terminal.handover', { session_token: 'a.b.c', window: '@0', pane: '%0' }));
  anon.ws.send(Buffer.from('echo pwned\r'));
  await new Promise((r) => setTimeout(r, 300));
  out.binary_unattached = anon.events.map((e) => e.params?.type);
  console.log(JSON.stringify(out)); process.exit(0);
} else fail(`unknown mode ${mode}`);
