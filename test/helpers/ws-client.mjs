// ws-client.mjs — a real third-party client (the npm `ws` package, v8) driving lib/net for t0020-net.sh.
// Never talks to anything but the test server it is given; exits non-zero with a reason on any surprise.
//
//   WS_MODULE_DIR=<dir with node_modules/ws> node ws-client.mjs MODE ARGS…
//   echo URL [--ca F] [--max N]     echo checks: unicode, 7/16/64-bit lengths, fragmented, binary, ping, close code
//   refused URL                     the TLS handshake must fail (unknown CA): prints the error code
//   oversize URL COUNT SIZE         COUNT messages of SIZE bytes (over the limit) on one connection, echo checks between
//   ndjson PATH COUNT SIZE          the same over the Unix socket, one line each
//   garbage HOST PORT COUNT         COUNT connections each sending one malformed thing; the server must close each
//   hold URL                        connect, print "open", wait for the server to close, print the close code
import { createRequire } from 'node:module';
import fs from 'node:fs';
import net from 'node:net';
import crypto from 'node:crypto';

const require = createRequire((process.env.WS_MODULE_DIR || '.') + '/');
const WebSocket = require('ws');

const fail = (msg) => { console.error(`ws-client: ${msg}`); process.exit(1); };
const [mode, ...args] = process.argv.slice(2);
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };

function open(url) {
  const ca = opt('--ca');
  const ws = new WebSocket(url, ca ? { ca: fs.readFileSync(ca) } : {});
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

// Resolves with the next message (data, isBinary).
function next(ws) {
  return new Promise((resolve, reject) => {
    const onMsg = (data, isBinary) => { cleanup(); resolve({ data, isBinary }); };
    const onClose = (code) => { cleanup(); reject(new Error(`closed with ${code} while waiting`)); };
    const cleanup = () => { ws.off('message', onMsg); ws.off('close', onClose); };
    ws.on('message', onMsg);
    ws.on('close', onClose);
  });
}

async function expectEcho(ws, text) {
  ws.send(text);
  const { data, isBinary } = await next(ws);
  if (isBinary || data.toString('utf8') !== text) fail(`echo mismatch for a ${text.length}-char message`);
}

async function echoMode(url) {
  const ws = await open(url);
  await expectEcho(ws, '{"jsonrpc":"2.0","id":1,"method":"ping"}');
  await expectEcho(ws, 'κόσμε — 🚀 naïve');
  const max = +(opt('--max') || Infinity); // the server's --max-message
  for (const n of [125, 126, 65535, 65536, 300000].filter((n) => n <= max)) await expectEcho(ws, 'x'.repeat(n));
  // a fragmented message: three frames, one message
  ws.send('frag', { fin: false });
  ws.send('ment', { fin: false });
  ws.send('ed', { fin: true });
  let m = await next(ws);
  if (m.data.toString() !== 'fragmented') fail('fragmented message not reassembled');
  // binary
  const bin = crypto.randomBytes(Math.min(70000, max));
  ws.send(bin, { binary: true });
  m = await next(ws);
  if (!m.isBinary || Buffer.compare(m.data, bin) !== 0) fail('binary echo mismatch');
  // ping → pong
  await new Promise((resolve) => { ws.once('pong', (d) => { if (d.toString() !== 'hi') fail('pong payload'); resolve(); }); ws.ping('hi'); });
  // close handshake: the server echoes our code
  const code = await new Promise((resolve) => { ws.once('close', (c) => resolve(c)); ws.close(4001, 'bye'); });
  if (code !== 4001) fail(`close code ${code}, expected 4001 echoed`);
  console.log('echo ok');
}

async function refusedMode(url) {
  try {
    const ws = await open(url);
    ws.terminate();
    fail('connected although the CA is unknown');
  } catch (e) {
    console.log(`refused ${e.code || e.message}`);
  }
}

async function oversizeMode(url, count, size) {
  const ws = await open(url);
  const big = 'o'.repeat(size);
  let refusals = 0;
  let onMsg;
  const done = new Promise((resolve) => {
    onMsg = (data) => {
      const s = data.toString();
      if (s === '{"error":"oversize"}') refusals++;
      else if (s !== 'still-here') fail(`unexpected reply ${s.slice(0, 60)}`);
      if (refusals === count) resolve();
    };
    ws.on('message', onMsg);
  });
  for (let i = 0; i < count; i++) {
    ws.send(big);
    if (i % 1000 === 999) ws.send('still-here');
  }
  await done;
  ws.off('message', onMsg);
  await expectEcho(ws, 'after the flood');
  ws.close(1000);
  console.log(`oversize ${refusals}`);
}

async function ndjsonMode(path, count, size) {
  const sock = net.connect(path);
  await new Promise((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); });
  let buf = '', refusals = 0, echoes = 0;
  const done = new Promise((resolve) => {
    sock.on('data', (d) => {
      buf += d.toString();
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line === '{"error":"oversize"}') refusals++;
        else if (line === '{"small":true}') echoes++;
        else fail(`unexpected line ${line.slice(0, 60)}`);
        if (refusals === count && echoes === 1) resolve();
      }
    });
  });
  const big = 'n'.repeat(size) + '\n';
  for (let i = 0; i < count; i++) sock.write(big);
  sock.write('{"small":true}\n');
  await done;
  sock.end();
  console.log(`ndjson ${refusals}`);
}

// One malformed thing per connection; the server must answer with a close (WS) or an HTTP error, then close.
const HANDSHAKE = 'GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
  'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n';
const mask = (payload, opcode, fin = true) => {
  const key = Buffer.from([1, 2, 3, 4]);
  const body = Buffer.from(payload);
  const out = Buffer.alloc(body.length);
  for (let i = 0; i < body.length; i++) out[i] = body[i] ^ key[i & 3];
  return Buffer.concat([Buffer.from([(fin ? 0x80 : 0) | opcode, 0x80 | body.length]), key, out]);
};
const GARBAGE = [
  ['unmasked', Buffer.concat([Buffer.from(HANDSHAKE), Buffer.from([0x81, 0x02, 0x68, 0x69])]), '1002'],
  ['reserved opcode', Buffer.concat([Buffer.from(HANDSHAKE), mask('x', 0x3)]), '1002'],
  ['rsv bits', Buffer.concat([Buffer.from(HANDSHAKE), mask('x', 0x41)]), '1002'],
  ['bad utf-8', Buffer.concat([Buffer.from(HANDSHAKE), mask(Buffer.from([0xc0, 0xaf]), 0x1)]), '1007'],
  ['long ping', Buffer.concat([Buffer.from(HANDSHAKE), Buffer.from([0x89, 0xfe, 0x00, 0x7e, 1, 2, 3, 4]), Buffer.alloc(126)]), '1002'],
  ['orphan continuation', Buffer.concat([Buffer.from(HANDSHAKE), mask('x', 0x0)]), '1002'],
  ['bad http', Buffer.from('GET / HTTP/1.1\r\nHost x\r\n\r\n'), '400'],
  ['binary junk', crypto.randomBytes(512), '400'],
  ['tls hello to plain', Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5]), '400'],
  ['huge header', Buffer.from('GET / HTTP/1.1\r\nX: ' + 'a'.repeat(20000) + '\r\n\r\n'), '431'],
];

function garbageOne(host, port, [name, bytes, expect]) {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    let got = Buffer.alloc(0);
    sock.on('connect', () => sock.write(bytes));
    sock.on('data', (d) => { got = Buffer.concat([got, d]); });
    sock.on('error', () => {}); // a reset after the answer is fine
    sock.on('close', () => {
      const text = got.toString('latin1');
      let code = null;
      const frame = text.indexOf('\r\n\r\n') >= 0 && text.startsWith('HTTP/1.1 101') ? got.subarray(text.indexOf('\r\n\r\n') + 4) : null;
      if (frame && frame.length >= 4 && frame[0] === 0x88) code = String(frame.readUInt16BE(2));
      else if (text.startsWith('HTTP/1.1 ')) code = text.slice(9, 12);
      if (code !== expect) fail(`${name}: got ${code}, expected ${expect}`);
      resolve(name);
    });
    sock.setTimeout(5000, () => { fail(`${name}: the server did not close the connection`); });
  });
}

async function garbageMode(host, port, count) {
  let done = 0;
  const workers = Array.from({ length: 32 }, async (_, w) => {
    for (let i = w; i < count; i += 32) {
      await garbageOne(host, port, GARBAGE[i % GARBAGE.length]);
      done++;
    }
  });
  await Promise.all(workers);
  console.log(`garbage ${done}`);
}

async function holdMode(url) {
  const ws = await open(url);
  console.log('open');
  const code = await new Promise((resolve) => ws.once('close', (c) => resolve(c)));
  console.log(`closed ${code}`);
}

const modes = {
  echo: () => echoMode(args[0]),
  refused: () => refusedMode(args[0]),
  oversize: () => oversizeMode(args[0], +args[1], +args[2]),
  ndjson: () => ndjsonMode(args[0], +args[1], +args[2]),
  garbage: () => garbageMode(args[0], +args[1], +args[2]),
  hold: () => holdMode(args[0]),
};
if (!modes[mode]) fail(`unknown mode ${mode}`);
modes[mode]().catch((e) => fail(e.stack || e.message));
