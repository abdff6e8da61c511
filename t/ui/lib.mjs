// t/ui/lib.mjs: what every browser walk of the web UI shares (t/ui/*.mjs,
// run by a t/ui/*.t through SvcUI::run_walk): the TAP-like checks, the
// watch for dialogs, script errors and CSP violations, axe-core, and the
// system chromium. A walk prints one "ok - ..." / "not ok - ..." line per
// check, which its .t turns into assertions, and exits 1 when any failed.
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';

const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export const BASE = process.env.SVC_UI_URL;
export const XSS = '<img src=x onerror=alert(1)>';
export const CSP = "default-src 'self'; base-uri 'none'; object-src 'none'; form-action 'self'; "
                 + "frame-ancestors 'none'";
// What the walk tells its .t afterwards (SVC_UI_RESULT, JSON): a secret in
// it (a share token) is for the .t's own checks, never printed as it is.
export const result = {};
let failed = 0;

// A share token is a live credential: whatever a walk prints (a check, its
// diagnostics, an error naming a portal URL) shows only its prefix.
export function redact(s) {
    return String(s).replace(/svc_shr_[^\s"'`<>\\/?#&]*/g, 'svc_shr_[REDACTED]');
}

export function check(cond, desc, diag) {
    console.log(redact(`${cond ? 'ok' : 'not ok'} - ${desc}`));
    if (!cond) {
        failed++;
        if (diag !== undefined) {
            console.log(redact(`# ${String(typeof diag === 'string' ? diag : JSON.stringify(diag))
                .split('\n').join('\n# ')}`));
        }
    }
    return cond;
}

// What a page did that it must not: dialogs (alert), script errors, CSP
// violations (an inline style or script of ours would be one).
export function watch(page, seen) {
    page.on('dialog', (d) => { seen.dialogs.push(d.message()); d.dismiss().catch(() => {}); });
    page.on('pageerror', (e) => seen.errors.push(String(e)));
    page.on('console', (m) => {
        if (m.type() === 'error' && !/status of 40[149]|Failed to load resource/.test(m.text())) {
            seen.errors.push(m.text());
        }
    });
}

export async function newContext(browser, opts = {}) {
    const ctx = await browser.newContext(opts);
    await ctx.addInitScript(() => {
        window.__csp = [];
        document.addEventListener('securitypolicyviolation',
            (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
    });
    return ctx;
}

// A page in a context of its own, watched; `seen` collects what it did.
export async function watchedPage(ctx) {
    const page = await ctx.newPage();
    page.seen = { dialogs: [], errors: [] };
    watch(page, page.seen);
    page.setDefaultTimeout(30000);
    return page;
}

// axe-core on the page as it is: no serious or critical violation.
export async function axe(page, name) {
    await page.evaluate(AXE);
    const bad = await page.evaluate(async () => {
        const r = await window.axe.run(document, { resultTypes: ['violations'] });
        return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
            .map((v) => `${v.impact} ${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
    });
    check(bad.length === 0, `axe-core: no serious or critical violation on ${name}`, bad.join('\n'));
}

// Nothing of user content ran or became markup, and the page kept its CSP.
export async function clean(page, seen, name) {
    const s = await page.evaluate(() => ({
        pwned: window.__svcPwned, csp: window.__csp || [],
        injected: document.querySelectorAll('img[src="x"], main script, #log *').length,
    }));
    check(seen.dialogs.length === 0, `${name}: no dialog opened`, seen.dialogs);
    check(s.pwned === undefined && s.injected === 0, `${name}: no injected element ran or exists`, s);
    check(s.csp.length === 0, `${name}: no Content-Security-Policy violation`, s.csp);
    check(seen.errors.length === 0, `${name}: no script error`, seen.errors);
}

export async function text(page, sel) {
    return (await page.locator(sel).first().textContent()) ?? '';
}

// Waits for sel; when it never comes, says what the page showed instead.
export async function ready(page, sel) {
    try {
        await page.locator(sel).first().waitFor();
    } catch (e) {
        const shown = await page.evaluate(() => document.getElementById('problem')?.textContent)
            .catch(() => null);
        throw new Error(`${sel} never appeared on ${page.url()}: problem ${JSON.stringify(shown)}, `
                        + `errors ${JSON.stringify(page.seen?.errors)}\n${e.message}`);
    }
}

// The status line (page.js showStatus) matches `re`.
export async function statusIs(page, re) {
    await page.waitForFunction((src) => new RegExp(src).test(document.getElementById('status')
        ?.textContent ?? ''), re.source);
}

// Signs in through the fake code-hosting provider from `path` (a signed-out
// page shows the sign-in link; the provider sends the browser back).
export async function signIn(page, path) {
    await page.goto(`${BASE}${path}`);
    await page.locator('#sign-in').waitFor();
    await page.click('#sign-in');
    await page.waitForURL(`${BASE}${path}`);
    await page.locator('#whoami').waitFor();
}

// Runs `walk(browser)` in the system chromium, then writes the result and
// exits with the walk's verdict; an exception is one failed check.
export async function run(walk) {
    const browser = await chromium.launch({
        executablePath: process.env.SVC_UI_CHROMIUM,
        headless: true,
    });
    try {
        await walk(browser);
    } catch (e) {
        check(false, 'the walk through the UI went to its end', String(e && e.stack || e));
    } finally {
        await browser.close();
        writeFileSync(process.env.SVC_UI_RESULT, JSON.stringify(result));
    }
    process.exit(failed ? 1 : 0);
}
