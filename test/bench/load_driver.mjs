// load_driver.mjs — test/bench/load's driver: WebSocket subscribers of every kind, tasks streaming
// report_message over Unix connections, churn; prints the figures. Never fails on time.
// usage: node load_driver.mjs SOCKET WS_URL USER_TOKEN DAEMON_PID PAYLOAD_DIR DURATION_S CLIENTS TASKS RATE TERMINALS
//        WORKTREE_IDS (the terminals' worktrees, comma-separated, one each; TERMINALS 0: none)
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import fs from "node:fs";
import net from "node:net";
const WebSocket = createRequire(process.env.WS_DIR + "/")("ws");
const [sockPath, wsUrl, userToken, daemonPid, payloadDir, durationS, clientsS, tasksS, rateS, terminalsS, worktreeIds] =
  process.argv.slice(2);
const duration = +durationS * 1000, nClients = +clientsS, nTasks = +tasksS, rate = +rateS, nTerminals = +(terminalsS ?? 0);
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- the daemon's figures --------------------------------------------------------------------------------
const rssKiB = () => +fs.readFileSync(`/proc/${daemonPid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)[1];
const fds = () => fs.readdirSync(`/proc/${daemonPid}/fd`).length;

// --- a line-delimited JSON-RPC connection to the Unix socket ---------------------------------------------------
function unixRpc() {
  const s = net.createConnection(sockPath);
  let buf = "", id = 0;
  const waiting = new Map();
  s.setEncoding("utf8");
  s.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const m = JSON.parse(line);
      if (m.id !== undefined && waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); }
    }
  });
  const ready = new Promise((r) => s.on("connect", r));
  return {
    ready, socket: s,
    call(method, params) {
      const my = ++id;
      s.write(JSON.stringify({ jsonrpc: "2.0", id: my, method, params }) + "\n");
      return new Promise((r) => waiting.set(my, r));
    },
    notify(method, params) { s.write(JSON.stringify({ jsonrpc: "2.0", method, params }) + "\n"); },
    close() { s.end(); },
  };
}

// --- tasks: a session each, an executor's payload each, a Unix connection streaming -----------------------------
const admin = unixRpc();
await admin.ready;
const seenPayloads = new Set();
async function payloadFor(taskId) {
  for (let i = 0; i < 400; i++) {
    for (const f of fs.readdirSync(payloadDir)) {
      if (!f.endsWith(".json") || seenPayloads.has(f)) continue;
      const p = JSON.parse(fs.readFileSync(`${payloadDir}/${f}`, "utf8"));
      if (p.params.taskId !== taskId) continue;
      seenPayloads.add(f);
      return { token: p.sessionToken, pid: +f.match(/p\.(\d+)\.json/)[1] };
    }
    await sleep(25);
  }
  throw new Error(`no executor payload for task ${taskId}`);
}
let sent = 0, tasksStarted = 0, tasksEnded = 0;
async function startTask(t) {
  const r = await admin.call("sessions.prompt", { session_id: t.session, prompt: "load", wait: false });
  if (!r.result) return false;
  const taskId = r.result.task_id ?? r.result.taskId ?? r.result.id;
  const p = await payloadFor(taskId);
  t.task = taskId; t.token = p.token; t.pid = p.pid;
  t.conn = unixRpc();
  await t.conn.ready;
  tasksStarted++;
  return true;
}
const tasks = [];
for (let i = 0; i < nTasks; i++) {
  const r = await admin.call("sessions.create", { worktree_id: "w1", tool: "claude-code" });
  if (!r.result) throw new Error("sessions.create: " + JSON.stringify(r));
  const t = { index: i, session: r.result.id, seq: 0 };
  if (!(await startTask(t))) throw new Error("sessions.prompt refused for task " + i);
  tasks.push(t);
}
function stream(t) {
  if (!t.conn) return;
  t.conn.notify("report_message", { session_token: t.token, task_id: t.task, message_type: "assistant",
                                    data: { k: t.index, seq: ++t.seq, t: Math.round(now() * 1000), text: "streamed by the load bench" } });
  sent++;
}
// Ends one task (its executor is killed, as a crash would), then prompts its session again.
async function churnTask() {
  const t = tasks[Math.floor(Math.random() * tasks.length)];
  const conn = t.conn;
  t.conn = null;
  await conn.call("ping", {});
  conn.close();
  try { process.kill(t.pid, "SIGKILL"); } catch {}
  tasksEnded++;
  for (let i = 0; i < 100 && !(await startTask(t)); i++) await sleep(50);
}

// --- terminals: a shell each in the worktree, typed into over its WebSocket and read back ------------------------
// Every 200 ms a terminal types ": Q<uid>x<seq>Z\r"; the echo of that token in its output is timed. A token never
// seen is lost (its bytes are counted); a terminal is closed (detached: its shell lives on in its worktree's tmux
// window) once its tokens came back, and opened again.
const termUrl = wsUrl.replace(/\/ws$/, "/terminal");
let termUid = 0, termOpened = 0, termClosed = 0, termTyped = 0, termTypedBytes = 0, termEchoed = 0;
let termLost = 0, termLostBytes = 0, termErrors = 0, termLostSample = null;
const termLat = [];
async function openTerminal(worktreeId) {
  const r = await admin.call("terminal.open", { worktree_id: worktreeId });
  if (!r.result) throw new Error("terminal.open: " + JSON.stringify(r.error));
  const t = { uid: ++termUid, seq: 0, pending: new Map(), out: "", ws: new WebSocket(termUrl), worktreeId,
              id: r.result.terminal_id };
  await new Promise((res, rej) => { t.ws.once("open", res); t.ws.once("error", rej); });
  t.ws.on("error", () => {});
  const attached = new Promise((res) => t.ws.on("message", (m, binary) => {
    if (!binary) { const j = JSON.parse(m.toString()); if (j.id === 1) res(j); return; }
    t.out += m.toString("latin1");
    for (const [token, at] of t.pending)
      if (t.out.includes(token)) { termLat.push(now() - at); termEchoed++; t.pending.delete(token); }
    if (t.out.length > 8192) t.out = t.out.slice(-512);
  }));
  t.ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "terminal.attach",
                             params: { terminal_id: r.result.terminal_id, token: r.result.token } }));
  const a = await attached;
  if (a.error) throw new Error("terminal.attach: " + JSON.stringify(a.error));
  termOpened++;
  await sleep(500); // the shell's first prompt
  return t;
}
function type(t) {
  if (t.closing) return;
  const token = `Q${t.uid}x${++t.seq}Z`, line = `: ${token}\r`;
  t.pending.set(token, now());
  t.ws.send(Buffer.from(line));
  termTyped++; termTypedBytes += line.length;
}
// Waits (at most 5 s) for t's tokens, counts those that never came back, and detaches.
async function closeTerminal(t) {
  t.closing = true;
  for (let i = 0; i < 100 && t.pending.size; i++) await sleep(50);
  for (const token of t.pending.keys()) { termLost++; termLostBytes += token.length + 3; }
  if (t.pending.size && !termLostSample) // what a terminal that lost lines showed last, to see why
    termLostSample = { waiting: [...t.pending.keys()].slice(0, 3), output: t.out.slice(-300) };
  t.pending.clear();
  t.ws.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "terminal.close", params: { terminal_id: t.id } }));
  await sleep(50);
  t.ws.close();
  termClosed++;
}
const terminalWorktrees = nTerminals ? worktreeIds.split(",") : [];
let terminals = [];
for (const w of terminalWorktrees) terminals.push(await openTerminal(w));

// --- WebSocket clients ----------------------------------------------------------------------------------------
let connects = 0, closes = 0, dropped = 0, open = 0;
const lat = [];
function client(kind) {
  const c = { kind, events: 0, ready: false, closedByUs: false };
  c.ws = new WebSocket(wsUrl);
  connects++;
  c.ws.on("open", () => {
    open++;
    c.ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "auth.token", params: { token: userToken } }));
    c.ws.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "events.subscribe" }));
  });
  c.ws.on("message", (m) => {
    const s = m.toString();
    if (!c.ready) {
      if (s.includes('"id":2')) {
        c.ready = true;
        if (kind === "never") c.ws._socket.pause(); // subscribed, then never reads again
      }
      return;
    }
    if (!s.includes('"type":"message"')) return;
    c.events++;
    if (kind === "timed") lat.push(now() - JSON.parse(s).params.data.data.t / 1000);
  });
  c.ws.on("error", () => {});
  c.ws.on("close", () => {
    open--; closes++;
    if (!c.closedByUs) dropped++;
    c.closed = true;
  });
  return c;
}
async function connectAll(list) {
  for (let i = 0; i < list.length; i += 100) {
    const batch = list.slice(i, i + 100);
    for (let j = 0; j < 100 && !batch.every((c) => c.ready || c.closed); j++) await sleep(50);
  }
}
const nTimed = 20, nSlow = 20, nNever = 20, nChurn = Math.min(100, Math.floor(nClients / 10));
const nSteady = Math.max(0, nClients - nTimed - nSlow - nNever - nChurn);
const steady = [];
for (let i = 0; i < nSteady + nTimed; i++) {
  steady.push(client(i < nTimed ? "timed" : "steady"));
  if (i % 100 === 99) await connectAll(steady.slice(i - 99, i + 1));
}
await connectAll(steady);
let slow = Array.from({ length: nSlow }, () => client("slow"));
let never = Array.from({ length: nNever }, () => client("never"));
let churners = Array.from({ length: nChurn }, () => client("churn"));
await connectAll([...slow, ...never, ...churners]);
await sleep(1000);
const rss0 = rssKiB(), fd0 = fds(), open0 = open;

// --- the run ------------------------------------------------------------------------------------------------
const start = now();
const perTaskMs = (1000 * nTasks) / rate;
const timers = tasks.map((t) => setTimeout(() => { stream(t); t.timer = setInterval(() => stream(t), perTaskMs); },
                                             Math.random() * perTaskMs));
const slowTimer = setInterval(() => { // slow readers: read for 100 ms every 2 s
  for (const c of slow) if (!c.closed) { c.ws._socket.resume(); setTimeout(() => c.ws._socket?.pause(), 100); }
}, 2000);
const churnTimer = setInterval(() => { // churners leave after 1-5 s; never-reading and dropped ones are replaced
  churners = churners.map((c) => {
    if (!c.closed && (!c.since || now() - c.since < 1000 + Math.random() * 4000)) { c.since ??= now(); return c; }
    c.closedByUs = true; c.ws.terminate();
    return client("churn");
  });
  never = never.map((c) => (c.closed ? client("never") : c));
  slow = slow.map((c) => (c.closed ? client("slow") : c));
}, 500);
let taskChurning = false;
const taskChurnTimer = setInterval(async () => {
  if (taskChurning) return;
  taskChurning = true;
  try { await churnTask(); } catch (e) { console.error("task churn:", e.message); }
  taskChurning = false;
}, 5000);
const typeTimer = setInterval(() => { for (const t of terminals) type(t); }, 200);
let termChurning = false;
const termChurnTimer = setInterval(async () => { // one terminal closed, another opened
  if (termChurning || !terminals.length) return;
  termChurning = true;
  try {
    const i = Math.floor(Math.random() * terminals.length), old = terminals[i];
    terminals = terminals.filter((t) => t !== old);
    await closeTerminal(old);
    terminals.push(await openTerminal(old.worktreeId));
  } catch (e) { termErrors++; console.error("terminal churn:", e.message); }
  termChurning = false;
}, 5000);
const samples = [];
const sampleTimer = setInterval(() => samples.push([Math.round((now() - start) / 1000), rssKiB(), fds(), open]), 60000);
await sleep(duration);

// --- stop, let everything arrive, count ----------------------------------------------------------------------
for (const t of tasks) { clearTimeout(timers[t.index]); clearInterval(t.timer); }
clearInterval(churnTimer); clearInterval(taskChurnTimer); clearInterval(slowTimer); clearInterval(sampleTimer);
clearInterval(typeTimer); clearInterval(termChurnTimer);
while (taskChurning || termChurning) await sleep(50);
await Promise.all(terminals.map(closeTerminal));
const elapsed = (now() - start) / 1000;
for (const t of tasks) if (t.conn) await t.conn.call("ping", {});
let last = -1;
for (let i = 0; i < 200; i++) { // until the steady readers' counts stop moving
  const total = steady.reduce((a, c) => a + c.events, 0);
  if (total === last && steady.every((c) => c.events === sent)) break;
  last = total;
  await sleep(100);
}
const rss1 = rssKiB(), fd1 = fds(), open1 = open;
const lost = steady.reduce((a, c) => a + Math.max(0, sent - c.events), 0);
const lostClients = steady.filter((c) => c.events !== sent).length;
lat.sort((a, b) => a - b);
const q = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(lat.length * p))].toFixed(2) : "-");
console.log(`  clients: ${open0} open at the start (${nSteady} steady, ${nTimed} timed, ${nSlow} slow, ${nNever} never reading, ${nChurn} churning), ${open1} at the end; ${connects} connects in all`);
console.log(`  tasks: ${nTasks} streaming, ${tasksEnded} ended by kill -9 and ${tasksStarted - nTasks} started during the run`);
console.log(`  messages: ${sent} sent in ${elapsed.toFixed(0)} s = ${(sent / elapsed).toFixed(0)} msg/s, ${((sent * (nSteady + nTimed)) / elapsed).toFixed(0)} events/s to steady readers`);
console.log(`  event latency report_message → WebSocket (${lat.length} events at ${nTimed} clients): p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${q(1)} ms`);
console.log(`  lost by steady readers: ${lost} messages at ${lostClients} of ${nSteady + nTimed} clients (goal 0)`);
console.log(`  closes the driver saw and did not make: ${dropped} (a paused socket sees none: the daemon's count follows)`);
termLat.sort((a, b) => a - b);
const tq = (p) => (termLat.length ? termLat[Math.min(termLat.length - 1, Math.floor(termLat.length * p))].toFixed(2) : "-");
if (nTerminals)
  console.log(`  terminals: ${nTerminals} typing every 200 ms, ${termOpened} opened and ${termClosed} closed in all (${termErrors} churn errors); ` +
              `${termTyped} lines (${termTypedBytes} bytes) typed, ${termEchoed} echoed: echo latency p50 ${tq(0.5)} ms, p99 ${tq(0.99)} ms, max ${tq(1)} ms; ` +
              `lost ${termLost} lines (${termLostBytes} bytes) (goal 0)`);
if (termLostSample) console.log(`  a terminal that lost lines last showed ${JSON.stringify(termLostSample)}`);
console.log(`  daemon RSS: ${rss0} KiB at the start, ${rss1} KiB at the end; descriptors: ${fd0} at the start, ${fd1} at the end`);
for (const [s, r, f, o] of samples) console.log(`    at ${s} s: RSS ${r} KiB, ${f} descriptors, ${o} clients open`);
process.exit(0);
