// web-terminal.mjs — drives the daemon's web terminal page in headless Chromium (npm playwright-core) for t0071:
// two pages on one terminal, typed commands, rendered output, resize, and the user-token form. Prints one JSON
// object of what it saw; exits non-zero (with the screens) on a surprise.
//   PLAYWRIGHT_MODULE_DIR=<dir> node web-terminal.mjs share PORT TERMINAL_ID TOKEN
//   PLAYWRIGHT_MODULE_DIR=<dir> node web-terminal.mjs login PORT WORKTREE USER_TOKEN
import { createRequire } from 'node:module';

const { chromium } = createRequire(process.env.PLAYWRIGHT_MODULE_DIR + '/')('playwright-core');
const [mode, port, ...args] = process.argv.slice(2);
const base = `http://127.0.0.1:${port}`;
const out = {};
let browser;

const fail = async (msg, pages = []) => {
  console.error(`web-terminal: ${msg}`);
  for (const [i, p] of pages.entries()) console.error(`--- page ${i} screen:\n${await screen(p).catch(() => '?')}`);
  console.log(JSON.stringify(out));
  if (browser) await browser.close().catch(() => {});
  process.exit(1);
};
setTimeout(() => fail('timed out'), 90000);

// The text xterm.js rendered (its DOM renderer: one div per row), non-breaking spaces as spaces.
const screen = (page) => page.locator('.xterm-rows').innerText().then((t) => t.replace(/\u00a0/g, ' '));

async function until(page, re, what, pages) {
  const t0 = Date.now();
  for (;;) {
    const text = await screen(page);
    const m = text.match(re);
    if (m) return m;
    if (Date.now() - t0 > 20000) await fail(`${what}: no ${re} on the screen`, pages);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function openPage(url, viewport) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && page.errors.push(m.text()));
  await page.goto(url);
  return page;
}

async function attached(page, pages) {
  try {
    await page.waitForSelector('body[data-state="attached"]', { timeout: 20000 });
  } catch {
    await fail(`not attached: ${await page.locator('#status').innerText()} ${page.errors.join('; ')}`, pages);
  }
}

async function type(page, text) {
  await page.locator('.xterm').click();
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
}

const size = async (page) => (await page.locator('#status').innerText()).match(/\((\d+)x(\d+)\)/).slice(1).map(Number);

const args0 = ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'];
browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: args0 });

if (mode === 'share') {
  const [tid, token] = args;
  const url = `${base}/terminal#terminal=${tid}&token=${token}`;
  const a = await openPage(url, { width: 1000, height: 600 });
  await attached(a, [a]);
  out.a_attached = true;
  out.a_url_after = a.url(); // the token left the address bar
  out.a_title = await a.title();
  const n = 1000 + Math.floor(Math.random() * 30000);
  await type(a, `echo hi-$((${n}+1))`);
  out.a_saw_own_output = (await until(a, new RegExp(`^hi-${n + 1}\\s*$`, 'm'), 'page a', [a]))[0].trim() === `hi-${n + 1}`;

  const b = await openPage(url, { width: 900, height: 500 });
  await attached(b, [a, b]);
  out.b_saw_a_output = !!(await until(b, new RegExp(`^hi-${n + 1}\\s*$`, 'm'), 'page b (screen of a)', [a, b]));
  await type(b, 'echo from-b-$((6*7))');
  out.a_saw_b_output = !!(await until(a, /^from-b-42\s*$/m, 'page a (typed in b)', [a, b]));
  out.b_saw_own_output = !!(await until(b, /^from-b-42\s*$/m, 'page b', [a, b]));

  // resize: a smaller window, xterm.js refits, the page sends terminal.resize, the shell sees the new width
  const [cols0] = await size(b);
  await b.setViewportSize({ width: 560, height: 400 });
  const t0 = Date.now();
  while ((await size(b))[0] === cols0 && Date.now() - t0 < 10000) await new Promise((r) => setTimeout(r, 100));
  const [cols, rows] = await size(b);
  out.resized = cols < cols0;
  await type(b, 'echo cols=$(tput cols)');
  out.tput_cols_matches = !!(await until(b, new RegExp(`^cols=${cols}\\s*$`, 'm'), `page b (tput cols = ${cols})`, [a, b]));
  out.size = `${cols}x${rows}`;
  out.errors = [...a.errors, ...b.errors];
} else if (mode === 'login') {
  const [worktree, userToken] = args;
  const p = await openPage(`${base}/terminal#worktree=${encodeURIComponent(worktree)}`, { width: 800, height: 500 });
  await p.waitForSelector('body[data-state="login"]', { timeout: 20000 });
  out.form_shown = await p.locator('#open').isVisible();
  await p.fill('#user-token', userToken);
  await p.click('button[type="submit"]');
  await attached(p, [p]);
  await type(p, 'echo login-$((2+3))-ok');
  out.login_saw_output = !!(await until(p, /^login-5-ok\s*$/m, 'login page', [p]));
  out.user_token_field_cleared = (await p.inputValue('#user-token')) === '';
  const bad = await openPage(`${base}/terminal#worktree=${encodeURIComponent(worktree)}`, { width: 800, height: 500 });
  await bad.waitForSelector('body[data-state="login"]', { timeout: 20000 });
  await bad.fill('#user-token', 'not-a-token');
  await bad.click('button[type="submit"]');
  await bad.waitForSelector('body[data-state="error"]', { timeout: 20000 });
  out.bad_token_status = await bad.locator('#status').innerText();
  out.errors = p.errors;
} else await fail(`unknown mode ${mode}`);

await browser.close();
console.log(JSON.stringify(out));
process.exit(0);
