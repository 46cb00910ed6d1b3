// terminal.js — the daemon's web terminal (GET /terminal): xterm.js attached to one agor terminal over this
// daemon's WebSocket (GET /terminal with Upgrade): binary frames are bytes both ways, JSON-RPC text frames the rest.
// Never sends a token anywhere but this daemon, never keeps it beyond this tab (sessionStorage), never logs it.
import { Terminal } from './xterm.mjs';
import { FitAddon } from './addon-fit.mjs';

const $ = (id) => document.getElementById(id);
const setState = (state, text, cls) => {
  document.body.dataset.state = state;
  $('status').textContent = text;
  $('status').className = cls || '';
};
const KEY = 'agor-terminal';

// The URL fragment is never sent to a server (nor in a Referer). It is moved into this tab's sessionStorage so
// a reload still attaches while the address bar and the history no longer show the token.
function takeParams() {
  const frag = new URLSearchParams(location.hash.slice(1));
  if (frag.has('terminal') || frag.has('token') || frag.has('worktree')) {
    const p = {};
    for (const k of ['terminal', 'token', 'worktree']) if (frag.get(k)) p[k] = frag.get(k);
    sessionStorage.setItem(KEY, JSON.stringify(p));
    history.replaceState(null, '', location.pathname + location.search);
  }
  try {
    return JSON.parse(sessionStorage.getItem(KEY) || '{}');
  } catch {
    return {};
  }
}

// One WebSocket to this daemon: call() for JSON-RPC, onBytes/onEvent for what the terminal sends.
function connect(handlers) {
  const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/terminal`);
  ws.binaryType = 'arraybuffer';
  const pending = new Map();
  let nextId = 1;
  ws.onmessage = (m) => {
    if (typeof m.data !== 'string') return handlers.onBytes(new Uint8Array(m.data));
    const msg = JSON.parse(m.data);
    if (msg.id !== undefined && pending.has(msg.id)) {
      const { resolve, reject } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) reject(new Error(`${msg.error.data?.code || msg.error.code}: ${msg.error.message}`));
      else resolve(msg.result);
    } else if (msg.method === 'event') handlers.onEvent(msg.params.type, msg.params.data || {});
  };
  ws.onclose = (ev) => {
    for (const { reject } of pending.values()) reject(new Error('connection closed'));
    pending.clear();
    handlers.onClose(ev);
  };
  const call = (method, params) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
  });
  const opened = new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = () => reject(new Error('cannot reach the daemon\'s WebSocket'));
  });
  return { ws, call, opened };
}

// Asks for a worktree and a user token when the fragment named no terminal; resolves {worktree, userToken}.
function askForUserToken(worktree) {
  const form = $('open');
  form.hidden = false;
  if (worktree) $('worktree').value = worktree;
  setState('login', 'no terminal token in the link', '');
  return new Promise((resolve) => {
    form.onsubmit = (ev) => {
      ev.preventDefault();
      form.hidden = true;
      const userToken = $('user-token').value;
      $('user-token').value = '';
      resolve({ worktree: $('worktree').value, userToken });
    };
  });
}

async function main() {
  const params = takeParams();
  const term = new Terminal({ cursorBlink: true, scrollback: 5000, fontFamily: 'monospace' });
  const fit = new FitAddon();
  term.loadAddon(fit);
  let terminalId = params.terminal;
  let token = params.token;
  let login = null;
  if (!terminalId || !/^[0-9a-f]{64}$/.test(token || '')) login = await askForUserToken(params.worktree);

  const encoder = new TextEncoder();
  let attached = false;
  const conn = connect({
    onBytes: (bytes) => term.write(bytes),
    onEvent: (type, data) => {
      if (type === 'terminal.exited' && data.terminal_id === terminalId) setState('exited', `terminal exited: ${data.reason}`, 'error');
      else if (type === 'terminal.error') setState('error', data.message, 'error');
    },
    onClose: () => {
      attached = false;
      if (document.body.dataset.state !== 'exited') setState('closed', 'disconnected from the daemon (reload to attach again)', 'error');
    },
  });
  setState('connecting', 'connecting…');
  await conn.opened;
  term.open($('term'));
  fit.fit();
  if (login) { // a user token: this connection acts as the user, opens (or rejoins) the worktree's terminal
    await conn.call('auth.token', { token: login.userToken });
    const opened = await conn.call('terminal.open', { worktree_id: login.worktree, cols: term.cols, rows: term.rows });
    terminalId = opened.terminal_id;
    token = opened.token;
  }
  try {
    await conn.call('terminal.attach', { terminal_id: terminalId, token });
  } catch (e) {
    sessionStorage.removeItem(KEY); // a refused link is not tried again on reload
    throw e;
  }
  attached = true;
  const resize = () => attached && conn.call('terminal.resize', { cols: term.cols, rows: term.rows }).catch((e) => setState('error', e.message, 'error'));
  term.onData((data) => attached && conn.ws.send(encoder.encode(data)));
  term.onBinary((data) => attached && conn.ws.send(Uint8Array.from(data, (c) => c.charCodeAt(0) & 0xff)));
  term.onResize(resize);
  let pendingFit = 0;
  window.addEventListener('resize', () => {
    clearTimeout(pendingFit);
    pendingFit = setTimeout(() => fit.fit(), 50);
  });
  await resize();
  setState('attached', `attached to terminal ${terminalId} (${term.cols}x${term.rows})`, 'ok');
  term.onResize(({ cols, rows }) => attached && setState('attached', `attached to terminal ${terminalId} (${cols}x${rows})`, 'ok'));
  term.focus();
}

main().catch((e) => setState('error', e.message, 'error'));
